#!/usr/bin/env python3
"""Writes the GGUF twin of a moex / MLX checkpoint for llama.cpp: the same architecture, shapes
and weights, the MLX affine weights dequantized and requantized (4-bit -> Q4_0, 8-bit -> Q8_0;
with --type q4_k_m, q2_k, q3_k_m, q5_k_m, q6_k, q4_1, q5_1, iq4_nl or iq4_xs a bf16 intermediate,
or with --intermediate q4_0 the Q4_0 twin, is handed to llama-quantize, which gguf-py cannot do).

usage: gguf_twin.py CHECKPOINT_DIR OUT.gguf [--type q4_0|q4_k_m|...] [--llama-quantize BIN]

Beside OUT.gguf it writes OUT.gguf.json: the source, the tensor types, bits per weight on both
sides and the bytes a decode step reads (one embedding row, everything else dense, top_k of the
experts), computed the same way for the checkpoint and for the twin.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlx_checkpoint import Checkpoint  # noqa: E402
from twin_families import (BARE_TENSORS, EXPERT_TENSORS, NEXTN_TENSORS, T, Unsupported,  # noqa: E402
                           check_expressible, family_of, gguf_name, lfm2_attention_layers,
                           llama3_rope_factors, tensor_table, text_config, uniform)
from twin_metadata import (add_arch_metadata, add_deepseek2_metadata,  # noqa: E402
                           add_glm4moe_metadata, add_yarn_metadata, rope_base)
from twin_vocab import add_vocab  # noqa: E402

Q = gguf.GGMLQuantizationType
# The archs whose loaders take token_embd when output.weight is absent (TENSOR_DUPLICATED in
# src/models/<arch>.cpp): a tied checkpoint's twin has no output.weight.
TIED_ARCHS = (gguf.MODEL_ARCH.QWEN3MOE, gguf.MODEL_ARCH.ERNIE4_5_MOE,
              gguf.MODEL_ARCH.GRANITE_MOE, gguf.MODEL_ARCH.HUNYUAN_MOE, gguf.MODEL_ARCH.LFM2MOE,
              gguf.MODEL_ARCH.QWEN3NEXT, gguf.MODEL_ARCH.QWEN35MOE)
WRITER_VERSION = 2  # bump when the output changes, so cached twins are rewritten


def source_fingerprint(ckpt_dir):
    """What the cache key hangs on: config.json and each shard's size and mtime."""
    d = Path(ckpt_dir)
    parts = [(d / "config.json").read_text()]
    for shard in sorted(d.glob("*.safetensors")):
        st = shard.stat()
        parts.append(f"{shard.name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def quant_mode(ckpt, prefix):
    """MLX's quantization mode of a quantized weight ("affine" unless the config says)."""
    q = ckpt.config.get("quantization") or ckpt.config.get("quantization_config") or {}
    own = q.get(prefix)
    return (own if isinstance(own, dict) else q).get("mode", "affine")


def twin_type(ckpt, prefix, mode):
    """The GGUF type of one tensor of the twin."""
    if not ckpt.is_quantized(prefix):
        return Q.F16 if mode == "f16" else Q.F32
    if quant_mode(ckpt, prefix) == "mxfp4":
        return Q.MXFP4  # the same codes and E8M0 scales, regrouped into ggml's blocks
    if quant_mode(ckpt, prefix) != "affine":
        raise Unsupported(f"{prefix}: mode {quant_mode(ckpt, prefix)}; the twin maps affine "
                          "and mxfp4 weights")
    bits, _ = ckpt.quant_params(prefix)
    if bits == 8:
        return Q.Q8_0
    if bits == 4:
        return Q.BF16 if mode in LLAMA_QUANTIZE_TYPES else Q.Q4_0
    raise Unsupported(f"{prefix}: {bits}-bit weights; the twin maps 4-bit (Q4_0) and 8-bit (Q8_0)")


def moex_bytes(ckpt, prefix):
    total = 0
    for part in (".weight", ".scales", ".biases"):
        if ckpt.has(prefix + part):
            total += ckpt.raw(prefix + part).nbytes
    return total


def gguf_bytes(qtype, shape):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    return int(np.prod(shape)) // block * size


class Plan:
    """Every tensor of the twin: name, source prefix, type, numpy shape, transform."""

    def __init__(self, ckpt, mode):
        self.ckpt = ckpt
        # A multimodal wrapper's text model (llama4, Qwen3.5) as one config from here on.
        ckpt.config = text_config(ckpt.config)
        cfg = self.cfg = ckpt.config
        self.model_type, self.fam = family_of(cfg)
        check_expressible(self.model_type, self.fam, cfg)
        self.n_layers = int(cfg["num_hidden_layers"])
        self.hidden = int(cfg["hidden_size"])
        self.n_head = int(cfg["num_attention_heads"])
        self.n_kv = int(cfg.get("num_key_value_heads", self.n_head))
        self.head_dim = int(cfg.get("head_dim") or self.hidden // self.n_head)
        self.n_experts = int(cfg[self.fam.n_experts_key])
        self.top_k = uniform(cfg, self.fam.top_k_key)
        self.vocab = int(cfg["vocab_size"])
        self.rows = []
        seen = set()
        # GLM-4.5's multi-token-prediction module, kept by `moex convert --keep-mtp`: llama.cpp's
        # converter stores it as one more block (its decoder layer) plus blk.N.nextn.*.
        self.nextn = int(self.fam.arch == gguf.MODEL_ARCH.GLM4_MOE
                         and int(cfg.get("num_nextn_predict_layers") or 0) > 0
                         and ckpt.has(f"model.layers.{self.n_layers}.enorm.weight"))
        table = tensor_table(self.fam, self.n_layers + self.nextn)
        if self.nextn:
            pre = f"model.layers.{self.n_layers}."
            table += [(pre + name, t, self.n_layers) for name, t in NEXTN_TENSORS.items()]
        for prefix, tensor, layer in table:
            if tensor in BARE_TENSORS and ckpt.has(prefix):
                self._add(prefix, "", tensor, layer, mode)
                seen.add(prefix)
                continue
            if not (ckpt.has(prefix + ".weight")):
                continue
            if tensor == T.ATTN_KV_B:
                self._add_kv_b(prefix, layer, mode)
            elif tensor == T.ATTN_QKV and prefix.endswith("linear_attn.in_proj_qkvz"):
                self._add_qkvz(prefix, layer, mode)
            elif tensor == T.ATTN_QKV and prefix.endswith("attention.query_key_value"):
                self._add_qkv_split(prefix, layer, mode)
            else:
                self._add(prefix, ".weight", tensor, layer, mode)
            seen.add(prefix + ".weight")
            for part in (".scales", ".biases"):
                if ckpt.has(prefix + part):
                    seen.add(prefix + part)
            if ckpt.has(prefix + ".bias"):
                self._add(prefix, ".bias", tensor, layer, mode)
                seen.add(prefix + ".bias")
        left = [n for n in ckpt.names() if n not in seen]
        if left:
            raise Unsupported(f"{ckpt.dir}: tensors with no place in the {self.fam.arch.name} "
                              f"twin: {', '.join(left[:8])}{' ...' if len(left) > 8 else ''}")
        if self.fam.arch == gguf.MODEL_ARCH.LLAMA4 and cfg.get("rope_scaling"):
            # LlamaModel.generate_extra_tensors: llama3 scaling as per-pair factors
            self.rows.append(dict(name="rope_freqs.weight", prefix="rope_freqs", part="",
                                  tensor=T.ROPE_FREQS, qtype=Q.F32, shape=(self.head_dim // 2,),
                                  permute=0, tied_copy=False, moex_bytes=0,
                                  data=llama3_rope_factors(cfg, self.head_dim)))
        names = {r["name"] for r in self.rows}
        has_output = gguf_name(T.OUTPUT) + ".weight" in names
        if not has_output and self.fam.arch not in TIED_ARCHS:
            # olmoe / qwen2moe / llama want output.weight: a tied checkpoint gets a copy.
            embd = next(r for r in self.rows if r["tensor"] == T.TOKEN_EMBD)
            self.rows.append(dict(embd, name=gguf_name(T.OUTPUT) + ".weight", tensor=T.OUTPUT,
                                  tied_copy=True))

    def _add(self, prefix, part, tensor, layer, mode):
        ckpt = self.ckpt
        if part in (".bias", ""):
            shape, qtype = ckpt.raw(prefix + part).shape, Q.F32
            if tensor in (T.SSM_A, T.SSM_D) and self.fam.arch == gguf.MODEL_ARCH.NEMOTRON_H_MOE:
                shape = (shape[0], 1)  # Mamba2Model unsqueezes A and D
        else:
            qtype = twin_type(ckpt, prefix, mode)
            shape = ckpt.raw(prefix + ".weight").shape
            if ckpt.is_quantized(prefix):
                bits, _ = ckpt.quant_params(prefix)
                shape = shape[:-1] + (shape[-1] * 32 // bits,)
            if tensor == T.FFN_GATE_INP_SHEXP:   # [1, hidden] in MLX, {n_embd} in llama.cpp
                shape, qtype = (shape[-1],), Q.F32
            if tensor == T.SSM_CONV1D:  # MLX [C, L, 1], squeezed by the converter; kept F32
                shape, qtype = shape[:2], Q.F32
            if tensor == T.SSM_NORM and self.fam.arch == gguf.MODEL_ARCH.NEMOTRON_H_MOE:
                groups = int(self.ckpt.config["n_groups"])  # Mamba2Model's reshape
                shape, qtype = (groups, shape[0] // groups), Q.F32  # a "_norm.weight": F32
            if tensor == T.SHORTCONV_CONV:  # [H, L, 1] -> [H, L]; F32 as the converter writes
                shape, qtype = tuple(shape[:2]), Q.F32
        if len(shape) == 1:
            qtype = Q.F32
        if tensor == T.FFN_EXP_PROBS_B and self.fam.arch == gguf.MODEL_ARCH.ERNIE4_5_MOE:
            # The converter writes the Hugging Face parameter [1, E] as it is; moex's directory
            # load reads the bias only with route_with_correction_bias (mlx-lm drops it).
            if not self.ckpt.config.get("route_with_correction_bias"):
                raise Unsupported(f"{prefix}: llama.cpp adds the correction bias to the "
                                  "selection; moex's directory load does only with "
                                  "route_with_correction_bias (set it to compare)")
            shape = (1,) + tuple(shape)
        permute = 0
        if self.fam.permute_qk and tensor in (T.ATTN_Q, T.ATTN_K):
            permute = self.n_head if tensor == T.ATTN_Q else self.n_kv
        suffix = part or BARE_TENSORS[tensor]
        self.rows.append(dict(name=gguf_name(tensor, layer) + suffix, prefix=prefix,
                              part=part,
                              tensor=tensor, qtype=qtype, shape=tuple(shape), permute=permute,
                              tied_copy=False,
                              moex_bytes=moex_bytes(ckpt, prefix) if part == ".weight" else
                              ckpt.raw(prefix + part).nbytes))

    def _add_kv_b(self, prefix, layer, mode):
        """deepseek2's kv_b_proj [heads * (nope + v), latent] as the converter writes it: per
        head the nope key rows, transposed, as attn_k_b [heads, latent, nope], and the value
        rows as attn_v_b [heads, v, latent]. attn_k_b runs along nope, across the checkpoint's
        quantization groups, so a quantized twin keeps it F32 (moex's directory load
        dequantizes those rows to f32 too); attn_v_b keeps the rows and their groups."""
        cfg, ckpt = self.ckpt.config, self.ckpt
        nope, v, latent = (int(cfg["qk_nope_head_dim"]), int(cfg["v_head_dim"]),
                           int(cfg["kv_lora_rank"]))
        qtype = twin_type(ckpt, prefix, mode)
        size = moex_bytes(ckpt, prefix)
        for half, tensor, shape in (("k", T.ATTN_K_B, (self.n_head, latent, nope)),
                                    ("v", T.ATTN_V_B, (self.n_head, v, latent))):
            t = Q.F32 if half == "k" and qtype not in (Q.F32, Q.F16, Q.BF16) else qtype
            self.rows.append(dict(name=gguf_name(tensor, layer) + ".weight", prefix=prefix,
                                  part=".weight", tensor=tensor, qtype=t, shape=shape,
                                  permute=0, tied_copy=False, kv_b=(half, nope, v, latent),
                                  moex_bytes=size * (nope if half == "k" else v) // (nope + v)))

    def _add_qkvz(self, prefix, layer, mode):
        """Qwen3-Next's in_proj_qkvz as Qwen3NextModel.modify_tensors writes it: the rows of each
        key head's group [q, k, v (r value heads), z (r value heads)] regrouped into attn_qkv
        [q of all heads; k of all; v of all] and attn_gate [z of all]. Whole rows move, so a
        quantized tensor keeps its groups."""
        cfg, ckpt = self.ckpt.config, self.ckpt
        kh, vh = int(cfg["linear_num_key_heads"]), int(cfg["linear_num_value_heads"])
        dk, dv = int(cfg["linear_key_head_dim"]), int(cfg["linear_value_head_dim"])
        qtype = twin_type(ckpt, prefix, mode)
        size = moex_bytes(ckpt, prefix)
        qkv_rows, z_rows = 2 * kh * dk + vh * dv, vh * dv
        for half, tensor, rows in (("qkv", T.ATTN_QKV, qkv_rows), ("z", T.ATTN_GATE, z_rows)):
            self.rows.append(dict(name=gguf_name(tensor, layer) + ".weight", prefix=prefix,
                                  part=".weight", tensor=tensor, qtype=qtype,
                                  shape=(rows, self.hidden), permute=0, tied_copy=False,
                                  qkvz=(half, kh, dk, vh // kh * dv),
                                  moex_bytes=size * rows // (qkv_rows + z_rows)))

    def _add_qkv_split(self, prefix, layer, mode):
        """bailing_moe's query_key_value [(heads + 2 kv) * head_dim, hidden] as the converter
        writes it: its q, k and v row ranges as attn_q / attn_k / attn_v, q and k permuted for
        RoPE NORM (the rows keep their quantization groups)."""
        qtype = twin_type(self.ckpt, prefix, mode)
        size = moex_bytes(self.ckpt, prefix)
        q, kv = self.n_head * self.head_dim, self.n_kv * self.head_dim
        total = q + 2 * kv
        for tensor, start, rows, heads in ((T.ATTN_Q, 0, q, self.n_head),
                                           (T.ATTN_K, q, kv, self.n_kv),
                                           (T.ATTN_V, q + kv, kv, 0)):
            self.rows.append(dict(name=gguf_name(tensor, layer) + ".weight", prefix=prefix,
                                  part=".weight", tensor=tensor, qtype=qtype,
                                  shape=(rows, self.hidden), permute=heads, tied_copy=False,
                                  qkv_rows=(start, start + rows),
                                  moex_bytes=size * rows // total))

    def values(self, row, index=None):
        """The float32 values of one twin tensor (one expert of it when index is given)."""
        ckpt = self.ckpt
        if row.get("data") is not None:
            w = row["data"]
        elif row["part"] in (".bias", ""):
            w = ckpt.float(row["prefix"] + row["part"])
        else:
            w = ckpt.dequantize(row["prefix"], index)
        if row.get("kv_b"):
            half, nope, v, latent = row["kv_b"]
            w = w.reshape(self.n_head, nope + v, latent)
            w = w[:, :nope, :].transpose(0, 2, 1) if half == "k" else w[:, nope:, :]
        if row.get("qkvz"):
            half, kh, dk, rv = row["qkvz"]
            g = w.reshape(kh, 2 * dk + 2 * rv, w.shape[-1])
            parts = ([g[:, :dk], g[:, dk:2 * dk], g[:, 2 * dk:2 * dk + rv]] if half == "qkv"
                     else [g[:, 2 * dk + rv:]])
            w = np.concatenate([p.reshape(-1, w.shape[-1]) for p in parts])
        if row.get("qkv_rows"):
            w = w[row["qkv_rows"][0]:row["qkv_rows"][1]]
        if row["tensor"] == T.OUTPUT and self.normalized_head(row):
            w = columns_normalized(w)
        if row["tensor"] in (T.SSM_CONV1D, T.SSM_NORM, T.SSM_A, T.SSM_D) and row["part"] != ".bias":
            w = w.reshape(row["shape"])
        if row["tensor"] == T.SSM_A:
            # The converter's -exp(A_log), here evaluated in float64 and rounded once to
            # float32 (the correctly rounded value).
            w = -np.exp(w.astype(np.float64))
        if row["tensor"] in (T.FFN_GATE_INP_SHEXP, T.SHORTCONV_CONV):
            w = w.reshape(row["shape"])
        if self.fam.arch == gguf.MODEL_ARCH.QWEN35MOE:
            w = self.tiled_v_heads(row["tensor"], w)
        if row["permute"]:
            w = permute_rope_rows(w, row["permute"])
        if row["tensor"] == T.FFN_EXP_PROBS_B:
            w = np.reshape(w, row["shape"])  # ERNIE's [1, E]
        return np.ascontiguousarray(w, dtype=np.float32)

    def tiled_v_heads(self, tensor, w):
        """_LinearAttentionVReorderBase.modify_tensors (conversion/qwen.py): with more value
        heads than key heads, every per-value-head row (qkv's v part, z, b, a, the conv's v
        channels), element (A, dt_bias) and out_proj column moves from the grouped order (value
        head j of key head g at g r + j) to the tiled one (at j Hk + g)."""
        cfg = self.ckpt.config
        kh, vh = int(cfg["linear_num_key_heads"]), int(cfg["linear_num_value_heads"])
        dk, dv = int(cfg["linear_key_head_dim"]), int(cfg["linear_value_head_dim"])
        if kh == vh:
            return w
        lead, unit, axis = {T.ATTN_QKV: (2 * kh * dk, dv, 0), T.SSM_CONV1D: (2 * kh * dk, dv, 0),
                            T.ATTN_GATE: (0, dv, 0), T.SSM_BETA: (0, 1, 0),
                            T.SSM_ALPHA: (0, 1, 0), T.SSM_A: (0, 1, 0), T.SSM_DT: (0, 1, 0),
                            T.SSM_OUT: (0, dv, 1)}.get(tensor, (None, 0, 0))
        if lead is None:
            return w
        w = np.moveaxis(w, axis, 0)
        head, tail = w[:lead], w[lead:]
        tail = tail.reshape(kh, vh // kh, unit, *tail.shape[1:]).swapaxes(0, 1)
        w = np.concatenate([head, tail.reshape(-1, *head.shape[1:])])
        return np.ascontiguousarray(np.moveaxis(w, 0, axis))

    def normalized_head(self, row):
        """bailing_moe's norm_head on a float head: BailingMoeModel.modify_tensors divides it
        as it converts. A quantized head was normalized before it was quantized (moex's
        make-model and mlx_lm convert), and moex's directory load reads it as it is."""
        return (self.model_type == "bailing_moe" and bool(self.ckpt.config.get("norm_head"))
                and not row["tied_copy"] and not self.ckpt.is_quantized(row["prefix"]))

    def mxfp4_blocks(self, row, index=None):
        """An mxfp4 weight's codes and scales as ggml MXFP4 blocks, bytes as they are: per 32
        elements the E8M0 byte, then 16 bytes whose low nibble is element j and high nibble
        element j + 16 (ggml-common.h block_mxfp4). MLX packs 8 codes per uint32, LSB first."""
        from mlx_checkpoint import unpack
        packed = np.asarray(self.ckpt.raw(row["prefix"] + ".weight"))
        scales = np.asarray(self.ckpt.raw(row["prefix"] + ".scales"))
        if index is not None:
            packed, scales = packed[index], scales[index]
        codes = unpack(packed, 4)
        codes = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 32, 32)
        qs = codes[..., :16] | (codes[..., 16:] << 4)
        blocks = np.concatenate([scales[..., None].astype(np.uint8), qs.astype(np.uint8)], -1)
        return blocks.reshape(*blocks.shape[:-2], blocks.shape[-2] * 17)

    def encoded(self, row):
        """The bytes of one twin tensor as numpy (uint8 for quantized types)."""
        qtype = row["qtype"]
        if qtype == Q.MXFP4:
            return self.mxfp4_blocks(row)
        if row["tensor"] in EXPERT_TENSORS and row["part"] == ".weight":
            return np.stack([encode(self.values(row, e), qtype) for e in range(row["shape"][0])])
        return encode(self.values(row), qtype)


def columns_normalized(w):
    """w [vocab, hidden] with each column divided by its L2 norm + 1e-7, in float32, the
    squares summed row after row: the converter's division (torch.norm over dim 0), in the
    summation order of MLX's CPU reduction, which moex's directory load also takes."""
    w = np.asarray(w, dtype=np.float32)
    sums = np.zeros(w.shape[1], dtype=np.float32)
    for r in range(w.shape[0]):
        sums += w[r] * w[r]
    return w / (np.sqrt(sums) + np.float32(1e-7))


def permute_rope_rows(w, n_heads):
    """HF rotate-half q/k rows -> the interleaved pairs of llama.cpp's RoPE NORM (llama arch):
    within a head, new row 2i+a is old row a*head_dim/2+i."""
    lead = w.shape[:-1] if w.ndim > 1 else ()
    rows = w.shape[0]
    head_dim = rows // n_heads
    rest = w.shape[1:]
    return (w.reshape(n_heads, 2, head_dim // 2, *rest).swapaxes(1, 2).reshape(rows, *rest)
            if lead else w.reshape(n_heads, 2, head_dim // 2).swapaxes(1, 2).reshape(rows))


def encode(values, qtype):
    if qtype == Q.F32:
        return values.astype(np.float32)
    if qtype == Q.BF16:
        return gguf.quants.quantize(values, Q.BF16)
    return gguf.quants.quantize(values, qtype)


def add_metadata(writer, plan, file_type):
    cfg = plan.cfg
    writer.add_name(f"moex twin of {plan.ckpt.dir.name}")
    writer.add_context_length(int(cfg.get("max_position_embeddings", 4096)))
    writer.add_embedding_length(plan.hidden)
    writer.add_block_count(plan.n_layers + plan.nextn)
    if plan.nextn:
        writer.add_nextn_predict_layers(plan.nextn)
    # Llama4Model swaps the widths: feed_forward_length is the dense layers' intermediate_size_mlp.
    writer.add_feed_forward_length(int(cfg.get("intermediate_size_mlp") or
                                       cfg.get("intermediate_size") or
                                       uniform(cfg, plan.fam.expert_dff_key)))
    if (plan.fam.expert_dff_key != "intermediate_size"
            or plan.fam.arch in (gguf.MODEL_ARCH.GPT_OSS, gguf.MODEL_ARCH.LLAMA4,
                                 gguf.MODEL_ARCH.MINIMAXM2)):
        writer.add_expert_feed_forward_length(uniform(cfg, plan.fam.expert_dff_key))
    if plan.fam.arch == gguf.MODEL_ARCH.QWEN2MOE:
        writer.add_expert_shared_feed_forward_length(int(cfg["shared_expert_intermediate_size"]))
    writer.add_head_count(plan.n_head)
    if plan.fam.arch == gguf.MODEL_ARCH.DEEPSEEK2:
        add_deepseek2_metadata(writer, plan, cfg)
    else:
        if plan.fam.arch == gguf.MODEL_ARCH.LFM2MOE:  # 0 for the short-convolution layers
            attn = lfm2_attention_layers(cfg)
            writer.add_head_count_kv([plan.n_kv if i in attn else 0
                                      for i in range(plan.n_layers)])
        else:
            writer.add_head_count_kv(plan.n_kv)
        writer.add_key_length(plan.head_dim)
        writer.add_value_length(plan.head_dim)
    if plan.fam.arch == gguf.MODEL_ARCH.GLM4_MOE:
        add_glm4moe_metadata(writer, plan, cfg)
    elif plan.fam.arch == gguf.MODEL_ARCH.GPT_OSS:
        writer.add_sliding_window(int(cfg["sliding_window"]))
        add_yarn_metadata(writer, cfg)
    elif plan.fam.arch == gguf.MODEL_ARCH.MINIMAXM2:
        writer.add_rope_dimension_count(int(cfg["rotary_dim"]))
    elif plan.fam.arch not in (gguf.MODEL_ARCH.DEEPSEEK2, gguf.MODEL_ARCH.QWEN3NEXT,
                               gguf.MODEL_ARCH.QWEN35MOE):
        writer.add_rope_dimension_count(plan.head_dim)
    add_arch_metadata(writer, plan, cfg)
    writer.add_rope_freq_base(rope_base(plan, cfg))
    # lfm2moe names it norm_eps, nemotron_h layer_norm_epsilon.
    eps = cfg.get("rms_norm_eps", cfg.get("norm_eps", cfg.get("layer_norm_epsilon", 1e-6)))
    writer.add_layer_norm_rms_eps(float(eps))
    writer.add_expert_count(plan.n_experts)
    writer.add_expert_used_count(plan.top_k)
    writer.add_vocab_size(plan.vocab)
    writer.add_file_type(file_type)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)


def write_gguf(plan, path, file_type, progress, vocab=None):
    writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[plan.fam.arch])
    add_metadata(writer, plan, file_type)
    (vocab or add_vocab)(writer, plan.ckpt.dir, plan.cfg)
    for row in plan.rows:
        if row["qtype"] == Q.F32:
            writer.add_tensor_info(row["name"], row["shape"], np.dtype(np.float32),
                                   gguf_bytes(Q.F32, row["shape"]))
        else:
            byte_shape = gguf.quant_shape_to_byte_shape(row["shape"], row["qtype"])
            writer.add_tensor_info(row["name"], byte_shape, np.dtype(np.uint8),
                                   gguf_bytes(row["qtype"], row["shape"]), raw_dtype=row["qtype"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    start = time.monotonic()
    for i, row in enumerate(plan.rows):
        writer.write_tensor_data(plan.encoded(row))
        if progress:
            print(f"\r  gguf_twin: {i + 1}/{len(plan.rows)} tensors, "
                  f"{time.monotonic() - start:.0f} s", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    writer.close()


def per_token(rows, plan, key):
    """Bytes one decode step reads: an embedding row, top_k/E of each expert tensor, the rest."""
    total = 0.0
    for row in rows:
        b = row[key]
        if row["tensor"] == T.TOKEN_EMBD:
            b = b / plan.vocab
        elif row["tensor"] in EXPERT_TENSORS:
            b = b * plan.top_k / plan.n_experts
        total += b
    return int(round(total))


def summary(plan, mode, gguf_path, fingerprint):
    rows = []
    for row in plan.rows:
        n = int(np.prod(row["shape"]))
        rows.append(dict(row, gguf_bytes=gguf_bytes(row["qtype"], row["shape"]), n_weights=n))
    quant = [r for r in rows if r["part"] == ".weight" and r["qtype"] != Q.F32]
    n_q = sum(r["n_weights"] for r in quant)
    return {
        "writer_version": WRITER_VERSION, "type": mode, "source": str(plan.ckpt.dir),
        "fingerprint": fingerprint, "gguf": str(gguf_path),
        "arch": gguf.MODEL_ARCH_NAMES[plan.fam.arch], "model_type": plan.model_type,
        # A float checkpoint (every tensor F32) has no quantized weights: 0 on both sides.
        "bits_per_weight_moex": 8 * sum(r["moex_bytes"] for r in quant) / n_q if n_q else 0.0,
        "bits_per_weight_gguf": 8 * sum(r["gguf_bytes"] for r in quant) / n_q if n_q else 0.0,
        "bytes_per_token_moex": per_token(rows, plan, "moex_bytes"),
        "bytes_per_token_gguf": per_token(rows, plan, "gguf_bytes"),
        "tensors": [{"name": r["name"], "source": r["prefix"] + r["part"],
                     "type": r["qtype"].name, "shape": list(r["shape"]),
                     "moex_bytes": r["moex_bytes"], "gguf_bytes": r["gguf_bytes"],
                     "rope_permuted": bool(r["permute"]), "tied_copy": r["tied_copy"],
                     "kv_b_split": list(r["kv_b"]) if r.get("kv_b") else None,
                     "qkvz_split": list(r["qkvz"]) if r.get("qkvz") else None,
                     "qkv_rows": list(r["qkv_rows"]) if r.get("qkv_rows") else None,
                     "columns_normalized": r["tensor"] == T.OUTPUT and plan.normalized_head(r)}
                    for r in rows],
    }


# The twin types llama-quantize makes from a BF16 intermediate, and its name for each.
LLAMA_QUANTIZE_TYPES = {"q4_k_m": "Q4_K_M", "q2_k": "Q2_K", "q3_k_m": "Q3_K_M", "q5_k_m": "Q5_K_M",
                        "q6_k": "Q6_K", "q4_1": "Q4_1", "q5_1": "Q5_1", "iq4_nl": "IQ4_NL",
                        "iq4_xs": "IQ4_XS"}


def run_llama_quantize(binary, src, dst, qtype="Q4_K_M"):
    cmd = ["nice", "-n", "10", str(binary), "--allow-requantize", str(src), str(dst), qtype]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def twin(ckpt_dir, out, mode="q4_0", llama_quantize=None, reuse=False, progress=True, vocab=None,
         intermediate="bf16"):
    """Writes OUT (and OUT.json) unless --reuse finds a twin of the same source; returns the
    summary dict. vocab(writer, ckpt_dir, config) writes the tokenizer keys (default: the
    checkpoint's tokenizer.json as "gpt2"; twin_spm.py's for a SentencePiece vocabulary)."""
    out = Path(out)
    meta_path = Path(str(out) + ".json")
    fingerprint = source_fingerprint(ckpt_dir)
    if reuse and vocab is None and out.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if (meta.get("fingerprint") == fingerprint and meta.get("type") == mode
                and meta.get("writer_version") == WRITER_VERSION):
            return meta
    plan = Plan(Checkpoint(ckpt_dir), mode)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    if mode in ("q4_0", "f16"):  # f16: the float tensors of a float checkpoint as F16
        write_gguf(plan, tmp, gguf.LlamaFileType.MOSTLY_Q4_0 if mode == "q4_0" else
                   gguf.LlamaFileType.MOSTLY_F16, progress, vocab)
        meta = summary(plan, mode, out, fingerprint)
    elif mode in LLAMA_QUANTIZE_TYPES:
        if llama_quantize is None:
            raise ValueError(f"--type {mode} needs --llama-quantize (scripts/peers/llamacpp.sh)")
        # The intermediate llama-quantize reads: BF16 (the default: the checkpoint's values as
        # they are), or Q4_0 (a quarter of the disk, for shapes whose BF16 file does not fit:
        # llama-quantize requantizes it, so the weights are those of the Q4_0 twin, rounded
        # twice; the same types and sizes, for speed figures only).
        ftype = {"bf16": gguf.LlamaFileType.MOSTLY_BF16,
                 "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[intermediate]
        mid_plan = plan if intermediate == "bf16" else Plan(Checkpoint(ckpt_dir), "q4_0")
        mid = out.with_name(out.name + f".{intermediate}-{os.getpid()}")
        try:
            write_gguf(mid_plan, mid, ftype, progress, vocab)
            run_llama_quantize(llama_quantize, mid, tmp, LLAMA_QUANTIZE_TYPES[mode])
        finally:
            mid.unlink(missing_ok=True)
        meta = summary(plan, mode, out, fingerprint)
        meta["intermediate"] = intermediate
        retype_from_file(meta, plan, tmp)
    else:
        raise ValueError(f"--type {mode!r}: expected q4_0, f16 or one of {sorted(LLAMA_QUANTIZE_TYPES)}")
    os.replace(tmp, out)
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def retype_from_file(meta, plan, path):
    """After llama-quantize: the types and sizes the file really holds."""
    reader = gguf.GGUFReader(str(path))
    actual = {t.name: t for t in reader.tensors}
    by_name = {r["name"]: r for r in plan.rows}
    rows = []
    for entry in meta["tensors"]:
        t = actual[entry["name"]]
        entry["type"], entry["gguf_bytes"] = t.tensor_type.name, int(t.n_bytes)
        rows.append(dict(by_name[entry["name"]], gguf_bytes=int(t.n_bytes)))
    quant = [e for e in meta["tensors"] if e["type"] != "F32" and not e["source"].endswith(".bias")]
    n_q = sum(int(np.prod(e["shape"])) for e in quant)
    meta["bits_per_weight_gguf"] = 8 * sum(e["gguf_bytes"] for e in quant) / n_q
    meta["bytes_per_token_gguf"] = per_token(rows, plan, "gguf_bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--type", default="q4_0", choices=["q4_0", "f16", *LLAMA_QUANTIZE_TYPES])
    ap.add_argument("--llama-quantize", help="llama-quantize binary (for the types it makes)")
    ap.add_argument("--reuse", action="store_true", help="keep OUT if it is a twin of the same "
                    "source, type and writer version")
    ap.add_argument("--intermediate", default="bf16", choices=["bf16", "q4_0"],
                    help="the file llama-quantize reads for its types: bf16 (default) or q4_0 "
                    "(a quarter of the disk; the weights rounded twice: for speed figures)")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args()
    try:
        meta = twin(args.checkpoint, args.out, args.type, args.llama_quantize, args.reuse,
                    progress=not args.quiet, intermediate=args.intermediate)
    except (Unsupported, ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"gguf_twin: {e}", file=sys.stderr)
        return 2
    print(f"gguf_twin: {meta['gguf']} ({meta['arch']}, {meta['type']}): "
          f"{meta['bits_per_weight_gguf']:.4f} bits/weight vs moex "
          f"{meta['bits_per_weight_moex']:.4f}; bytes/token {meta['bytes_per_token_gguf']} "
          f"vs moex {meta['bytes_per_token_moex']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
