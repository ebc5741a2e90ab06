#!/usr/bin/env python3
"""Every family at every precision tier on short and long prompts, against mlx-lm in float32.

For each tiny family preset (4-bit, group 64, float32 scales and norms, so mlx-lm computes in
float32) and each prompt length: mlx-lm decodes a seeded random prompt greedily for --steps
tokens (the reference, parity.py's mlx_run); moex decodes the same prompt at each tier. Per
run it reports the logits normalized RMS at the last prompt position and the worst over the
decoded steps before the first token that differs from the reference, and whether the greedy
tokens are identical.

The gates (src/kernels/README.md, "Precision tiers", measured on an AVX-512 VNNI host):
  exact      every step within --exact-tol of float32, greedy tokens identical;
  standard   every step within --standard-tol, greedy tokens identical;
  fast       the last prompt position within --fast-tol (its greedy tokens may differ:
             that is the tier's stated cost, recorded, not gated).
Without AVX-512 VNNI every tier runs the float32 kernels, so every tier must meet the exact
gate: a tier that leaks into the float32 path fails there.

usage: tier_matrix.py MOEX WORKDIR [--presets tiny-a,tiny-b] [--lengths 8,512,2048]
                      [--steps 4] [--out FILE.json]
Exit 0: every gate held; 1: a gate failed; 2: moex failed; 77: mlx-lm unavailable.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from parity import (dequantize_modules, errors_until_divergence, moex_dump_logits,  # noqa: E402
                        mlx_run)  # (parity.py's reference and moex run)
except ImportError as e:
    print(f"tier_matrix: cannot import mlx-lm: {e}")
    sys.exit(77)

TIERS = ("exact", "standard", "fast")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"tier_matrix: failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
        sys.exit(2)
    return r


def host_has_integer_tiers(moex, model):
    """Whether moex runs integer kernels for these 4-bit checkpoints on this host (AVX-512 VNNI,
    or AVX2's 4-bit ones), where the tiers differ; the scalar kernels keep x in float32."""
    r = run([moex, "inspect", model])
    return any(f"cpu kernels: isa {isa}" in r.stdout for isa in ("avx512", "avx2"))


def compare(got, toks, ref, ref_toks):
    errs, same = errors_until_divergence(got, toks, ref, ref_toks)
    return {"prompt_end": errs[0], "worst": max(errs), "tokens_identical": same,
            "steps_compared": len(errs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("workdir")
    ap.add_argument("--presets", default=None, help="comma-separated (default: every family's"
                    " tiny preset, make-model --list-presets --json)")
    ap.add_argument("--models", default=None, help="comma-separated checkpoint directories to"
                    " run instead of presets (e.g. what `mlx_lm convert -q` wrote)")
    ap.add_argument("--layers", type=int, default=None, help="make-model --layers (a full-size"
                    " preset cut to N layers, e.g. phi-3.5-moe)")
    ap.add_argument("--dequantize", default=None, metavar="REGEX", help="after make-model,"
                    " store the modules matching REGEX as float (parity.py --dequantize; Ling's"
                    " lm_head, which mlx-lm 0.32.2 would re-normalize when quantized)")
    ap.add_argument("--lengths", default="8,512,2048")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--exact-tol", type=float, default=1e-5)
    ap.add_argument("--standard-tol", type=float, default=4e-3)
    ap.add_argument("--fast-tol", type=float, default=0.5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.models:
        presets = a.models.split(",")
    elif a.presets:
        presets = a.presets.split(",")
    else:
        listed = json.loads(run([a.moex, "make-model", "--list-presets", "--json"]).stdout)
        presets = [p["name"] for p in listed if p["tiny"] and p["family_test"]]
    lengths = [int(x) for x in a.lengths.split(",")]
    os.makedirs(a.workdir, exist_ok=True)
    rows, failures, tiers_differ = [], [], None
    for preset in presets:
        model = os.path.join(a.workdir, preset + (f"-L{a.layers}" if a.layers else ""))
        if a.models:
            model = preset
        else:
            if a.dequantize and os.path.isdir(model):
                shutil.rmtree(model)  # rewritten whole: --reuse would keep a dequantized one
            run([a.moex, "make-model", "--preset", preset, "--dtype", "f32", "--bits", "4",
                 "--group-size", "64", "--out", model, "--reuse", "-q"]
                + (["--layers", str(a.layers)] if a.layers else []))
            if a.dequantize:
                dequantize_modules(model, a.dequantize)
        if tiers_differ is None:
            tiers_differ = host_has_integer_tiers(a.moex, model)
            print(f"tier_matrix: {'integer kernels (AVX-512 VNNI or AVX2): the tiers differ' if tiers_differ else 'scalar kernels: every tier runs float32 and must meet the exact gate'}",
                  flush=True)
        config = json.load(open(os.path.join(model, "config.json")))
        vocab = config.get("vocab_size") or config["text_config"]["vocab_size"]
        for length in lengths:
            rng = np.random.default_rng(length * 7919 + len(preset))
            ids = [int(x) for x in rng.integers(3, vocab, size=length)]
            ref, ref_toks = mlx_run(model, ids, a.steps, True)  # float32 compute
            row = {"preset": preset, "prompt": length}
            for tier in TIERS:
                got, toks, _ = moex_dump_logits(a.moex, model, ",".join(map(str, ids)), a.steps,
                                                ["--precision", tier])
                r = compare(got, toks, ref, ref_toks)
                row[tier] = r
                gate_tier = tier if tiers_differ else "exact"
                if gate_tier == "exact":
                    ok = r["worst"] <= a.exact_tol and r["tokens_identical"]
                elif gate_tier == "standard":
                    ok = r["worst"] <= a.standard_tol and r["tokens_identical"]
                else:
                    ok = r["prompt_end"] <= a.fast_tol
                if not ok:
                    failures.append(f"{preset} prompt {length} {tier}: {r}")
            rows.append(row)
            print(f"{preset:22s} {length:5d}  " + "  ".join(
                f"{t} {row[t]['prompt_end']:.1e}/{row[t]['worst']:.1e}"
                f"{'' if row[t]['tokens_identical'] else '*'}" for t in TIERS), flush=True)
    print("(last prompt position / worst step before the first differing token;"
          " * greedy tokens differ from mlx-lm float32)")
    if a.out:
        with open(a.out + ".tmp", "w") as f:
            json.dump({"tiers_differ": tiers_differ, "rows": rows}, f, indent=1)
        os.replace(a.out + ".tmp", a.out)
    for f in failures:
        print(f"tier_matrix: FAILED {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
