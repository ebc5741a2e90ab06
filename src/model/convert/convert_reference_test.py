# `moex convert` against `mlx_lm convert` (mlx-lm 0.32.2) on every family's tiny Hugging Face
# checkpoint (hf_config_parity_test.py's: each hf_configs/<name>.json shrunk, random f32
# weights under the Hub's tensor names) and several recipes: every tensor equal bit for bit
# (names, dtypes, shapes, bytes), config.json equal (parsed), the index's metadata and weight
# map equal; then moex generates one token from each of its outputs.
# Usage: convert_reference_test.py MOEX_EXE WORK_DIR [--only NAME[,NAME]] [--recipes N,...]
# Exit 0: all compared equal; 1: a difference or a failure; 77: mlx-lm missing.
import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "engine", "reference")
sys.path.insert(0, REF)
try:
    import mlx_lm.utils
    from mlx_lm.convert import convert as mlx_convert
    import hf_config_parity_test as hf  # exits 77 itself when mlx-lm is missing
except ImportError as e:
    print(f"convert_reference: cannot import mlx-lm: {e}")
    sys.exit(77)

# name -> (moex flags, mlx_lm convert keyword arguments); the same recipe on both sides.
RECIPES = {
    "float": ([], {}),
    "f16": (["--dtype", "float16"], {"dtype": "float16"}),
    "q4g64": (["-q"], {"quantize": True}),
    "q8g32": (["-q", "--q-bits", "8", "--q-group-size", "32"],
              {"quantize": True, "q_bits": 8, "q_group_size": 32}),
    "mxfp4": (["-q", "--q-mode", "mxfp4"], {"quantize": True, "q_mode": "mxfp4"}),
    "nvfp4": (["-q", "--q-mode", "nvfp4"], {"quantize": True, "q_mode": "nvfp4"}),
    # --q-group-size given: without it mlx-lm 0.32.2 writes "group_size": null into each mixed
    # module's entry (its builder receives None); moex writes the 64 both quantize with.
    "mixed_3_6": (["-q", "--quant-predicate", "mixed_3_6", "--q-group-size", "64"],
                  {"quantize": True, "quant_predicate": "mixed_3_6", "q_group_size": 64}),
}
DEFAULT_RECIPES = "float,f16,q4g64,q8g32,mxfp4,nvfp4,mixed_3_6"

# Variants of a fixture with config fields changed: name -> (fixture, fields). Ling-lite-1.5
# writes norm_head false; true makes mlx-lm's sanitize normalize the head's columns.
VARIANTS = {"bailing_moe_norm_head": ("bailing_moe", {"norm_head": True})}

# Fixtures that cannot run, with the reason (printed as SKIP, never passed).
SKIPS = {}

# Model types whose tokenizer transformers cannot load here (kimi_k2: transformers 5.25 has no
# config class for it; mixtral: through mistral_common when that does not import), which stops
# mlx_lm convert before it reads a weight. For these its tokenizer is loaded from the synthetic
# tokenizer's own directory (a qwen3_moe config) instead: the tokenizer files are not compared,
# and the weights, config.json and index go through mlx-lm unchanged.
TOKENIZER_ELSEWHERE = {"kimi_k2", "mixtral"}

# (fixture, recipe) whose output moex refuses to run, with the reason: the converted files are
# still compared, and the refusal must name the reason's words.
LOAD_REFUSALS = {
    (n, r): ("quant_method 'fp8'", "without -q, mlx_lm convert keeps the input's fp8 "
                   "quantization_config (the Hub file's, over the fixture's float weights) and "
                   "moex refuses fp8 configs by design (docs/families.md)")
    for n in ("deepseek_v3", "kimi_k2", "minimax_m2") for r in ("float", "f16")
}


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} of one file, read from its header (no conversion)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items()}


def read_dir(d):
    tensors = {}
    for p in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        tensors.update(read_safetensors(p))
    return tensors


def compare_dirs(ours, ref):
    """A list of differences (empty: identical tensors, config and index)."""
    diffs = []
    a, b = read_dir(ours), read_dir(ref)
    for n in sorted(set(a) | set(b)):
        if n not in a:
            diffs.append(f"missing tensor {n} ({b[n][0]} {b[n][1]})")
        elif n not in b:
            diffs.append(f"extra tensor {n} ({a[n][0]} {a[n][1]})")
        elif a[n][:2] != b[n][:2]:
            diffs.append(f"tensor {n}: {a[n][0]} {a[n][1]}, mlx-lm {b[n][0]} {b[n][1]}")
        elif a[n][2] != b[n][2]:
            same = sum(x == y for x, y in zip(a[n][2], b[n][2]))
            diffs.append(f"tensor {n}: bytes differ ({len(a[n][2]) - same} of {len(a[n][2])})")
    ca = json.load(open(os.path.join(ours, "config.json")))
    cb = json.load(open(os.path.join(ref, "config.json")))
    for k in sorted(set(ca) | set(cb)):
        if ca.get(k, "<absent>") != cb.get(k, "<absent>"):
            diffs.append(f"config.json '{k}': {str(ca.get(k, '<absent>'))[:200]}, "
                         f"mlx-lm {str(cb.get(k, '<absent>'))[:200]}")
    ia = json.load(open(os.path.join(ours, "model.safetensors.index.json")))
    ib = json.load(open(os.path.join(ref, "model.safetensors.index.json")))
    for k in ("metadata", "weight_map"):
        if ia.get(k) != ib.get(k):
            diffs.append(f"index {k}: {str(ia.get(k))[:200]}, mlx-lm {str(ib.get(k))[:200]}")
    return diffs


def run_moex(moex, raw, out, flags):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [moex, "convert", raw, "--out", out, "--quiet", *flags]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return None if r.returncode == 0 else f"moex convert failed ({r.returncode}): {r.stderr[-600:]}"


def run_mlx(raw, out, kwargs, tokenizer_dir=None):
    shutil.rmtree(out, ignore_errors=True)
    original = mlx_lm.utils.load_tokenizer
    if tokenizer_dir:
        mlx_lm.utils.load_tokenizer = lambda _path, *args, **kw: original(
            mlx_lm.utils.Path(tokenizer_dir), *args, **kw)
    try:
        mlx_convert(raw, out, **kwargs)
        return None
    except Exception as e:  # noqa: BLE001 - reported as a failure of the reference
        return f"mlx_lm convert failed: {type(e).__name__}: {e}"
    finally:
        mlx_lm.utils.load_tokenizer = original


def generates(moex, model, refusal):
    """None when moex generates a token from `model` (or refuses it with the expected words)."""
    cmd = [moex, "generate", "-m", model, "--prompt-ids", "3,14,15", "-n", "1", "--ignore-eos"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if refusal:
        ok = r.returncode == 2 and refusal[0] in r.stderr
        return None if ok else f"expected moex to refuse ({refusal[0]}), got rc {r.returncode}"
    return None if r.returncode == 0 else f"moex generate failed: {r.stderr[-400:]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("work")
    ap.add_argument("--only", default=None)
    ap.add_argument("--recipes", default=DEFAULT_RECIPES)
    a = ap.parse_args()
    names = sorted(os.path.basename(f)[:-5] for f in glob.glob(os.path.join(REF, "hf_configs", "*.json")))
    names += sorted(VARIANTS)
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    recipes = a.recipes.split(",")
    os.makedirs(a.work, exist_ok=True)
    tok = os.path.join(a.work, "tokenizer")
    if not os.path.exists(os.path.join(tok, "tokenizer.json")):
        subprocess.run([a.moex, "make-model", "--preset", "tiny-qwen3-moe", "--out", tok, "-q"],
                       check=True, capture_output=True)
    results = []
    t_all = time.time()
    for name in names:
        if name in SKIPS:
            results.append((name, "-", "SKIP", SKIPS[name]))
            continue
        t0 = time.time()
        fixture, fields = VARIANTS.get(name, (name, {}))
        cfg = hf.shrink(json.load(open(os.path.join(REF, "hf_configs", fixture + ".json"))))
        cfg.update(fields)
        hf.shrink_token_ids(cfg, hf.SIZES["vocab_size"])
        raw = os.path.join(a.work, name + "-hf")
        hf.write_raw(cfg, raw, tok, zlib.crc32(fixture.encode()))
        tok_dir = tok if name in TOKENIZER_ELSEWHERE else None
        for rname in recipes:
            flags, kwargs = RECIPES[rname]
            ours, ref = os.path.join(a.work, f"{name}-{rname}-moex"), os.path.join(a.work, f"{name}-{rname}-mlx")
            err = run_mlx(raw, ref, kwargs, tok_dir) or run_moex(a.moex, raw, ours, flags)
            diffs = [err] if err else compare_dirs(ours, ref)
            if not diffs:
                err = generates(a.moex, ours, LOAD_REFUSALS.get((name, rname)))
                diffs = [err] if err else []
            results.append((name, rname, "FAIL" if diffs else "PASS", "; ".join(diffs[:6])
                            + (f"; ... {len(diffs) - 6} more" if len(diffs) > 6 else "")))
            print(f"  {results[-1][2]} {name} {rname}" + (f": {results[-1][3]}" if diffs else ""),
                  flush=True)
            if not diffs:
                shutil.rmtree(ours, ignore_errors=True)
                shutil.rmtree(ref, ignore_errors=True)
        print(f"== {name}: {time.time() - t0:.1f} s", flush=True)
    print(f"\nconvert_reference summary ({time.time() - t_all:.0f} s):")
    for name, rname, status, why in results:
        print(f"  {status:4} {name} {rname}" + (f": {why}" if why else ""))
    if any(r[2] == "FAIL" for r in results):
        return 1
    return 0 if any(r[2] == "PASS" for r in results) else 77


if __name__ == "__main__":
    sys.exit(main())
