"""Parity of `moex generate --spec mtp` with the MLX MTP oracle (mtp_module.py) on a tiny
synthetic checkpoint with a random MTP layer: speculation leaves the greedy tokens unchanged,
and every MTP draft row moex computes matches the oracle's logits of that row.

    mtp_parity_test.py MOEX_EXE WORKDIR --preset tiny-glm4-moe [--tol 1e-3] [--oracle-only]
    mtp_parity_test.py MOEX_EXE WORKDIR --preset tiny-glm4-moe --convert   (moex convert --keep-mtp)
    mtp_parity_test.py MOEX_EXE WORKDIR --preset tiny-qwen3-next --hf-layout (the Hub's layout)
    mtp_parity_test.py MOEX_EXE WORKDIR --model DIR [--prompt-ids 1,2,3] [--tol 1e-3]

--model runs the same checks on a checkpoint that has its MTP layer (e.g. the glm4_moe fixture
of train_fixture.py --mtp, whose drafts are accepted, unlike a random module's), unchanged.

Steps: `moex make-model --preset P --dtype f32`, add_random_mtp, the oracle's self-checks (two
runs bit-identical; the KV-cached forward in several chunk schedules equals the one-call forward;
the logits depend on both halves of eh_proj's input; the main model is what mlx-lm loads from
the checkpoint without MTP), then three moex runs of PROMPT + 24 greedy tokens: plain (logits
dumped), --spec mtp --spec-draft 1 (draft logits dumped), --spec mtp --spec-draft 3.
Exit 0: parity; 1: mismatch; 2: moex failed; 77: mlx-lm is unavailable.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import mlx.core as mx
    import numpy as np
    from mlx_lm.utils import load_model
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import mtp_module
except ImportError as e:
    print(f"mtp_parity: cannot import mlx-lm: {e}")
    sys.exit(77)

# A fixed prompt of 40 ids below the tiny presets' vocabulary (1024).
PROMPT = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 383, 279, 502, 88, 419, 716, 939,
          937, 510, 582, 97, 494, 459, 230, 781, 640, 628, 620, 899, 862, 803, 482, 534, 211,
          706, 798, 214]
STEPS = 24
# moex's draft logits against the oracle, exact tier: measured 1.4e-6 (tiny-glm4-moe), 1.6e-6
# (tiny-deepseek-v3), 7.6e-7 (the bf16 glm4_moe fixture); the main logits 5e-7..2.2e-6. The
# default --tol 1e-4 keeps 60x of margin and fails an MTP attention that ignores its cache
# (2.8e-3..5.7e-3 in the oracle).
CACHE_TOL = 1e-6  # nrms of cached vs one-call oracle rows (measured <= 6.1e-8, deepseek_v3)


def schedules(rows, prefill):
    """Chunk schedules of the cached oracle: row counts run one after another."""
    steps, left = [], rows - prefill
    while left > 0:
        steps.append(min(left, 2 + 2 * (len(steps) % 2)))
        left -= steps[-1]
    return {"one row at a time": [1] * rows,
            f"prefill {prefill} then 1s": [prefill] + [1] * (rows - prefill),
            f"prefill {prefill} then 2s and 4s": [prefill] + steps}


def nrms(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return math.sqrt(float(np.mean((a - b) ** 2))) / (math.sqrt(float(np.mean(b * b))) or 1.0)


def moex(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"mtp_parity: moex failed ({r.returncode}) in {what}: {' '.join(cmd)}\n{r.stderr}")
        sys.exit(2)
    return r


def generated_ids(stdout):
    """The ids `moex generate --prompt-ids` prints: the last non-empty stdout line."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    return [int(x) for x in lines[-1].split()] if lines else []


def main_logits(model, ids):
    out = model(mx.array(ids)[None])[0].astype(mx.float32)
    mx.eval(out)
    return np.array(out)


def oracle_checks(model_dir, ids, base_main, prefill):
    """The oracle's own checks; returns (oracle logits [T-1, V], failures)."""
    bad = []
    main, layer, _ = mtp_module.load(model_dir)
    if not np.array_equal(main_logits(main, ids), base_main):
        bad.append("the oracle's main model differs from mlx-lm's load of the checkpoint "
                   "without MTP tensors")
    full = np.array(mtp_module.mtp_logits(main, layer, ids))
    again = mtp_module.oracle_logits(model_dir, ids)
    print(f"oracle: {full.shape[0]} rows; a second run (fresh load) differs by max "
          f"{np.abs(full - again).max():.3e}")
    if not np.array_equal(full, again):
        bad.append("two oracle runs differ")
    for name, chunks in schedules(len(ids) - 1, prefill).items():
        got = np.array(mtp_module.mtp_logits(main, layer, ids, chunks))
        e = nrms(got, full)
        same = bool((got.argmax(-1) == full.argmax(-1)).all())
        print(f"oracle: KV-cached, {name}: nrms {e:.3e} against one call, argmax "
              f"{'same' if same else 'DIFFERS'}")
        if not (e < CACHE_TOL and same):
            bad.append(f"cached oracle ({name}) differs from the one-call forward: nrms {e:.3e}")
    # Both halves of eh_proj's input must count: zeroing either changes the logits.
    embed, head = mtp_module.embed_and_head(main, layer)
    x = mx.array(ids)[None]
    hidden = mtp_module.main_hidden(main, x)[:, :-1]
    emb = mtp_module.next_embeddings(embed, x[:, 1:], 0, mtp_module.zero_first(layer))
    mask = mtp_module.create_attention_mask(emb, None, return_array=True)
    for name, (e_in, h_in) in {"embedding": (mx.zeros_like(emb), hidden),
                               "hidden state": (emb, mx.zeros_like(hidden))}.items():
        e = nrms(np.array(layer.predict(e_in, h_in, mask, None, head)[0]), full)
        print(f"oracle: {name} half zeroed: nrms {e:.3e} against the full input")
        if not e > 1e-2:
            bad.append(f"the MTP logits do not depend on the {name}")
    return full, bad


def check_drafts(path, vocab, ref, tol):
    """Records of --dump-draft-logits (int64 LE row p, then vocab float32) against ref[p]."""
    rec = np.dtype([("p", "<i8"), ("logits", "<f4", (vocab,))])
    data = np.fromfile(path, dtype=np.uint8)
    if data.size % rec.itemsize:
        return 0, [f"{path}: {data.size} bytes, not a whole number of {rec.itemsize}-byte records"]
    recs = data.view(rec)
    bad, worst = [], 0.0
    for r in recs:
        p = int(r["p"])
        if not 0 <= p < ref.shape[0]:
            bad.append(f"draft row {p} outside 0..{ref.shape[0] - 1}")
            continue
        e = nrms(r["logits"], ref[p])
        worst = max(worst, e)
        if not e < tol:
            bad.append(f"draft row {p}: nrms {e:.3e} >= {tol}")
        if int(np.argmax(r["logits"])) != int(np.argmax(ref[p])):
            bad.append(f"draft row {p}: argmax {int(np.argmax(r['logits']))}, oracle "
                       f"{int(np.argmax(ref[p]))}")
    rows = sorted({int(p) for p in recs["p"]})
    print(f"drafts: {len(recs)} records, rows {rows[:8]}{' ...' if len(rows) > 8 else ''}, "
          f"worst nrms {worst:.3e} (tol {tol})")
    if len(recs) < 10:
        bad.append(f"only {len(recs)} draft records (at least 10 expected)")
    return len(recs), bad


def run(argv):
    ap = argparse.ArgumentParser(prog="mtp_parity_test.py")
    ap.add_argument("moex")
    ap.add_argument("work")
    ap.add_argument("--preset", help="tiny-glm4-moe or tiny-deepseek-v3")
    ap.add_argument("--model", help="a checkpoint with an MTP layer, instead of --preset")
    ap.add_argument("--prompt-ids", default=",".join(map(str, PROMPT)))
    ap.add_argument("--tol", type=float, default=1e-4, help="nrms of moex's draft logits")
    ap.add_argument("--seed", type=int, default=7, help="seed of the random MTP tensors")
    ap.add_argument("--oracle-only", action="store_true", help="the oracle's checks, no moex")
    ap.add_argument("--hf-layout", action="store_true",
                    help="with --preset tiny-qwen3-next: a float checkpoint and module, moex "
                         "reading them in the Hub's layout (per-expert tensors, zero-centred "
                         "norms, to_hub_layout); the oracle reads the MLX layout they came from")
    ap.add_argument("--convert", action="store_true",
                    help="with --preset: a float checkpoint and module, then `moex convert -q "
                         "--keep-mtp`; the checks run on the converted (4-bit) checkpoint")
    a = ap.parse_args(argv)
    if bool(a.preset) == bool(a.model):
        ap.error("give one of --preset and --model")
    os.makedirs(a.work, exist_ok=True)
    prompt = [int(x) for x in a.prompt_ids.split(",")]
    if a.model:
        model_dir, name = a.model, os.path.basename(os.path.normpath(a.model))
        moex_dir = model_dir
        base = mtp_module.load(model_dir)[0]
    else:
        model_dir, name = os.path.join(os.path.abspath(a.work), a.preset), a.preset
        shutil.rmtree(model_dir, ignore_errors=True)
        float_args = ["--bits", "0"] if a.convert or a.hf_layout else []
        moex([a.moex, "make-model", "--preset", a.preset, "--dtype", "f32", "--out", model_dir,
              "-q"] + float_args, "make-model")
        n_new = len(mtp_module.add_random_mtp(model_dir, a.seed))
        print(f"{a.preset}: {n_new} MTP tensors added ({mtp_module.MTP_FILE})")
        if a.convert:
            # The converted checkpoint keeps the module, quantized by the same recipe.
            converted = model_dir + "-q4-keep-mtp"
            shutil.rmtree(converted, ignore_errors=True)
            moex([a.moex, "convert", model_dir, "--out", converted, "-q", "--keep-mtp",
                  "--quiet"], "convert --keep-mtp")
            model_dir, name = converted, os.path.basename(converted)
        if a.hf_layout:
            hub = model_dir + "-hub"
            to_hub_layout(model_dir, hub)
            moex_dir, name = hub, os.path.basename(hub)
        else:
            moex_dir = model_dir
        base = mtp_module.load(model_dir)[0]  # mlx-lm's main model, the module dropped
    ids_arg = a.prompt_ids
    if a.oracle_only:
        ids = prompt + [int(x) for x in np.random.default_rng(a.seed).integers(0, 1000, STEPS)]
        _, bad = oracle_checks(model_dir, ids, main_logits(base, ids), len(prompt))
    else:
        # The exact precision tier whatever the default: the tolerance is set from its error.
        common = [a.moex, "generate", "-m", moex_dir, "--prompt-ids", ids_arg, "-n", str(STEPS),
                  "--ignore-eos", "--precision", "exact"]
        plain_bin = os.path.join(a.work, f"{name}.plain.bin")
        r = moex(common + ["--dump-logits", plain_bin], "the plain run")
        meta = json.load(open(plain_bin + ".json"))
        plain = meta["generated_ids"]
        ids = meta["prompt_ids"] + plain
        bad = [] if generated_ids(r.stdout) == plain else ["plain run: stdout ids differ from "
                                                           "--dump-logits' generated_ids"]
        ref, obad = oracle_checks(model_dir, ids, main_logits(base, ids), len(prompt))
        bad += obad
        # The main model's logits of the plain run, against mlx-lm (the MTP input's source).
        got = np.fromfile(plain_bin, dtype=np.float32).reshape(-1, meta["vocab"])
        want = main_logits(base, ids)[len(prompt) - 1:][:got.shape[0]]
        e = max(nrms(g, w) for g, w in zip(got, want))
        print(f"plain: {len(plain)} tokens, main logits worst nrms {e:.3e} against mlx-lm")
        if not e < a.tol:
            bad.append(f"plain run: main logits nrms {e:.3e} >= {a.tol}")
        drafts = os.path.join(a.work, f"{name}.drafts.bin")
        for k in (1, 3):
            extra = ["--spec", "mtp", "--spec-draft", str(k)]
            if k == 1:
                extra += ["--dump-draft-logits", drafts]
            r = moex(common + extra, f"--spec mtp --spec-draft {k}")
            toks = generated_ids(r.stdout)
            stats = [l for l in r.stderr.splitlines() if l.startswith("speculative")]
            print(f"spec mtp draft {k}: tokens {'identical' if toks == plain else 'DIFFER'}; "
                  f"{stats[0] if stats else 'no speculative line'}")
            if toks != plain:
                first = next((i for i, (x, y) in enumerate(zip(toks, plain)) if x != y),
                             min(len(toks), len(plain)))
                bad.append(f"--spec-draft {k}: tokens differ from step {first}: "
                           f"{toks[first:first + 5]} vs plain {plain[first:first + 5]}")
        _, dbad = check_drafts(drafts, meta["vocab"], ref, a.tol)
        bad += dbad
    return report(f"mtp_parity {name}", bad)


# The decoder norms Qwen3-Next's Hub checkpoints store zero-centred (w - 1; mlx-lm's sanitize and
# moex add the 1 back), and the module's, which vLLM's Qwen3NextRMSNorm reads the same way.
ZERO_CENTRED = (".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight",
                ".q_norm.weight", ".k_norm.weight", "mtp.norm.weight",
                "mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight")


def to_hub_layout(mlx_dir, hub_dir):
    """A copy of a float qwen3_next checkpoint in the Hub's layout: every stacked expert tensor
    (the main layers' and the module's) split per expert (mlp.experts.E.{gate,up,down}_proj),
    the Gated DeltaNet conv in PyTorch's layout [C, 1, K], the norms zero-centred, two shards
    and an index. w - 1 is exact in float32 for the norms' values (0.5..2), so the 1 added
    back gives the oracle's weights bit for bit."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "model", "engine", "reference"))
    import parity
    config = json.load(open(os.path.join(mlx_dir, "config.json")))
    if config["model_type"] != "qwen3_next" or "quantization" in config:
        print("mtp_parity: --hf-layout is for float qwen3_next checkpoints")
        sys.exit(2)
    out, norms = {}, []
    for k, v in mtp_module.read_tensors(mlx_dir).items():
        if ".mlp.switch_mlp." in k:
            pre, rest = k.split(".mlp.switch_mlp.")
            for e in range(v.shape[0]):
                out[f"{pre}.mlp.experts.{e}.{rest}"] = v[e]
        elif k.endswith("linear_attn.conv1d.weight") and v.ndim == 3 and v.shape[-1] == 1:
            out[k] = v.swapaxes(1, 2)
        elif k.endswith(ZERO_CENTRED):
            out[k] = v - 1.0
            norms.append(v)
        else:
            out[k] = v
    lo, hi = min(float(v.min()) for v in norms), max(float(v.max()) for v in norms)
    if not (0.5 <= lo and hi <= 2.0):
        print(f"mtp_parity: norm weights outside 0.5..2 ({lo:.3f}..{hi:.3f}): w - 1 would round")
        sys.exit(2)
    mx.eval(list(out.values()))
    shutil.rmtree(hub_dir, ignore_errors=True)
    os.makedirs(hub_dir)
    for f in os.listdir(mlx_dir):
        if not f.endswith(".safetensors") and f != "model.safetensors.index.json":
            shutil.copy(os.path.join(mlx_dir, f), hub_dir)
    parity.write_two_shards(hub_dir, out)
    print(f"{os.path.basename(hub_dir)}: the Hub's layout, {len(norms)} norms zero-centred")


def report(what, bad):
    """Prints each failure and the verdict; the exit status."""
    for b in bad:
        print("  FAIL " + b)
    print(f"{what}: {'FAIL' if bad else 'ok'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
