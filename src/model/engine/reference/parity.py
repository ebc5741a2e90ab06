# Parity of `moex generate` with mlx-lm on one checkpoint: the same prompt ids, prefill plus
# N greedy decode steps in both; every step's logits must match to normalized RMS < tol and
# the greedy tokens must be identical. mlx-lm computes in float32 here (the checkpoint's
# float tensors are f32, or are cast to f32 with --f32-compute).
# Usage: parity.py MOEX_EXE MODEL_DIR --prompt-ids 1,2,3 [--steps 32] [--fused on,off]
#        [--tol 1e-3] [--f32-compute] [--make-preset tiny-qwen3-moe [--dtype f32]]
#        [--mlx-convert '--q-mode mxfp4' | --mlx-convert-float bfloat16]
#        [--set text_config.attention_chunk_size=8 ...]
# With --make-preset, MODEL_DIR is (re)created first by `moex make-model --preset P --dtype D`;
# --set then edits config.json fields (dotted path = JSON value) before both sides load it,
# e.g. to make Llama-4's chunked attention and attention temperature act within a short test.
# Exit 0: parity; 1: mismatch; 2: moex failed; 77: mlx-lm is unavailable.
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import mlx.core as mx
    import mlx.nn as nn
    import numpy as np
    from pathlib import Path
    from mlx_lm.utils import load_model
    from mlx_lm.models.cache import make_prompt_cache
except ImportError as e:
    print(f"parity: cannot import mlx-lm: {e}")
    sys.exit(77)


def nrms(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return math.sqrt(float(np.mean((a - b) ** 2))) / (math.sqrt(float(np.mean(b * b))) or 1.0)


def mlx_run(model_dir, ids, steps, f32, dtype=None, tokens=None):
    """mlx-lm's logits after the prompt and after each of `steps` tokens ([steps + 1, vocab],
    float32; float64 for dtype float64) and the tokens fed: greedy, or `tokens`. f32 computes in
    float32; dtype (e.g. mx.float64, float64_check.py) names the compute dtype instead."""
    model, _ = load_model(Path(model_dir))
    if dtype is None and f32:
        dtype = mx.float32
    if dtype is not None:
        model.set_dtype(dtype)
    out_dtype = mx.float64 if dtype is not None and dtype == mx.float64 else mx.float32
    cache = make_prompt_cache(model)
    logits = model(mx.array([ids]), cache=cache)[0, -1].astype(out_dtype)
    out, toks = [], []
    for i in range(steps + 1):
        mx.eval(logits)
        out.append(np.array(logits))
        t = int(mx.argmax(logits).item()) if tokens is None else tokens[i]
        toks.append(t)
        if i == steps:
            break
        logits = model(mx.array([[t]]), cache=cache)[0, -1].astype(out_dtype)
    return np.stack(out), toks


def mlx_lm_convert(argv):
    """`python -m mlx_lm convert ARGV` in this process (the same parser and convert() the command
    line runs, without another interpreter start): (exit status, what it printed)."""
    import contextlib
    import importlib
    import io
    mlx_convert = importlib.import_module("mlx_lm.convert")  # the module (mlx_lm.convert is
    # also the name of the function the package exports)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            mlx_convert.convert(**vars(mlx_convert.configure_parser().parse_args(argv)))
        return 0, printed.getvalue()
    except SystemExit as e:  # argparse's errors
        return (e.code if isinstance(e.code, int) else 2) or 0, printed.getvalue()
    except Exception as e:  # the converter's own refusals
        return 1, printed.getvalue() + f"{type(e).__name__}: {e}"


def run(argv):
    """One parity case (the arguments of the usage above, after the script's name): its exit
    status. parity_suite.py runs several in one process."""
    ap = argparse.ArgumentParser(prog="parity.py")
    ap.add_argument("moex")
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--fused", default="on,off", help="comma-separated modes, one moex run each")
    ap.add_argument("--make-preset", default=None)
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--mlx-convert", default=None,
                    help="with --make-preset: write a float checkpoint (--bits 0) and quantize it"
                         " with `python -m mlx_lm convert -q` plus these space-separated"
                         " arguments (e.g. '--q-mode mxfp4'): the checkpoint mlx-lm's converter"
                         " writes, with its own quantization choices")
    ap.add_argument("--mlx-convert-float", default=None, metavar="DTYPE",
                    help="with --make-preset: write a float checkpoint (--bits 0) and convert it"
                         " without quantization, `python -m mlx_lm convert --dtype DTYPE`"
                         " (float16, bfloat16 or float32): mlx-lm's unquantized checkpoint")
    ap.add_argument("--hf-layout", action="store_true",
                    help="with --make-preset: rewrite the (float) checkpoint into the Hugging"
                         " Face layout mlx_lm.load also accepts: every expert its own tensors"
                         " (experts.E.gate_proj / w1 ...; DeepSeek's kv_b_proj), split over two"
                         " shards with an index; with --mlx-convert*, the converter's input")
    ap.add_argument("--gpt-oss-original", action="store_true",
                    help="rewrite an mxfp4 gpt-oss checkpoint into openai's original layout:"
                         " experts.gate_up_proj_blocks/_scales/_bias with gate and up rows"
                         " alternating, down_proj_blocks/_scales/_bias, and a Hugging Face"
                         " quantization_config (quant_method mxfp4); dequantize the other modules"
                         " first (--dequantize)")
    ap.add_argument("--make-arg", action="append", default=[],
                    help="extra make-model argument (e.g. --make-arg=--mode --make-arg=mxfp4)")
    ap.add_argument("--set", action="append", default=[], help="config.json edit PATH=JSON")
    ap.add_argument("--dequantize", default=None, metavar="REGEX",
                    help="replace every quantized module whose path matches REGEX by its"
                         " mx.dequantize'd float weight (a model mixing float and quantized"
                         " layers, as mlx-lm leaves a layer whose width is no multiple of the"
                         " group size)")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--f32-compute", action="store_true")
    ap.add_argument("--threads", default=None)
    ap.add_argument("--isa", default=None)
    ap.add_argument("--precision", default=None,
                    help="moex's activation precision tier (fast, standard, exact); the tight"
                         " 1e-5 gates are for the exact tier")
    a = ap.parse_args(argv)
    ids = [int(x) for x in a.prompt_ids.split(",")]
    if a.make_preset:
        import shutil
        converts = a.mlx_convert or a.mlx_convert_float
        out = a.model + "-float" if converts else a.model
        extra = ["--bits", "0"] if converts else []
        mk = [a.moex, "make-model", "--preset", a.make_preset, "--dtype", a.dtype, "--out",
              out, "-q"] + extra + a.make_arg
        for d in {out, a.model}:
            if os.path.isdir(d):
                shutil.rmtree(d)
        r = subprocess.run(mk, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"parity: make-model failed ({r.returncode}): {' '.join(mk)}\n{r.stderr}")
            return 2
        if converts and a.hf_layout:
            to_hf_layout(out)  # what users convert: the Hugging Face checkpoint
        if converts:
            cv = ["--hf-path", out, "--mlx-path", a.model]
            cv += ["-q"] + a.mlx_convert.split() if a.mlx_convert else ["--dtype", a.mlx_convert_float]
            rc, printed = mlx_lm_convert(cv)
            if rc != 0:
                print(f"parity: mlx_lm convert failed ({rc}): {' '.join(cv)}\n{printed}")
                return 2
            print(f"parity: mlx_lm convert {a.mlx_convert or a.mlx_convert_float}: quantization "
                  f"{json.load(open(os.path.join(a.model, 'config.json'))).get('quantization')}")
    if a.dequantize:
        dequantize_modules(a.model, a.dequantize)
    if a.hf_layout and not (a.mlx_convert or a.mlx_convert_float):
        to_hf_layout(a.model)
    if a.gpt_oss_original:
        to_gpt_oss_original(a.model)
    if a.set:
        path = os.path.join(a.model, "config.json")
        cfg = json.load(open(path))
        for edit in a.set:
            key, value = edit.split("=", 1)
            node = cfg
            *parents, leaf = key.split(".")
            for p in parents:
                node = node[p]
            node[leaf] = json.loads(value)
        json.dump(cfg, open(path, "w"), indent=1)
    ref, ref_toks = mlx_run(a.model, ids, a.steps, a.f32_compute)
    failed = False
    for mode in a.fused.split(","):
        failed |= not compare(a, mode, ref, ref_toks)
    return 1 if failed else 0


# The Hugging Face names of stacked expert projections, as mlx-lm's sanitize() maps them back:
# Mixtral and PhiMoE call gate/down/up w1/w2/w3 under block_sparse_moe, LFM2-MoE under
# feed_forward (whose short-conv weights are PyTorch's [H, 1, L]), the Qwen and OLMoE
# families keep the projection names under mlp.
HF_EXPERT_NAMES = {"gate_proj": "w1", "down_proj": "w2", "up_proj": "w3"}
# Nemotron-H's relu2 experts: mlx-lm's switch_mlp.fc1 / fc2 are experts.E.up_proj / down_proj.
HF_FC_NAMES = {"fc1": "up_proj", "fc2": "down_proj"}


def take_tensors(model_dir):
    """Every tensor of the checkpoint, its safetensors files (and index) removed."""
    import glob
    tensors = {}
    for f in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        tensors.update(mx.load(f))
        os.remove(f)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        os.remove(index)
    return tensors


# Families whose Hugging Face checkpoints fuse gate and up as [E, 2*Dff, H] (gate rows first),
# by model_type: the stacked MLX names, then the fused gate_up and the down names mlx-lm's
# sanitize reads.
HF_OUTPUTS_FIRST = {
    "granitemoe": (".block_sparse_moe.switch_mlp.", ".block_sparse_moe.input_linear.weight",
                   ".block_sparse_moe.output_linear.weight"),
    "gemma4_text": (".experts.switch_glu.", ".experts.gate_up_proj", ".experts.down_proj"),
    "gemma4": (".experts.switch_glu.", ".experts.gate_up_proj", ".experts.down_proj")}


def hub_names(model_type, tensors):
    """The names the Hub's checkpoints use where mlx-lm's sanitize renames or drops: LFM2-MoE's
    dense feed_forward.w1/w3/w2 (transformers' Lfm2MoeMLP), Ling's bare router mlp.gate.weight,
    and Qwen3-Next's multi-token-prediction weights (mtp.*, dropped)."""
    for name in list(tensors):
        if model_type == "lfm2_moe" and ".feed_forward." in name and ".experts." not in name:
            for proj, hf in HF_EXPERT_NAMES.items():
                if name.endswith(f".feed_forward.{proj}.weight"):
                    tensors[name.replace(f".{proj}.weight", f".{hf}.weight")] = tensors.pop(name)
        if model_type == "bailing_moe" and ".mlp.gate.gate_proj." in name:
            tensors[name.replace(".mlp.gate.gate_proj.", ".mlp.gate.")] = tensors.pop(name)
    if model_type == "qwen3_next":
        h = tensors["model.norm.weight"].shape[0]
        ones = mx.ones((h,), dtype=tensors["model.norm.weight"].dtype)
        tensors["mtp.fc.weight"] = mx.zeros((h, 2 * h), dtype=ones.dtype)
        tensors["mtp.norm.weight"] = ones
        tensors["mtp.pre_fc_norm_embedding.weight"] = ones
        tensors["mtp.layers.0.input_layernorm.weight"] = ones


def write_two_shards(model_dir, tensors):
    """Writes `tensors` as the Hub does: two safetensors shards (names sorted, split in half)
    and model.safetensors.index.json mapping each name to its shard."""
    names = sorted(tensors)
    shards = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        mx.save_safetensors(os.path.join(model_dir, fname), {n: tensors[n] for n in shard},
                            metadata={"format": "pt"})
        weight_map.update({n: fname for n in shard})
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(model_dir, "model.safetensors.index.json"), "w"), indent=1)


def to_hf_layout(model_dir):
    tensors = take_tensors(model_dir)
    out, split = {}, 0
    model_type = json.load(open(os.path.join(model_dir, "config.json")))["model_type"]
    hub_names(model_type, tensors)
    if model_type in HF_OUTPUTS_FIRST:
        stacked, gate_up, down = HF_OUTPUTS_FIRST[model_type]
        for name in [n for n in tensors if n.endswith(stacked + "gate_proj.weight")]:
            base = name[: -len(stacked + "gate_proj.weight")]
            g, u, d = (tensors.pop(base + stacked + p + "_proj.weight") for p in ("gate", "up", "down"))
            out[base + gate_up] = mx.concatenate([g, u], axis=1)
            out[base + down] = d
            split += 1
    for name, t in tensors.items():
        if name.endswith(".self_attn.embed_q.weight"):
            # DeepSeek-V3: kv_b_proj [heads * (nope + v), kv_lora], per head the no-RoPE key
            # rows (embed_q [heads, kv_lora, nope] transposed) then the value rows
            # (unembed_out [heads, v, kv_lora]), as mlx-lm's sanitize splits it.
            prefix = name[: -len(".embed_q.weight")]
            wv = tensors[prefix + ".unembed_out.weight"]
            kv_b = mx.concatenate([t.swapaxes(1, 2), wv], axis=1)
            out[prefix + ".kv_b_proj.weight"] = kv_b.reshape(-1, kv_b.shape[-1])
            continue
        if name.endswith(".self_attn.unembed_out.weight"):
            continue
        if name.endswith(".feed_forward.experts.gate_proj.weight"):
            # Llama-4: gate and up as one [E, H, 2*Dff] tensor, down as [E, Dff, H]
            prefix = name[: -len(".gate_proj.weight")]
            up = tensors[prefix + ".up_proj.weight"]
            out[prefix + ".gate_up_proj"] = mx.concatenate(
                [t.swapaxes(1, 2), up.swapaxes(1, 2)], axis=-1)
            out[prefix + ".down_proj"] = tensors[prefix + ".down_proj.weight"].swapaxes(1, 2)
            split += 1
            continue
        if name.endswith(".feed_forward.experts.up_proj.weight") or \
                name.endswith(".feed_forward.experts.down_proj.weight"):
            continue
        if (name.endswith("conv.conv.weight") or name.endswith("linear_attn.conv1d.weight")
                or name.endswith("mixer.conv1d.weight")) and t.ndim == 3 and t.shape[-1] == 1:
            # LFM2, Qwen3-Next, Nemotron-H: PyTorch's Conv1d layout [C, 1, L]
            out[name] = t.swapaxes(1, 2)
            continue
        # dots1 stacks its experts under mlp.experts (mlx-lm's attribute name), the rest under
        # switch_mlp; either way the Hugging Face names are <moe>.experts.<e>.<proj>.
        stacked = ".switch_mlp." if ".switch_mlp." in name else (
            ".experts." if ".mlp.experts." in name and t.ndim == 3 else None)
        if stacked is None:
            out[name] = t
            continue
        prefix, rest = name.split(stacked)
        proj, part = rest.split(".", 1)
        renamed = prefix.endswith("block_sparse_moe") or prefix.endswith("feed_forward")
        hf = HF_EXPERT_NAMES[proj] if renamed else HF_FC_NAMES.get(proj, proj)
        for e in range(t.shape[0]):
            out[f"{prefix}.experts.{e}.{hf}.{part}"] = t[e]
        split += 1
    if split == 0:
        print("parity: --hf-layout found no stacked experts to split")
        sys.exit(2)
    write_two_shards(model_dir, out)
    print(f"parity: Hugging Face layout: {split} stacked projections split per expert")


def to_gpt_oss_original(model_dir):
    """openai/gpt-oss's own layout, as mlx-lm's gpt_oss sanitize reads it back."""
    tensors = take_tensors(model_dir)

    def interleave(a, b):  # rows (axis -2 for 3-D, -1 for biases) a0 b0 a1 b1 ...
        axis = a.ndim - 2 if a.ndim == 3 else a.ndim - 1
        return mx.stack([a, b], axis=axis + 1).flatten(axis, axis + 1)

    def blocks(w):  # U32 [E, rows, in/8] -> U8 [E, rows, in/32, 16]
        u8 = w.view(mx.uint8)
        return u8.reshape(*u8.shape[:-1], u8.shape[-1] // 16, 16)

    out, done = {}, 0
    for name in list(tensors):
        if not name.endswith(".mlp.experts.gate_proj.weight"):
            continue
        p = name[: -len(".gate_proj.weight")]
        g, u, d = (f"{p}.{x}_proj" for x in ("gate", "up", "down"))
        out[p + ".gate_up_proj_blocks"] = blocks(interleave(tensors.pop(g + ".weight"),
                                                            tensors.pop(u + ".weight")))
        out[p + ".gate_up_proj_scales"] = interleave(tensors.pop(g + ".scales"),
                                                     tensors.pop(u + ".scales"))
        out[p + ".gate_up_proj_bias"] = interleave(tensors.pop(g + ".bias"), tensors.pop(u + ".bias"))
        out[p + ".down_proj_blocks"] = blocks(tensors.pop(d + ".weight"))
        out[p + ".down_proj_scales"] = tensors.pop(d + ".scales")
        out[p + ".down_proj_bias"] = tensors.pop(d + ".bias")
        done += 1
    left = [n for n in tensors if n.endswith(".scales")]
    if done == 0 or left:
        print(f"parity: --gpt-oss-original: {done} expert layers; still quantized: {left[:3]}")
        sys.exit(2)
    out.update(tensors)
    mx.save_safetensors(os.path.join(model_dir, "model.safetensors"), out,
                        metadata={"format": "pt"})
    path = os.path.join(model_dir, "config.json")
    cfg = json.load(open(path))
    cfg.pop("quantization", None)
    cfg["quantization_config"] = {"quant_method": "mxfp4",
                                  "modules_to_not_convert": ["model.layers.*.self_attn",
                                                             "model.layers.*.mlp.router",
                                                             "model.embed_tokens", "lm_head"]}
    json.dump(cfg, open(path, "w"), indent=1)
    print(f"parity: gpt-oss original layout: {done} layers of interleaved mxfp4 experts")


def dequantize_modules(model_dir, pattern):
    import glob
    import re
    path = os.path.join(model_dir, "config.json")
    cfg = json.load(open(path))
    q = cfg["quantization"]
    count = 0
    for f in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        t = mx.load(f)
        for name in [n for n in t if n.endswith(".scales")]:
            mod = name[: -len(".scales")]
            if not re.search(pattern, mod):
                continue
            mq = q.get(mod) if isinstance(q.get(mod), dict) else q
            w = mx.dequantize(t[mod + ".weight"], t[name], t.get(mod + ".biases"),
                              group_size=mq["group_size"], bits=mq["bits"],
                              mode=mq.get("mode", q.get("mode", "affine")))
            t[mod + ".weight"] = w.astype(t[name].dtype if t[name].dtype != mx.uint8 else mx.float32)
            for part in (".scales", ".biases"):
                t.pop(mod + part, None)
            q.pop(mod, None)
            count += 1
        mx.save_safetensors(f, t, metadata={"format": "mlx"})
    json.dump(cfg, open(path, "w"), indent=1)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):  # drop the removed scales / biases from the weight map
        idx = json.load(open(index))
        for f in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
            names = set(mx.load(f))
            base = os.path.basename(f)
            idx["weight_map"] = {k: v for k, v in idx["weight_map"].items()
                                 if v != base or k in names}
        json.dump(idx, open(index, "w"), indent=1)
    print(f"parity: dequantized {count} modules matching {pattern!r}")
    if count == 0:
        sys.exit(2)


def moex_dump_logits(moex, model, prompt_ids, steps, extra=()):
    """`moex generate` of prompt_ids (text, "3,14,15") and `steps` greedy steps, logits dumped:
    (logits [steps + 1, vocab], the generated ids, moex's stderr). Exit 2 when moex fails."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "logits.bin")
        cmd = [moex, "generate", "-m", model, "--prompt-ids", prompt_ids, "-n", str(steps + 1),
               "--ignore-eos", "--dump-logits", dump, *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{os.path.basename(sys.argv[0])}: moex failed ({r.returncode}): "
                  f"{' '.join(cmd)}\n{r.stderr}")
            sys.exit(2)
        meta = json.load(open(dump + ".json"))
        got = np.fromfile(dump, dtype=np.float32).reshape(-1, meta["vocab"])
        return got, meta["generated_ids"], r.stderr


def errors_until_divergence(got, toks, ref, ref_toks):
    """Logits nRMS per step against the reference, up to and including the first step whose
    greedy token differs (later steps compare different contexts), and whether all agree."""
    same = toks == ref_toks
    n = len(ref_toks) if same else 1 + next(i for i, (x, y) in enumerate(zip(toks, ref_toks))
                                             if x != y)
    return [nrms(got[s], ref[s]) for s in range(min(n, got.shape[0], ref.shape[0]))], same


def compare(a, mode, ref, ref_toks):
    extra = ["--fused", mode, "-v"]
    if a.isa:
        extra += ["--isa", a.isa]
    if a.precision:
        extra += ["--precision", a.precision]
    if a.threads:
        extra += ["--threads", a.threads]
    got, toks, stderr = moex_dump_logits(a.moex, a.model, a.prompt_ids, a.steps, extra)
    worst, bad = 0.0, []
    for s in range(ref.shape[0]):
        if s >= got.shape[0]:
            bad.append(f"step {s}: moex produced only {got.shape[0]} steps")
            break
        e = nrms(got[s], ref[s])
        worst = max(worst, e)
        if not e < a.tol:
            bad.append(f"step {s}: logits nrms {e:.3e} >= {a.tol}")
    if toks != ref_toks:
        first = next((i for i, (x, y) in enumerate(zip(toks, ref_toks)) if x != y),
                     min(len(toks), len(ref_toks)))
        bad.append(f"greedy tokens differ from step {first}: moex {toks[first:first + 5]} "
                   f"mlx-lm {ref_toks[first:first + 5]}")
    # The path the mode promises must be the one that ran (decode steps: fused for on,
    # fallback for off).
    paths = [l.strip() for l in stderr.splitlines() if l.startswith("moe paths")]
    summary = paths[0] if paths else "no MoE path counters"
    if mode == "on" and "routed fused 0 " in summary + " ":
        bad.append("--fused on ran no fused MoE call")
    if mode == "off" and "routed fused 0 " not in summary + " ":
        bad.append("--fused off ran fused MoE calls")
    print(f"{os.path.basename(a.model)} fused={mode}: {ref.shape[0]} steps, worst logits nrms "
          f"{worst:.3e} (tol {a.tol}); greedy tokens {'identical' if toks == ref_toks else 'DIFFER'}; "
          f"{summary}")
    for b in bad:
        print("  " + b)
    return not bad


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
