"""The multi-token-prediction (MTP) module of glm4_moe (GLM-4.5), deepseek_v3, qwen3_next
(Qwen3-Next) and qwen3_5_moe (Qwen3.5) checkpoints in MLX, built from mlx-lm's own decoder-layer
classes: the oracle of `moex generate --spec mtp`.

mlx-lm drops the MTP module and has no MTP forward; the composition here follows the module as
vLLM's glm4_moe_mtp / deepseek_mtp / qwen3_next_mtp / qwen3_5_mtp run it. For a row at position
p of a token sequence t_0..t_{T-1} (p = 0..T-2):
    h = the main model's hidden state at p after its final norm
    e = the embedding of t_{p+1} (the module's copy where it has one); zeros at p == 0 for
        glm4_moe and deepseek_v3 (vLLM masks position 0 there, not for Qwen)
    x = eh_proj(concat([enorm(e), hnorm(h)]))          (the embedding half first)
    y = the module's decoder layer on x at position p (causal over MTP rows 0..p, own KV cache)
    logits = head(norm(y))                             (they predict t_{p+2})
GLM / DeepSeek store it as layer N (model.layers.N.*, N = num_hidden_layers: enorm, hnorm,
eh_proj, shared_head.norm, shared_head.head); Qwen as mtp.* (pre_fc_norm_embedding,
pre_fc_norm_hidden, fc, layers.0: a full-attention layer of the family, norm) with the main
embedding and head.

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

# The decoder-layer class of each family: (mlx-lm module, class name); its constructor takes
# the args and the layer index.
DECODER_CLASS = {"glm4_moe": ("glm4_moe", "DecoderLayer"),
                 "deepseek_v3": ("deepseek_v3", "DeepseekV3DecoderLayer"),
                 "qwen3_next": ("qwen3_next", "Qwen3NextDecoderLayer"),
                 "qwen3_5_moe": ("qwen3_5", "DecoderLayer")}
# Families that store the module under mtp.* (the rest: as layer N).
MTP_PREFIX = {"qwen3_next", "qwen3_5_moe"}
MTP_FILE = "model-mtp.safetensors"
_classes = {}


def family_module(model_type):
    if model_type not in DECODER_CLASS:
        raise ValueError(f"MTP: model_type {model_type!r} is not one of {sorted(DECODER_CLASS)}")
    return importlib.import_module(f"mlx_lm.models.{model_type}")


def decoder_class(model_type):
    family_module(model_type)
    module, name = DECODER_CLASS[model_type]
    return getattr(importlib.import_module(f"mlx_lm.models.{module}"), name)


class QwenMtp(nn.Module):
    """Qwen3-Next's / Qwen3.5's module with the checkpoint's names below `mtp.`: the decoder
    layer is the family's at index 0 with every layer full attention (vLLM builds it with
    layer_type "full_attention"; the MLP follows the main rule at index 0)."""

    def __init__(self, args, model_type):
        super().__init__()
        h, eps = args.hidden_size, args.rms_norm_eps
        self.pre_fc_norm_embedding = nn.RMSNorm(h, eps=eps)
        self.pre_fc_norm_hidden = nn.RMSNorm(h, eps=eps)
        self.fc = nn.Linear(2 * h, h, bias=False)
        attention = dataclasses.replace(args, full_attention_interval=1)
        self.layers = [decoder_class(model_type)(attention, 0)]
        self.norm = nn.RMSNorm(h, eps=eps)

    def predict(self, emb, hidden, mask=None, cache=None, head=None):
        x = self.fc(mx.concatenate([self.pre_fc_norm_embedding(emb),
                                    self.pre_fc_norm_hidden(hidden)], axis=-1))
        return head(self.norm(self.layers[0](x, mask, cache)))


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
    base = decoder_class(model_type)

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


def next_embeddings(embed, ids, start, zero_first=True):
    """Embeddings of t_{p+1} for rows p = start..start+L-1 given ids [B, L] = t_{start+1..},
    zero on the row p == 0 when zero_first."""
    e = embed(ids)
    if start == 0 and zero_first:
        keep = (mx.arange(ids.shape[1]) > 0)[None, :, None]
        e = mx.where(keep, e, mx.zeros_like(e))
    return e


def in_layer(name, n):
    return name.startswith(f"model.layers.{n}.")


def text_config(config):
    return config.get("text_config") or config


def in_module(name, config):
    """Whether a tensor belongs to the MTP module (mtp.*, or layer N)."""
    if config["model_type"] in MTP_PREFIX:
        return name.startswith("mtp.")
    return in_layer(name, text_config(config)["num_hidden_layers"])


def _classes_without_mtp(config):
    """mlx-lm's model classes whose sanitize also drops the module (deepseek_v3's drops only
    model.layers.61, the layer of the full-size model; qwen3_next's drops mtp.* only from the
    Hub's layout)."""
    from mlx_lm.utils import _get_classes
    model_class, args_class = _get_classes(config=config)

    class WithoutMtp(model_class):
        def sanitize(self, weights):
            weights = {k: v for k, v in weights.items() if not in_module(k, config)}
            return super().sanitize(weights)

    return WithoutMtp, args_class


def read_tensors(model_dir):
    out = {}
    for f in sorted(glob.glob(os.path.join(model_dir, "model*.safetensors"))):
        out.update(mx.load(f))
    return out


def text_model(main):
    """The part of an mlx-lm model that holds .model (embedding, layers, final norm), .args and
    the head (Qwen3.5's language_model; the model itself elsewhere)."""
    return getattr(main, "language_model", main)


def load(model_dir, f32=True):
    """(main model, MTP module, config) of a checkpoint dir; float parameters cast to float32
    when f32. The main model is mlx-lm's (strict load, the module dropped). Qwen's module is
    read in MLX's layout (stacked experts, norms as stored)."""
    main, config = load_model(Path(model_dir), get_model_classes=_classes_without_mtp)
    model_type = config["model_type"]
    args = text_model(main).args
    if model_type in MTP_PREFIX:
        prefix = "mtp."
        mtp_w = {k[len(prefix):]: v for k, v in read_tensors(model_dir).items()
                 if k.startswith(prefix)}
        if any(".experts." in k for k in mtp_w):
            raise ValueError(f"{model_dir}: the oracle reads Qwen's module with stacked experts "
                             "(mlp.switch_mlp.*) only")
        layer = QwenMtp(args, model_type)
    else:
        n = config["num_hidden_layers"]
        prefix = f"model.layers.{n}."
        mtp_w = {k: v for k, v in read_tensors(model_dir).items() if k.startswith(prefix)}
        # The family's own sanitize (expert stacking, deepseek's kv_b_proj split, fp8), run on
        # layer N alone as if the model had N + 1 layers.
        proxy = types.SimpleNamespace(args=dataclasses.replace(args, num_hidden_layers=n + 1))
        mtp_w = family_module(model_type).Model.sanitize(proxy, mtp_w)
        mtp_w = {k[len(prefix):]: v for k, v in mtp_w.items() if k.startswith(prefix)}
        layer = mtp_layer_class(model_type)(args, n, with_embed="embed_tokens.weight" in mtp_w,
                                            with_head="shared_head.head.weight" in mtp_w)
    if not mtp_w:
        raise ValueError(f"{model_dir}: no MTP tensors ({prefix}*)")
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
    lm = text_model(main)
    if isinstance(layer, QwenMtp):
        head = lm.lm_head if "lm_head" in lm else lm.model.embed_tokens.as_linear
        return lm.model.embed_tokens, head
    embed = layer.embed_tokens if "embed_tokens" in layer else lm.model.embed_tokens
    head = None if "head" in layer.shared_head else lm.lm_head
    return embed, head


def main_hidden(main, ids):
    """The main model's final hidden states (after its final norm) of ids [B, T]."""
    return text_model(main).model(ids)


def zero_first(layer):
    return not isinstance(layer, QwenMtp)


def mtp_logits(main, layer, ids, chunks=None):
    """MTP logits [T-1, V] (mx, float) of ids [T]. chunks=None: every row in one call without a
    cache; else a list of row counts run one after another through a KV cache."""
    ids = mx.array(np.asarray(ids, dtype=np.int32))[None]
    t = ids.shape[1]
    hidden = main_hidden(main, ids)
    embed, head = embed_and_head(main, layer)
    rows = t - 1
    if chunks is None:
        emb = next_embeddings(embed, ids[:, 1:], 0, zero_first(layer))
        mask = create_attention_mask(emb, None, return_array=True)
        return layer.predict(emb, hidden[:, :rows], mask, None, head)[0]
    if sum(chunks) != rows:
        raise ValueError(f"chunks {chunks} do not cover {rows} rows")
    cache, out, start = KVCache(), [], 0
    for n in chunks:
        emb = next_embeddings(embed, ids[:, start + 1:start + 1 + n], start, zero_first(layer))
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
    """Adds an MTP module to a checkpoint written by `moex make-model`, in a new file
    model-mtp.safetensors, and names the file in model.safetensors.index.json (created when
    missing). GLM / DeepSeek (model.layers.N): layer N-1's tensors redrawn (same shapes, dtypes,
    quantization, mean and std), enorm / hnorm / shared_head.norm around 1, eh_proj random,
    shared_head.head drawn like lm_head (not equal to it), embed_tokens an exact copy of the
    main embedding; config.json gets num_nextn_predict_layers 1. Qwen: _add_random_qwen_mtp.
    Returns the new tensor names."""
    cfg_path = os.path.join(model_dir, "config.json")
    config = json.load(open(cfg_path))
    family_module(config["model_type"])
    n = text_config(config)["num_hidden_layers"]
    w = read_tensors(model_dir)
    if any(in_module(k, config) for k in w) or os.path.exists(os.path.join(model_dir, MTP_FILE)):
        raise ValueError(f"{model_dir}: already has an MTP module")
    rng = np.random.default_rng(seed)
    quant = config.get("quantization") or {}
    if config["model_type"] in MTP_PREFIX:
        return _add_random_qwen_mtp(model_dir, config, w, quant, rng)
    src, dst = f"model.layers.{n - 1}.", f"model.layers.{n}."
    out = {}
    _redraw(rng, w, quant, src, dst, out)
    norm = w["model.norm.weight"]
    for name in ("enorm", "hnorm", "shared_head.norm"):
        out[f"{dst}{name}.weight"] = _random_like(rng, norm, mean=1.0, std=0.05)
    _random_fuse(rng, w, quant, src, f"{dst}eh_proj", norm, out)
    if _quantized(w, "lm_head"):
        for suffix, v in _random_quantized(rng, w, quant, "lm_head").items():
            out[f"{dst}shared_head.head.{suffix}"] = v
    else:
        out[f"{dst}shared_head.head.weight"] = _random_like(rng, w["lm_head.weight"])
    for k in w:
        if k.startswith("model.embed_tokens."):
            out[dst + "embed_tokens." + k[len("model.embed_tokens."):]] = w[k]
    _write_mtp(model_dir, config, out, [(f"model.layers.{n - 1}.", f"model.layers.{n}."),
                                        ("lm_head", f"model.layers.{n}.shared_head.head"),
                                        ("model.embed_tokens", f"model.layers.{n}.embed_tokens")])
    config["num_nextn_predict_layers"] = 1
    _write_config(model_dir, config)
    return sorted(out)


def _redraw(rng, w, quant, src, dst, out, skip=lambda rest: False):
    """Every tensor under prefix src redrawn under dst (same shapes, dtypes, quantization, mean
    and std), but those whose name after src `skip` says."""
    for k in sorted(w):
        if not k.startswith(src) or skip(k[len(src):]):
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


def _random_fuse(rng, w, quant, src, name, norm, out):
    """The module's [H, 2H] input projection `name`, random, quantized like layer src's linears
    when they are (with the default parameters)."""
    h = norm.shape[0]
    if any(k.startswith(src) and k.endswith(".scales") for k in w):
        gs, bits, mode = _quant_params(quant, name)
        fresh = mx.array(rng.standard_normal((h, 2 * h)).astype(np.float32) / np.sqrt(2 * h))
        parts = mx.quantize(fresh, group_size=gs, bits=bits, mode=mode)
        out[f"{name}.weight"] = parts[0]
        sdt = w[next(k for k in w if k.startswith(src) and k.endswith(".scales"))].dtype
        out[f"{name}.scales"] = parts[1].astype(sdt)
        if len(parts) > 2 and parts[2] is not None:
            out[f"{name}.biases"] = parts[2].astype(sdt)
    else:
        out[f"{name}.weight"] = _random_like(rng, norm, shape=(h, 2 * h), mean=0.0,
                                             std=1.0 / np.sqrt(2 * h))


def _add_random_qwen_mtp(model_dir, config, w, quant, rng):
    """Qwen's module (mtp.*): mtp.layers.0 redrawn from the first main attention layer (its
    attention and norms) and the first main layer with the module's kind of MLP (dense where
    mlp_only_layers holds 0, as vLLM decides), pre_fc norms and norm around 1, fc random; the
    main embedding and head serve. Qwen3.5's text_config gets mtp_num_hidden_layers 1."""
    t = text_config(config)
    lm = "language_model.model." if "text_config" in config else "model."
    interval = t.get("full_attention_interval", 4)
    dense = 0 in t.get("mlp_only_layers", []) or not t.get("num_experts")
    attn = f"{lm}layers.{interval - 1}."
    mlp = f"{lm}layers.{0 if dense else interval - 1}.mlp."
    dst = "mtp.layers.0."
    out = {}
    _redraw(rng, w, quant, attn, dst, out, skip=lambda rest: rest.startswith("mlp."))
    _redraw(rng, w, quant, mlp, dst + "mlp.", out)
    norm = w[f"{lm}norm.weight"]
    for name in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        out[f"mtp.{name}.weight"] = _random_like(rng, norm, mean=1.0, std=0.05)
    _random_fuse(rng, w, quant, attn, "mtp.fc", norm, out)
    _write_mtp(model_dir, config, out, [(attn, dst), (mlp, dst + "mlp.")])
    if "text_config" in config:
        config["text_config"]["mtp_num_hidden_layers"] = 1
    _write_config(model_dir, config)
    return sorted(out)


def _write_config(model_dir, config):
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def _write_mtp(model_dir, config, out, carry):
    """Writes the module's tensors `out` to MTP_FILE and the index; config.json's quantization
    entries of modules under each (source prefix, module prefix) of `carry` are given to their
    copies (in `config`, which the caller writes)."""
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
    for key in ("quantization", "quantization_config"):
        q = config.get(key)
        if not isinstance(q, dict):
            continue
        extra = {}
        for mod, v in q.items():
            for src, dst in carry:
                if isinstance(v, (dict, bool)) and (mod == src or mod.startswith(src) and
                                                    src.endswith(".")):
                    extra[dst + mod[len(src):]] = v
        q.update(extra)
