# Parity with mlx-lm on checkpoints built from each family's real Hugging Face config.json
# (hf_configs/<model_type>.json, sources in hf_configs/README.md): the config shrunk to tiny
# sizes with every other field and spelling kept, random weights under the Hugging Face tensor
# names, then (a) that raw directory and (b) `mlx_lm convert -q` of it, each compared with
# mlx-lm (prefill + greedy steps; logits normalized RMS per step and identical greedy tokens,
# parity.py's gates). Expected skips are named in SKIPS with their reason, never passed.
# Usage: hf_config_parity_test.py MOEX_EXE WORK_DIR [--only NAME[,NAME]] [--steps 8]
# Exit 0: every part that ran passed; 1: a mismatch or a moex refusal; 77: mlx-lm missing or
# every part of the selected fixtures is an expected skip.
import argparse
import copy
import glob
import json
import os
import shutil
import subprocess
import sys
import time
import zlib
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.utils import _get_classes
    import parity  # exits 77 itself when mlx-lm is missing
except ImportError as e:
    print(f"hf_config_parity: cannot import mlx-lm: {e}")
    sys.exit(77)

PROMPT = "3,14,15,92,65,35,89,79,32,38,46,26,43"
TOL = 1e-5  # parity.py's gate for f32 checkpoints at the exact tier
TOL_BF16 = 1e-3  # parity.py's gate for bf16 checkpoints computed in f32 (engine_parity_*_bf16)
# Wider gates, each measured. qwen3_next raw (f32), the fixed seed: 1.4e-5 normalized RMS. Over
# 6 other initializations moex and mlx-lm differ by 5.1e-6 to 6.0e-5, and each is as far from
# mlx-lm's graph evaluated in float64 (moex 5.6e-6..4.0e-5, mlx-lm f32 3.2e-6..4.9e-5): the
# f32 error of the Gated DeltaNet layers (alone up to 2.4e-5 from float64; the gated attention
# layer alone 7.5e-7; MoE and shared expert off change nothing), mostly from mlx-lm's initial
# A_log (A up to 16 in the decay exp(-A * softplus)); with A in [0.1, 1] moex is within 3.0e-6
# of float64. docs/families.md (qwen3_next) has the table. Greedy tokens stay identical.
TOL_OVERRIDES = {("qwen3_next", "raw"): 5e-5}
# Where the gate is wider, moex must also be as close to mlx-lm's graph in float64 as mlx-lm in
# float32 is (float64_check.py): its worst step within FLOAT64_FACTOR x mlx-lm float32's worst.
# The fixture's seed: moex 1.02e-5, mlx-lm f32 1.16e-5 (2026-12-06, AMD EPYC Zen 4); a wrong
# recurrence is 1e-3 or more away.
FLOAT64_FACTOR = 2.0

# Parts that cannot run, by fixture name and part ("raw" or "convert"), with the reason. Each is
# printed as SKIP; docs/families.md lists the same.
FP8 = ("the Hub's checkpoint is fp8 block-quantized (quantization_config quant_method fp8); moex "
       "reads MLX-converted and bf16 checkpoints only and refuses fp8 by design (docs/families.md): "
       "convert first")
SKIPS = {
    ("deepseek_v3", "raw"): FP8,
    ("kimi_k2", "raw"): FP8,
    ("minimax_m2", "raw"): FP8,
    ("dots1", "raw"): "mlx-lm 0.32.2 fails on the real config's n_group / topk_group null "
                      "(group_expert_select: None - None); moex reads null as 1",
    ("dots1", "convert"): "mlx-lm 0.32.2 fails on n_group / topk_group null (see raw)",
    ("kimi_k2", "convert"): "transformers 5.25 has no kimi_k2 config class: mlx_lm convert fails "
                            "loading the tokenizer (PreTrainedConfig has no max_position_embeddings)",
}


def mistral_tokenizer_broken():
    """transformers 5 loads the tokenizer of mistral-made model types (mixtral) through its
    mistral_common integration whenever mistral_common is installed; when that integration cannot
    be imported (tiktoken missing), `mlx_lm convert` fails before it reads any weight."""
    try:
        import transformers.integrations.mistral.tokenizer  # noqa: F401
        return None
    except ImportError as e:
        return f"transformers' mistral_common tokenizer integration does not import here ({e})"


# Parts skipped only while the environment lacks something, checked at run time.
CONDITIONAL_SKIPS = {("mixtral", "convert"): mistral_tokenizer_broken}

# Sizes of the tiny checkpoint. Widths are multiples of 64 where mlx-lm quantizes (group 64).
SIZES = {
    "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 64,
    "shared_expert_intermediate_size": 64, "moe_shared_expert_intermediate_size": 64,
    "shared_intermediate_size": 64, "intermediate_size_mlp": 128, "vocab_size": 1024, "num_attention_heads": 4,
    "head_dim": 16, "global_head_dim": 32, "kv_lora_rank": 64, "q_lora_rank": 64,
    "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
    "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "mamba_num_heads": 4, "mamba_head_dim": 16,
    "ssm_state_size": 16, "n_groups": 2, "hidden_size_per_layer_input": 0,
    "sliding_window": 8,  # shorter than the prompt: sliding layers drop keys in prefill and decode
}
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_k", "moe_topk", "top_k",
             "top_k_experts")
LAYER_KEYS = ("num_hidden_layers",)
N_EXPERTS, N_LAYERS = 8, 4


def shortest_prefix_of_all_kinds(seq):
    """The length of the shortest prefix of seq holding every value seq holds."""
    kinds = set(seq)
    return next(i for i in range(1, len(seq) + 1) if set(seq[:i]) == kinds)


def shrink(cfg):
    """The config at tiny sizes; every field it does not resize is kept as written."""
    cfg = copy.deepcopy(cfg)
    for key in ("text_config",):
        if isinstance(cfg.get(key), dict):
            cfg[key] = shrink(cfg[key])
    if "num_hidden_layers" not in cfg:
        if "vocab_size" in cfg:
            cfg["vocab_size"] = SIZES["vocab_size"]
        return cfg
    old_layers = cfg["num_hidden_layers"]
    pattern = cfg.get("hybrid_override_pattern")
    types = cfg.get("layer_types")
    if isinstance(pattern, str):  # Nemotron-H: the shortest prefix holding every block kind
        new_layers = max(shortest_prefix_of_all_kinds(pattern), 2)
        cfg["hybrid_override_pattern"] = pattern[:new_layers]
    elif isinstance(types, list) and len(types) == old_layers:
        # Every layer kind kept (Gemma-4's first full-attention layer is its sixth); the per-layer
        # lists are cut to the same length below.
        new_layers = max(min(old_layers, N_LAYERS), shortest_prefix_of_all_kinds(types))
    else:
        new_layers = min(old_layers, N_LAYERS)
    cfg["num_hidden_layers"] = new_layers
    heads = cfg.get("num_attention_heads")
    for key, value in list(cfg.items()):
        if key in SIZES and isinstance(value, int) and not isinstance(value, bool):
            cfg[key] = SIZES[key] if value else value
        elif key in EXPERT_KEYS and isinstance(value, int) and value > 1:
            cfg[key] = N_EXPERTS
        elif isinstance(value, list) and len(value) == old_layers and old_layers > 1:
            cfg[key] = value[:new_layers]  # per-layer lists (layer_types, moe_topk, ...)
    for key in ("num_key_value_heads", "num_global_key_value_heads"):
        if isinstance(cfg.get(key), int) and heads:
            cfg[key] = cfg["num_attention_heads"] if cfg[key] == heads else min(cfg[key], 2)
    experts = next((cfg[k] for k in EXPERT_KEYS if isinstance(cfg.get(k), int)), N_EXPERTS)
    for key in TOPK_KEYS:
        v = cfg.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            cfg[key] = min(v, 4, experts)
        elif isinstance(v, list):
            cfg[key] = [min(x, 4, experts) for x in v]
    for key in ("moe_intermediate_size", "num_shared_expert"):
        if isinstance(cfg.get(key), list):
            cfg[key] = [SIZES["moe_intermediate_size"] if key == "moe_intermediate_size" else x
                        for x in cfg[key]]
    if isinstance(cfg.get("n_group"), int) and cfg["n_group"] > 1:
        cfg["n_group"] = 2
        cfg["topk_group"] = min(cfg.get("topk_group") or 1, 2)
    if isinstance(cfg.get("first_k_dense_replace"), int):
        cfg["first_k_dense_replace"] = min(cfg["first_k_dense_replace"], 1)
    if isinstance(cfg.get("rotary_dim"), int) and cfg.get("head_dim"):
        cfg["rotary_dim"] = cfg["head_dim"] // 2  # the real ratio in MiniMax-M2 (64 of 128)
    rs = cfg.get("rope_scaling")
    head_dim = cfg.get("head_dim") or (
        cfg["hidden_size"] // cfg["num_attention_heads"] if heads else None)
    if isinstance(rs, dict) and head_dim:
        for key in ("long_factor", "short_factor"):
            if isinstance(rs.get(key), list):
                rs[key] = rs[key][: head_dim // 2]
    if "full_attention_interval" in cfg:
        cfg["full_attention_interval"] = min(cfg["full_attention_interval"], new_layers)
    return cfg


def shrink_token_ids(cfg, vocab):
    """Special token ids past the tiny vocabulary become the synthetic tokenizer's specials
    (1021.. in make-model's tokenizer), in order of first appearance."""
    ids = {}

    def fix(v):
        if isinstance(v, int) and not isinstance(v, bool) and v >= vocab:
            return ids.setdefault(v, vocab - 3 + len(ids) % 3)
        return v

    for node in (cfg, cfg.get("text_config") or {}):
        for key, value in list(node.items()):
            if key.endswith("token_id") or key.endswith("token_ids"):
                node[key] = [fix(x) for x in value] if isinstance(value, list) else fix(value)
    return cfg


def randomize(params, seed):
    """Every parameter random: constant inits (norms, zero biases, bare routers) perturbed."""
    mx.random.seed(seed)
    out = {}
    for name, p in params.items():
        if not mx.issubdtype(p.dtype, mx.floating):
            out[name] = p
            continue
        p = p.astype(mx.float32)
        flat = p.reshape(-1)
        if p.size > 1 and bool(mx.all(flat == flat[0]).item()):
            scale = 0.1 if p.ndim == 1 else 1.0 / (p.shape[-1] ** 0.5)
            p = p + scale * mx.random.normal(p.shape)
        out[name] = p
    return out


def write_raw(cfg, out_dir, tokenizer_dir, seed):
    """A Hugging Face directory: config.json as given, f32 random weights under the names the
    Hub's checkpoints use (parity.py's mapping from mlx-lm's names), a synthetic tokenizer."""
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    model_cls, args_cls = _get_classes(cfg)
    mx.random.seed(seed)  # the model's own initialization too: the same weights every run
    model = model_cls(args_cls.from_dict(cfg))
    params = randomize(dict(tree_flatten(model.parameters())), seed)
    mx.save_safetensors(os.path.join(out_dir, "model.safetensors"), params,
                        metadata={"format": "mlx"})
    json.dump(cfg, open(os.path.join(out_dir, "config.json"), "w"), indent=1)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer_dir, f), out_dir)
    if cfg["model_type"] == "gpt_oss":
        # openai's layout: mxfp4 experts (blocks / scales) with gate and up rows interleaved
        path = os.path.join(out_dir, "model.safetensors")
        t = mx.load(path)
        for name in [n for n in t if ".mlp.experts." in n and n.endswith("_proj.weight")]:
            t[name], t[name[:-len("weight")] + "scales"] = mx.quantize(
                t[name], group_size=32, bits=4, mode="mxfp4")
        mx.save_safetensors(path, t, metadata={"format": "mlx"})
        parity.to_gpt_oss_original(out_dir)
    elif cfg["model_type"] == "qwen3_5_moe":
        to_qwen3_5_moe_hub_layout(out_dir)
    else:
        parity.to_hf_layout(out_dir)


def to_qwen3_5_moe_hub_layout(model_dir):
    """Qwen3.5-MoE as the Hub ships it (transformers' Qwen3_5MoeForConditionalGeneration), the
    layout mlx-lm's qwen3_5_moe sanitize maps: model.language_model.* and lm_head.*, each layer's
    experts fused as experts.gate_up_proj [E, 2*Dff, H] (gate rows, then up) and
    experts.down_proj [E, H, Dff], the Gated DeltaNet conv in PyTorch's [C, 1, K] layout, and
    multi-token-prediction weights (mtp.*, which mlx-lm drops)."""
    tensors = parity.take_tensors(model_dir)
    out = {}
    for name, t in tensors.items():
        if ".mlp.switch_mlp." in name:
            continue  # fused below
        if name.endswith("linear_attn.conv1d.weight"):
            t = t.swapaxes(1, 2)
        for mlx, hub in (("language_model.model.", "model.language_model."),
                         ("language_model.lm_head.", "lm_head.")):
            if name.startswith(mlx):
                name = hub + name[len(mlx):]
        out[name] = t
    fused = 0
    for name in [n for n in tensors if n.endswith(".mlp.switch_mlp.gate_proj.weight")]:
        base = name[: -len(".switch_mlp.gate_proj.weight")]
        g, u, d = (tensors[f"{base}.switch_mlp.{p}_proj.weight"] for p in ("gate", "up", "down"))
        hub = "model.language_model." + base[len("language_model.model."):]
        out[hub + ".experts.gate_up_proj"] = mx.concatenate([g, u], axis=1)
        out[hub + ".experts.down_proj"] = d
        fused += 1
    h = out["model.language_model.norm.weight"].shape[0]
    out["mtp.fc.weight"] = mx.zeros((h, 2 * h))
    out["mtp.norm.weight"] = mx.ones((h,))
    parity.write_two_shards(model_dir, out)
    print(f"hf_config_parity: Qwen3.5-MoE Hub layout: {fused} layers of fused experts")


def run_part(moex, model_dir, steps, label, tol):
    """parity.py's comparison on one directory: True when both fused modes match."""
    try:
        ref, ref_toks = parity.mlx_run(model_dir, [int(x) for x in PROMPT.split(",")], steps, True)
    except Exception as e:  # mlx-lm refused the checkpoint
        print(f"  {label}: mlx-lm failed: {type(e).__name__}: {e}")
        return False
    a = SimpleNamespace(moex=moex, model=model_dir, prompt_ids=PROMPT, steps=steps, isa=None,
                        precision="exact", threads=None, tol=tol)
    ok = True
    for mode in ("on", "off"):
        try:
            ok &= parity.compare(a, mode, ref, ref_toks)
        except SystemExit:  # parity.compare exits when moex refuses the checkpoint
            return False
    return ok


def float64_part(moex, model_dir, steps, label):
    """The float64 check of a part whose gate is wider (FLOAT64_FACTOR)."""
    import float64_check
    res = float64_check.errors_against_float64(moex, model_dir, PROMPT, steps)
    if res is None:
        print(f"  {label}: float64 check: moex's greedy tokens differ from mlx-lm's")
        return False
    worst32, worst_moex = max(res[0]), max(res[1])
    ok = worst_moex <= FLOAT64_FACTOR * worst32
    print(f"  {label}: against mlx-lm in float64, moex {worst_moex:.2e}, mlx-lm float32 "
          f"{worst32:.2e} (moex within {FLOAT64_FACTOR} x: {'yes' if ok else 'NO'})")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("work")
    ap.add_argument("--only", default=None)
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    names = sorted(os.path.basename(f)[:-5] for f in glob.glob(os.path.join(HERE, "hf_configs", "*.json")))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    os.makedirs(a.work, exist_ok=True)
    tok = os.path.join(a.work, "tokenizer")
    if not os.path.exists(os.path.join(tok, "tokenizer.json")):
        r = subprocess.run([a.moex, "make-model", "--preset", "tiny-qwen3-moe", "--out", tok, "-q"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"hf_config_parity: make-model failed: {r.stderr}")
            return 2
    results, ran = [], 0
    for name in names:
        seed = zlib.crc32(name.encode())  # the same weights whatever else is selected
        t0 = time.time()
        cfg = shrink(json.load(open(os.path.join(HERE, "hf_configs", name + ".json"))))
        shrink_token_ids(cfg, SIZES["vocab_size"])
        raw = os.path.join(a.work, name + "-hf")
        print(f"== {name} ({cfg['model_type']})")
        write_raw(cfg, raw, tok, seed)
        for part in ("raw", "convert"):
            why = SKIPS.get((name, part)) or (
                CONDITIONAL_SKIPS[(name, part)]() if (name, part) in CONDITIONAL_SKIPS else None)
            if why:
                results.append((name, part, "SKIP", why))
                continue
            d = raw
            if part == "convert":
                d = os.path.join(a.work, name + "-mlx-q4")
                shutil.rmtree(d, ignore_errors=True)
                # `python -m mlx_lm convert --hf-path RAW --mlx-path D -q`, in this process
                rc, printed = parity.mlx_lm_convert(["--hf-path", raw, "--mlx-path", d, "-q"])
                if rc != 0:
                    results.append((name, part, "FAIL", "mlx_lm convert: " + printed[-300:]))
                    continue
            ran += 1
            # mlx_lm convert casts to the config's torch_dtype (bf16 in the real configs)
            conf = json.load(open(os.path.join(d, "config.json")))
            dtype = conf.get("torch_dtype") or conf.get("dtype") or (conf.get("text_config") or {}).get("dtype")
            tol = TOL_BF16 if part == "convert" and dtype == "bfloat16" else TOL
            tol = TOL_OVERRIDES.get((name, part), tol)
            ok = run_part(a.moex, d, a.steps, f"{name} {part}", tol)
            if ok and (name, part) in TOL_OVERRIDES:
                ok = float64_part(a.moex, d, a.steps, f"{name} {part}")
            results.append((name, part, "PASS" if ok else "FAIL", ""))
        print(f"   {name}: {time.time() - t0:.1f} s")
    print("\nhf_config_parity summary:")
    for name, part, status, why in results:
        print(f"  {status:4} {name} {part}" + (f": {why}" if why else ""))
    if any(r[2] == "FAIL" for r in results):
        return 1
    return 0 if ran else 77


if __name__ == "__main__":
    sys.exit(main())
