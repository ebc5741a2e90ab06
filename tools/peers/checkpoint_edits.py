"""Checkpoints rewritten into the form a llama.cpp arch can hold, for the GGUF tests: the model
computes the same function, so moex on the copy is compared with llama.cpp on the copy's twin.
"""
import json
from pathlib import Path

import numpy as np

from gguf_twin_test import write_safetensors
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
    dst = Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    for extra in ("tokenizer.json", "tokenizer_config.json"):
        if (Path(src_dir) / extra).is_file():
            (dst / extra).write_bytes((Path(src_dir) / extra).read_bytes())
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(dst / "model.safetensors", out)
    return dst


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
    dst = Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    for extra in ("tokenizer.json", "tokenizer_config.json"):
        if (Path(src_dir) / extra).is_file():
            (dst / extra).write_bytes((Path(src_dir) / extra).read_bytes())
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(dst / "model.safetensors", out)
    return dst


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
    dst = Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    for extra in ("tokenizer.json", "tokenizer_config.json"):
        if (Path(src_dir) / extra).is_file():
            (dst / extra).write_bytes((Path(src_dir) / extra).read_bytes())
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(dst / "model.safetensors", out)
    return dst
