"""The multi-token-prediction (MTP) module of glm4_moe (GLM-4.5) and deepseek_v3 checkpoints in
MLX, built from mlx-lm's own decoder-layer classes: the oracle of `moex generate --spec mtp`.

mlx-lm drops the MTP layer (model.layers.N, N = num_hidden_layers) and has no MTP forward; the
composition here follows the module as vLLM's glm4_moe_mtp / deepseek_mtp run it. For a row at
position p of a token sequence t_0..t_{T-1} (p = 0..T-2):
    h = the main model's hidden state at p after its final norm
    e = layer N's embedding of t_{p+1}, zeros at p == 0 (vLLM masks position 0)
    x = eh_proj(concat([enorm(e), hnorm(h)]))          (the embedding half first)
    y = layer N's decoder layer on x at position p (causal over MTP rows 0..p, its own KV cache)
    logits = shared_head.head(shared_head.norm(y))    (they predict t_{p+2})

    oracle_logits(model_dir, ids)   -> float32 numpy [T-1, V], computed in float32
    add_random_mtp(model_dir, seed) -> adds random MTP tensors to a `moex make-model` checkpoint
"""
import dataclasses
import glob
import importlib
import json
import os
import types
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.base import create_attention_mask
from mlx_lm.models.cache import KVCache
from mlx_lm.utils import infer_quant_config, load_model

# The decoder-layer class of each family's mlx-lm module: (class name, constructor takes the
# layer index).
DECODER_CLASS = {"glm4_moe": "DecoderLayer", "deepseek_v3": "DeepseekV3DecoderLayer"}
MTP_FILE = "model-mtp.safetensors"
_classes = {}


def family_module(model_type):
    if model_type not in DECODER_CLASS:
        raise ValueError(f"MTP: model_type {model_type!r} is not one of {sorted(DECODER_CLASS)}")
    return importlib.import_module(f"mlx_lm.models.{model_type}")


class SharedHead(nn.Module):
    """`shared_head`: the final norm and (when the checkpoint has its own) the output head."""

    def __init__(self, hidden, vocab, eps, with_head):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)
        if with_head:
            self.head = nn.Linear(hidden, vocab, bias=False)


def mtp_layer_class(model_type):
    """The family's decoder layer plus the MTP pieces, so that the parameter names are those of
    the checkpoint below `model.layers.N.` (the decoder layer's own call is inherited as is)."""
    if model_type in _classes:
        return _classes[model_type]
    base = getattr(family_module(model_type), DECODER_CLASS[model_type])

    class MtpLayer(base):
        def __init__(self, args, layer_idx, with_embed=True, with_head=True):
            super().__init__(args, layer_idx)
            h, eps = args.hidden_size, args.rms_norm_eps
            self.enorm = nn.RMSNorm(h, eps=eps)
            self.hnorm = nn.RMSNorm(h, eps=eps)
            self.eh_proj = nn.Linear(2 * h, h, bias=False)
            self.shared_head = SharedHead(h, args.vocab_size, eps, with_head)
            if with_embed:
                self.embed_tokens = nn.Embedding(args.vocab_size, h)

        def predict(self, emb, hidden, mask=None, cache=None, head=None):
            """Logits of rows whose next-token embeddings are `emb` and main hidden states
            `hidden` ([B, L, H] each); `head` replaces shared_head.head when given."""
            x = self.eh_proj(mx.concatenate([self.enorm(emb), self.hnorm(hidden)], axis=-1))
            y = self(x, mask, cache)
            y = self.shared_head.norm(y)
            return (head or self.shared_head.head)(y)

    _classes[model_type] = MtpLayer
    return MtpLayer


def next_embeddings(embed, ids, start):
    """Embeddings of t_{p+1} for rows p = start..start+L-1 given ids [B, L] = t_{start+1..},
    zero on the row p == 0."""
    e = embed(ids)
    if start == 0:
        keep = (mx.arange(ids.shape[1]) > 0)[None, :, None]
        e = mx.where(keep, e, mx.zeros_like(e))
    return e


def in_layer(name, n):
    return name.startswith(f"model.layers.{n}.")


def _classes_without_mtp(config):
    """mlx-lm's model classes whose sanitize also drops layer N (deepseek_v3's drops only
    model.layers.61, the layer of the full-size model)."""
    from mlx_lm.utils import _get_classes
    model_class, args_class = _get_classes(config=config)
    n = config["num_hidden_layers"]

    class WithoutMtp(model_class):
        def sanitize(self, weights):
            weights = {k: v for k, v in weights.items() if not in_layer(k, n)}
            return super().sanitize(weights)

    return WithoutMtp, args_class


def read_tensors(model_dir):
    out = {}
    for f in sorted(glob.glob(os.path.join(model_dir, "model*.safetensors"))):
        out.update(mx.load(f))
    return out


def load(model_dir, f32=True):
    """(main model, MTP layer, config) of a checkpoint dir; float parameters cast to float32
    when f32. The main model is mlx-lm's (strict load, layer N dropped)."""
    main, config = load_model(Path(model_dir), get_model_classes=_classes_without_mtp)
    model_type = config["model_type"]
    n = config["num_hidden_layers"]
    prefix = f"model.layers.{n}."
    mtp_w = {k: v for k, v in read_tensors(model_dir).items() if k.startswith(prefix)}
    if not mtp_w:
        raise ValueError(f"{model_dir}: no MTP tensors ({prefix}*)")
    # The family's own sanitize (expert stacking, deepseek's kv_b_proj split, fp8), run on
    # layer N alone as if the model had N + 1 layers.
    args = main.args
    proxy = types.SimpleNamespace(args=dataclasses.replace(args, num_hidden_layers=n + 1))
    mtp_w = family_module(model_type).Model.sanitize(proxy, mtp_w)
    mtp_w = {k[len(prefix):]: v for k, v in mtp_w.items() if k.startswith(prefix)}
    layer = mtp_layer_class(model_type)(args, n, with_embed="embed_tokens.weight" in mtp_w,
                                        with_head="shared_head.head.weight" in mtp_w)
    quant = config.get("quantization")
    if quant:
        def predicate(p, m):
            full = prefix + p
            if full in quant:
                return quant[full]
            if not hasattr(m, "to_quantized") or f"{p}.scales" not in mtp_w:
                return False
            return infer_quant_config(p, m, mtp_w)
        nn.quantize(layer, group_size=quant["group_size"], bits=quant["bits"],
                    mode=quant.get("mode", "affine"), class_predicate=predicate)
    layer.load_weights(list(mtp_w.items()), strict=True)
    if f32:
        main.set_dtype(mx.float32)
        layer.set_dtype(mx.float32)
    mx.eval(main.parameters(), layer.parameters())
    return main, layer, config


def embed_and_head(main, layer):
    """The MTP layer's embedding and head (None: its own shared_head.head), the main model's
    where the checkpoint has none of its own."""
    embed = layer.embed_tokens if "embed_tokens" in layer else main.model.embed_tokens
    head = None if "head" in layer.shared_head else main.lm_head
    return embed, head


def mtp_logits(main, layer, ids, chunks=None):
    """MTP logits [T-1, V] (mx, float) of ids [T]. chunks=None: every row in one call without a
    cache; else a list of row counts run one after another through a KV cache."""
    ids = mx.array(np.asarray(ids, dtype=np.int32))[None]
    t = ids.shape[1]
    hidden = main.model(ids)
    embed, head = embed_and_head(main, layer)
    rows = t - 1
    if chunks is None:
        emb = next_embeddings(embed, ids[:, 1:], 0)
        mask = create_attention_mask(emb, None, return_array=True)
        return layer.predict(emb, hidden[:, :rows], mask, None, head)[0]
    if sum(chunks) != rows:
        raise ValueError(f"chunks {chunks} do not cover {rows} rows")
    cache, out, start = KVCache(), [], 0
    for n in chunks:
        emb = next_embeddings(embed, ids[:, start + 1:start + 1 + n], start)
        mask = create_attention_mask(emb, cache, return_array=True)
        out.append(layer.predict(emb, hidden[:, start:start + n], mask, cache, head)[0])
        start += n
    return mx.concatenate(out, axis=0)


def oracle_logits(model_dir, ids):
    """float32 numpy [T-1, V]: row p holds the MTP logits that predict ids[p + 2]."""
    main, layer, _ = load(model_dir)
    out = mtp_logits(main, layer, ids).astype(mx.float32)
    mx.eval(out)
    return np.array(out)


# --- Random MTP tensors for a synthetic checkpoint (`moex make-model`) ---

def _float_stats(v):
    a = np.array(v.astype(mx.float32), dtype=np.float64)
    return float(a.mean()), float(a.std())


def _random_like(rng, v, shape=None, mean=None, std=None):
    """Fresh normal values of v's dtype, with v's mean and standard deviation by default."""
    m, s = _float_stats(v)
    m = m if mean is None else mean
    s = s if std is None else std
    a = m + s * rng.standard_normal(shape or v.shape)
    return mx.array(a.astype(np.float32)).astype(v.dtype)


def _quant_params(quant, module):
    """(group_size, bits, mode) of a quantized module: its own entry in config.json's
    quantization map, else the default."""
    q = quant.get(module) if isinstance(quant.get(module), dict) else quant
    return q["group_size"], q["bits"], q.get("mode", "affine")


def _quantized(w, module):
    return f"{module}.scales" in w


def _random_quantized(rng, w, quant, src, shape=None):
    """Tensors {suffix: array} of a freshly drawn float weight, quantized as module `src` is
    (same bits, group size, mode and scale dtype), with the statistics of src's dequantized
    weight; `shape` (float shape) defaults to src's."""
    gs, bits, mode = _quant_params(quant, src)
    scales = w[f"{src}.scales"]
    dense = mx.dequantize(w[f"{src}.weight"], scales, w.get(f"{src}.biases"), group_size=gs,
                          bits=bits, mode=mode)
    fresh = _random_like(rng, dense.astype(mx.float32), shape)
    parts = mx.quantize(fresh, group_size=gs, bits=bits, mode=mode)
    out = {"weight": parts[0], "scales": parts[1].astype(scales.dtype)}
    if len(parts) > 2 and parts[2] is not None:
        out["biases"] = parts[2].astype(scales.dtype)
    return out


def add_random_mtp(model_dir, seed=0):
    """Adds an MTP layer (model.layers.N) to a checkpoint written by `moex make-model`, in a new
    file model-mtp.safetensors: layer N-1's tensors redrawn (same shapes, dtypes, quantization,
    mean and std), enorm / hnorm / shared_head.norm around 1, eh_proj random, shared_head.head
    drawn like lm_head (not equal to it), embed_tokens an exact copy of the main embedding;
    config.json gets num_nextn_predict_layers 1, and model.safetensors.index.json names the new
    file (created when missing). Returns the new tensor names."""
    cfg_path = os.path.join(model_dir, "config.json")
    config = json.load(open(cfg_path))
    family_module(config["model_type"])
    n = config["num_hidden_layers"]
    w = read_tensors(model_dir)
    if any(in_layer(k, n) for k in w) or os.path.exists(os.path.join(model_dir, MTP_FILE)):
        raise ValueError(f"{model_dir}: already has an MTP layer (model.layers.{n})")
    rng = np.random.default_rng(seed)
    quant = config.get("quantization") or {}
    src, dst = f"model.layers.{n - 1}.", f"model.layers.{n}."
    out = {}
    for k in sorted(w):
        if not k.startswith(src):
            continue
        mod, leaf = k.rsplit(".", 1)
        if _quantized(w, mod):
            if leaf == "weight":
                for suffix, v in _random_quantized(rng, w, quant, mod).items():
                    out[f"{dst}{mod[len(src):]}.{suffix}"] = v
            elif leaf not in ("scales", "biases"):
                out[dst + k[len(src):]] = _random_like(rng, w[k])
        elif mx.issubdtype(w[k].dtype, mx.floating):
            out[dst + k[len(src):]] = _random_like(rng, w[k])
        else:
            out[dst + k[len(src):]] = w[k]
    norm = w["model.norm.weight"]
    h = norm.shape[0]
    for name in ("enorm", "hnorm", "shared_head.norm"):
        out[f"{dst}{name}.weight"] = _random_like(rng, norm, mean=1.0, std=0.05)
    # eh_proj: quantized like the layers' linears when they are, with the default parameters.
    layer_quantized = any(k.startswith(src) and k.endswith(".scales") for k in w)
    eh = f"{dst}eh_proj"
    if layer_quantized:
        gs, bits, mode = _quant_params(quant, eh)
        fresh = mx.array(rng.standard_normal((h, 2 * h)).astype(np.float32) / np.sqrt(2 * h))
        parts = mx.quantize(fresh, group_size=gs, bits=bits, mode=mode)
        out[f"{eh}.weight"] = parts[0]
        sdt = w[next(k for k in w if k.startswith(src) and k.endswith(".scales"))].dtype
        out[f"{eh}.scales"] = parts[1].astype(sdt)
        if len(parts) > 2 and parts[2] is not None:
            out[f"{eh}.biases"] = parts[2].astype(sdt)
    else:
        out[f"{eh}.weight"] = _random_like(rng, norm, shape=(h, 2 * h), mean=0.0,
                                           std=1.0 / np.sqrt(2 * h))
    if _quantized(w, "lm_head"):
        for suffix, v in _random_quantized(rng, w, quant, "lm_head").items():
            out[f"{dst}shared_head.head.{suffix}"] = v
    else:
        out[f"{dst}shared_head.head.weight"] = _random_like(rng, w["lm_head.weight"])
    for k in w:
        if k.startswith("model.embed_tokens."):
            out[dst + "embed_tokens." + k[len("model.embed_tokens."):]] = w[k]
    _write_mtp(model_dir, config, out, quant, n)
    return sorted(out)


def _write_mtp(model_dir, config, out, quant, n):
    first = sorted(glob.glob(os.path.join(model_dir, "model*.safetensors")))[0]
    _, meta = mx.load(first, return_metadata=True)
    mx.save_safetensors(os.path.join(model_dir, MTP_FILE), out, metadata=meta or {})
    # moex reads only model.safetensors when the directory has one and no index
    # (io/checkpoint.cc), so the new file goes into the index, written here if there is none.
    # mlx-lm ignores the index and loads every model*.safetensors.
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        idx = json.load(open(index))
    else:
        idx = {"metadata": {"total_size": 0}, "weight_map": {}}
        for f in sorted(glob.glob(os.path.join(model_dir, "model*.safetensors"))):
            if os.path.basename(f) == MTP_FILE:
                continue
            for k, v in mx.load(f).items():
                idx["weight_map"][k] = os.path.basename(f)
                idx["metadata"]["total_size"] += v.nbytes
    idx.setdefault("weight_map", {}).update({k: MTP_FILE for k in out})
    if "total_size" in idx.get("metadata", {}):
        idx["metadata"]["total_size"] += sum(v.nbytes for v in out.values())
    with open(index, "w") as f:
        json.dump(idx, f, indent=2)
    # Per-module quantization entries of layer N-1, lm_head and the embedding carry over.
    for key in ("quantization", "quantization_config"):
        q = config.get(key)
        if not isinstance(q, dict):
            continue
        extra = {}
        for mod, v in q.items():
            if isinstance(v, (dict, bool)) and mod.startswith(f"model.layers.{n - 1}."):
                extra[f"model.layers.{n}." + mod[len(f"model.layers.{n - 1}."):]] = v
        for mod, new in (("lm_head", "shared_head.head"), ("model.embed_tokens", "embed_tokens")):
            if isinstance(q.get(mod), (dict, bool)):
                extra[f"model.layers.{n}.{new}"] = q[mod]
        q.update(extra)
    config["num_nextn_predict_layers"] = 1
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
