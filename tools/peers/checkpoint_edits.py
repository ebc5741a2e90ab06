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


def with_shared_mlp_width(src_dir, dst_dir, width):
    """DST: SRC (a Hunyuan checkpoint) with its shared MLP cut to its first `width` hidden units
    (gate_proj / up_proj rows, down_proj columns, with their MLX scales and biases; `width` a
    multiple of the quantization group) and intermediate_size = width. Another model, but one
    whose shared MLP is as wide as its experts: llama.cpp's hunyuan-moe loader sizes the
    experts by feed_forward_length, the converter's intermediate_size (the shared width), so a
    checkpoint whose two widths differ has no llama.cpp form."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
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
    cfg["intermediate_size"] = width
    dst = Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    for extra in ("tokenizer.json", "tokenizer_config.json"):
        if (Path(src_dir) / extra).is_file():
            (dst / extra).write_bytes((Path(src_dir) / extra).read_bytes())
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(dst / "model.safetensors", out)
    return dst
