"""Checkpoints rewritten into the form a llama.cpp arch can hold, for the GGUF tests: the model
computes the same function, so moex on the copy is compared with llama.cpp on the copy's twin.
"""
import numpy as np

from gguf_twin_test import write_checkpoint
from mlx_checkpoint import Checkpoint


def with_kv_heads_repeated(src_dir, dst_dir):
    """DST: SRC with grouped-query attention written out as multi-head attention: each KV head's
    rows of k_proj / v_proj (weights, their MLX scales and biases, and any bias vector) repeated
    once per query head of its group, num_key_value_heads = num_attention_heads. Query head h
    reads KV head h // group either way, so the logits are the same up to arithmetic order.
    (llama.cpp's dots1 loader sizes attn_k / attn_v by the query heads: MHA only.)"""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    heads, kv = int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"])
    group = heads // kv
    out = {}
    for name in ckpt.names():
        arr = np.asarray(ckpt.raw(name))
        if ".self_attn.k_proj." in name or ".self_attn.v_proj." in name:
            rows = arr.reshape(kv, arr.shape[0] // kv, *arr.shape[1:])
            arr = np.repeat(rows, group, axis=0).reshape(arr.shape[0] * group, *arr.shape[1:])
        out[name] = (ckpt.dtype(name), arr)
    cfg["num_key_value_heads"] = heads
    return write_checkpoint(src_dir, dst_dir, cfg, out)


def with_moe_in_dense_layers(src_dir, dst_dir):
    """DST: SRC (qwen3_next) with each dense layer of mlp_only_layers given the MoE block of the
    first MoE layer (router, experts, shared expert and its gate, with their quantization
    entries), mlp_only_layers emptied. Another model than SRC, but one llama.cpp's qwen3next can
    hold: its loader makes every layer MoE."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    dense = sorted(cfg.get("mlp_only_layers") or [])
    donor = next(i for i in range(int(cfg["num_hidden_layers"])) if i not in dense)
    src_prefix = f"model.layers.{donor}.mlp."
    out = {}
    for name in ckpt.names():
        parts = name.split(".")
        if name.startswith("model.layers.") and int(parts[2]) in dense and parts[3] == "mlp":
            continue
        out[name] = (ckpt.dtype(name), np.asarray(ckpt.raw(name)))
        if name.startswith(src_prefix):
            for i in dense:
                out[f"model.layers.{i}.mlp." + name[len(src_prefix):]] = out[name]
    cfg["mlp_only_layers"] = []
    for key in ("quantization", "quantization_config"):
        q = cfg.get(key)
        if not isinstance(q, dict):
            continue
        q = {k: v for k, v in q.items()
             if not (k.startswith("model.layers.") and int(k.split(".")[2]) in dense
                     and k.split(".")[3] == "mlp")}
        for k, v in list(q.items()):
            if k.startswith(src_prefix):
                for i in dense:
                    q[f"model.layers.{i}.mlp." + k[len(src_prefix):]] = v
        cfg[key] = q
    return write_checkpoint(src_dir, dst_dir, cfg, out)


def without_mlp_blocks(src_dir, dst_dir):
    """DST: SRC (nemotron_h) without its dense relu2 MLP blocks ('-' in the pattern), the blocks
    renumbered: another model, but one llama.cpp's nemotron_h_moe can hold (in a MoE file a
    block with an FFN width is MoE)."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    pattern = cfg["hybrid_override_pattern"]
    keep = [i for i, c in enumerate(pattern) if c != "-"]
    renumber = {old: new for new, old in enumerate(keep)}

    def renamed(name):
        parts = name.split(".")
        if name.startswith("backbone.layers."):
            if int(parts[2]) not in renumber:
                return None
            parts[2] = str(renumber[int(parts[2])])
        return ".".join(parts)

    out = {}
    for name in ckpt.names():
        if (new := renamed(name)) is not None:
            out[new] = (ckpt.dtype(name), np.asarray(ckpt.raw(name)))
    cfg["hybrid_override_pattern"] = "".join(pattern[i] for i in keep)
    cfg["num_hidden_layers"] = len(keep)
    for key in ("quantization", "quantization_config"):
        if isinstance(cfg.get(key), dict):
            cfg[key] = {renamed(k): v for k, v in cfg[key].items() if renamed(k) is not None}
    return write_checkpoint(src_dir, dst_dir, cfg, out)


def hunyuan_as_llamacpp(src_dir, dst_dir):
    """DST: the Hunyuan checkpoint SRC as llama.cpp's hunyuan-moe can hold it, for moex to run
    from the directory too: the shared MLP cut to its first moe_intermediate_size hidden units
    (gate_proj / up_proj rows, down_proj columns, with their MLX scales and biases) and
    intermediate_size set to that, since llama.cpp's loader sizes the experts by
    feed_forward_length, the converter's intermediate_size (another model then, but one whose
    two widths agree); the top-k renormalized (moex_renormalize_topk, moex's field: llama.cpp's
    graph and the Hugging Face model renormalize, mlx-lm's hunyuan does not); and the NTK alpha folded into
    rope_theta as the converter folds it, theta x alpha^(d / (d - 2)), rounded to float32 as the
    file stores it (a directory load would otherwise keep the double)."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    width = cfg["moe_intermediate_size"]
    width = int(width[0] if isinstance(width, list) else width)
    out = {}
    for name in ckpt.names():
        arr = np.asarray(ckpt.raw(name))
        prefix, part = name.rsplit(".", 1)
        if ".mlp.shared_mlp." in name:
            if prefix.endswith(("gate_proj", "up_proj")):
                arr = arr[:width]
            elif ckpt.is_quantized(prefix):
                bits, group = ckpt.quant_params(prefix)
                if width % group:
                    raise ValueError(f"{prefix}: width {width} is not a multiple of group {group}")
                arr = arr[:, :width * bits // 32] if part == "weight" else arr[:, :width // group]
            else:
                arr = arr[:, :width]
        out[name] = (ckpt.dtype(name), np.ascontiguousarray(arr))
    d = int(cfg["hidden_size"]) // int(cfg["num_attention_heads"])
    base = float(cfg["rope_theta"])
    if cfg.get("rope_scaling"):
        base *= float(cfg["rope_scaling"]["alpha"]) ** (d / (d - 2))
    cfg.update(intermediate_size=width, moex_renormalize_topk=True,
               rope_theta=float(np.float32(base)), rope_scaling=None)
    return write_checkpoint(src_dir, dst_dir, cfg, out)


def bailing_as_ling_lite(src_dir, dst_dir):
    """DST: the tiny Ling checkpoint SRC (which takes Ling 2.0's routing, so that each of its
    paths acts) in the shape of Ling-lite, the model llama.cpp's bailingmoe runs: softmax
    routing without the selection bias (mlp.gate.expert_bias dropped) or groups, scale 1, no
    q/k norms (query_layernorm / key_layernorm dropped), full RoPE, and every layer MoE (the
    leading dense layers dropped, the rest renumbered). norm_head and norm_topk_prob stay."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    dense = int(cfg.get("first_k_dense_replace") or 0)

    def renamed(name):
        if not name.startswith("model.layers."):
            return name
        parts = name.split(".")
        if int(parts[2]) < dense:
            return None
        parts[2] = str(int(parts[2]) - dense)
        return ".".join(parts)

    out = {}
    for name in ckpt.names():
        new = renamed(name)
        if new is None or any(s in name for s in (".attention.query_layernorm.",
                                                  ".attention.key_layernorm.",
                                                  ".mlp.gate.expert_bias")):
            continue
        out[new] = (ckpt.dtype(name), np.asarray(ckpt.raw(name)))
    for key in ("quantization", "quantization_config"):
        if isinstance(cfg.get(key), dict):
            cfg[key] = {renamed(k): v for k, v in cfg[key].items() if renamed(k) is not None}
    cfg.update(num_hidden_layers=int(cfg["num_hidden_layers"]) - dense, first_k_dense_replace=0,
               score_function="softmax", moe_router_enable_expert_bias=False, n_group=1,
               topk_group=1, routed_scaling_factor=1.0, use_qk_norm=False,
               partial_rotary_factor=1.0)
    return write_checkpoint(src_dir, dst_dir, cfg, out)


def ernie_with_correction_bias(src_dir, dst_dir, seed=0):
    """DST: the ERNIE-4.5 MoE checkpoint SRC with a correction bias in every MoE layer
    (mlp.moe_statics.e_score_correction_bias [E], float32, uniform in [-0.2, 0.2], large next to
    the softmax scores of 1/E on average, so that it changes the selection) and moex's
    route_with_correction_bias set: the Hugging Face model's routing of a moe_use_aux_free
    checkpoint, which llama.cpp runs from exp_probs_b (mlx-lm drops the bias)."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    experts = int(cfg["moe_num_experts"])
    rng = np.random.default_rng(seed)
    out = {name: (ckpt.dtype(name), np.asarray(ckpt.raw(name))) for name in ckpt.names()}
    for name in ckpt.names():
        if name.endswith(".mlp.gate.weight"):
            bias = rng.uniform(-0.2, 0.2, experts).astype(np.float32)
            out[name.replace(".mlp.gate.weight", ".mlp.moe_statics.e_score_correction_bias")] = (
                "F32", bias)
    cfg["route_with_correction_bias"] = True
    return write_checkpoint(src_dir, dst_dir, cfg, out)
