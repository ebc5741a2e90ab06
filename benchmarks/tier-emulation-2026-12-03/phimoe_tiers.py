#!/usr/bin/env python3
"""The standard tier on a converted Phi-3.5-MoE checkpoint, studied on an AVX2 host by emulation.

Builds tiny-phimoe as a float Hugging Face directory, converts it with `mlx_lm convert -q`
(4-bit, group 64), runs mlx-lm in float32 on a long prompt plus greedy steps (the reference),
then moex with MOEX_EXPERIMENT_X_LEVELS / MOEX_EXPERIMENT_X_NOISE (branch tier-emulation):
  exact        x in f32 (what every tier runs on AVX2; the exact tier on AVX-512 is within 2^-24)
  emu-standard x rounded as the VNNI standard tier rounds it (2 levels)
  emu-fast     x rounded as the fast tier (1 level)
  noise-std    x plus uniform noise of the standard tier's bound (no rounding bias)
  noise-fast   x plus uniform noise of the fast tier's bound
Prints per-step logits nRMS against the reference for each arm.
usage: phimoe_tiers.py MOEX WORKDIR [--preset tiny-phimoe] [--prompt-len 341] [--steps 8]
"""
import argparse, json, os, shutil, subprocess, sys, tempfile
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../src/model/engine/reference"))
from parity import mlx_run, nrms, to_hf_layout  # noqa: E402

ARMS = [("exact", {}), ("emu-standard", {"MOEX_EXPERIMENT_X_LEVELS": "2"}),
        ("emu-fast", {"MOEX_EXPERIMENT_X_LEVELS": "1"}),
        ("noise-std", {"MOEX_EXPERIMENT_X_NOISE": "2"}),
        ("noise-fast", {"MOEX_EXPERIMENT_X_NOISE": "1"})]


def moex_logits(moex, model, ids, steps, env):
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "l.bin")
        cmd = [moex, "generate", "-m", model, "--prompt-ids", ",".join(map(str, ids)), "-n",
               str(steps + 1), "--ignore-eos", "--dump-logits", dump]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
        if r.returncode:
            sys.exit(f"moex failed: {r.stderr}")
        meta = json.load(open(dump + ".json"))
        return np.fromfile(dump, dtype=np.float32).reshape(-1, meta["vocab"]), meta["generated_ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("work")
    ap.add_argument("--preset", default="tiny-phimoe")
    ap.add_argument("--prompt-len", type=int, default=341)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--q", default="--q-bits 4 --q-group-size 64")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=0, help="make-model --layers (0: the preset's)")
    a = ap.parse_args()
    tag = a.preset + (f"-L{a.layers}" if a.layers else "")
    flt, model = os.path.join(a.work, tag + "-float"), os.path.join(a.work, tag + "-q")
    if not os.path.isdir(model):
        for d in (flt, model):
            shutil.rmtree(d, ignore_errors=True)
        subprocess.run([a.moex, "make-model", "--preset", a.preset, "--dtype", "f32", "--bits",
                        "0", "--out", flt, "-q"] + (["--layers", str(a.layers)] if a.layers else []),
                       check=True)
        to_hf_layout(flt)
        subprocess.run([sys.executable, "-m", "mlx_lm", "convert", "--hf-path", flt,
                        "--mlx-path", model, "-q"] + a.q.split(), check=True,
                       capture_output=True)
    vocab = json.load(open(os.path.join(model, "config.json")))["vocab_size"]
    rng = np.random.default_rng(a.seed)
    ids = [int(t) for t in rng.integers(3, vocab, a.prompt_len)]
    ref, ref_toks = mlx_run(model, ids, a.steps, True)
    print(f"{tag} {a.q} prompt {a.prompt_len} tokens, {a.steps} steps; nRMS per step vs "
          f"mlx-lm f32")
    for name, env in ARMS:
        got, toks = moex_logits(a.moex, model, ids, a.steps, env)
        errs = [nrms(got[s], ref[s]) for s in range(min(len(got), len(ref)))]
        same = "tokens identical" if toks == ref_toks else "tokens DIFFER"
        print(f"  {name:13s} " + " ".join(f"{e:.1e}" for e in errs) + f"  ({same})")


if __name__ == "__main__":
    main()
