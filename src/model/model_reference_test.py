#!/usr/bin/env python3
"""Reference test for `moex make-model`: every tiny preset's checkpoint loads with mlx_lm.load
(strict: every tensor present, no extra ones, shapes as the mlx-lm model expects), produces
finite, token-dependent logits, routes tokens across experts like a trained model would
(docs/background.md §5), and its tokenizer loads in transformers with the config's eos id.

usage: model_reference_test.py --moex BIN --work DIR [--preset NAME ...] [--report]
(default: every family's tiny preset, as `moex make-model --list-presets --json` lists them)
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

# transformers maps mixtral to its Mistral backend, whose probe imports tiktoken; the flag
# skips that probe (the tokenizer is a plain tokenizers BPE either way).
TOKENIZER_CONFIG = {"fix_mistral_regex": False}
SEQ = 64


# The expert count and top-k under each family's field name.
EXPERT_COUNT_FIELDS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
TOP_K_FIELDS = ("num_experts_per_tok", "moe_k", "moe_topk", "top_k_experts")


def family_field(tc, names):
    """The first of `names` the config has (hunyuan's may be a per-layer list of equal values)."""
    v = next(tc[f] for f in names if f in tc)
    return v[0] if isinstance(v, list) else v


class RouterTap:
    """Wraps a router and records its logits."""

    def __init__(self, inner, sink):
        self.inner, self.sink = inner, sink

    def __call__(self, x):
        y = self.inner(x)
        # A gate module that routes itself returns ids and scores: its logits are x times its
        # bare weight (glm4_moe's MoEGate, dots1) or its inner Linear's output (granitemoe's
        # router.layer, bailing_moe's gate.gate_proj).
        logits = y
        if isinstance(y, tuple) and hasattr(self.inner, "per_expert_scale"):
            # gemma4_text's Router: proj of the residual RMSNorm'd with scale * hidden^-0.5.
            import mlx.core as mx
            r = self.inner
            logits = r.proj(mx.fast.rms_norm(x, r.scale * r._root_size, r.eps))
        elif isinstance(y, tuple):
            inner = getattr(self.inner, "layer", None) or getattr(self.inner, "gate_proj", None)
            logits = inner(x) if inner is not None else x @ self.inner.weight.T
        self.sink.append(logits)
        return y


def moe_blocks(model):
    """(block, router attribute name) for every MoE layer of the mlx-lm model."""
    layers = model.layers
    out = []
    for layer in layers:
        # gemma4_text: the experts and their router sit on the layer itself, beside its mlp.
        if hasattr(layer, "experts") and "router" in layer:
            out.append((layer, "router"))
            continue
        for ff_name in ("mlp", "block_sparse_moe", "feed_forward"):
            ff = getattr(layer, ff_name, None)
            if ff is None:
                continue
            for r in ("gate", "router"):
                if hasattr(ff, "switch_mlp") or hasattr(ff, "experts"):
                    if r in ff:
                        out.append((ff, r))
    return out


def route_stats(model, cfg, ids):
    """Per MoE layer: fraction of experts used over the sequence and the mean overlap
    (Jaccard) of consecutive tokens' expert sets."""
    import mlx.core as mx

    blocks = moe_blocks(model)
    taps = []
    for ff, r in blocks:
        sink = []
        setattr(ff, r, RouterTap(getattr(ff, r), sink))
        taps.append(sink)
    tc = cfg.get("text_config", cfg)
    k = family_field(tc, TOP_K_FIELDS)
    logits = model(mx.array([ids]))
    mx.eval(logits)
    for (ff, r), sink in zip(blocks, taps):
        setattr(ff, r, getattr(ff, r).inner)
    stats = []
    for sink in taps:
        l = np.array(sink[0].astype(mx.float32)).reshape(-1, sink[0].shape[-1])
        sel = np.argsort(-l, axis=-1)[:, :k]
        e = l.shape[-1]
        used = len(np.unique(sel)) / e
        sets = [set(s) for s in sel]
        jac = np.mean([len(a & b) / len(a | b) for a, b in zip(sets, sets[1:])])
        counts = np.bincount(sel.ravel(), minlength=e)
        stats.append((used, jac, counts.max() / counts.sum()))
    return np.array(logits.astype(mx.float32))[0], stats


def check(moex, work, preset, report):
    import mlx_lm
    from transformers import AutoTokenizer

    d = Path(work) / preset
    subprocess.run([moex, "make-model", "--preset", preset, "--out", str(d), "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    cfg = json.loads((d / "config.json").read_text())
    tc = cfg.get("text_config", cfg)
    model, tok = mlx_lm.load(str(d), tokenizer_config=TOKENIZER_CONFIG)
    rng = np.random.default_rng(0)
    ids = [int(i) for i in rng.integers(0, tc["vocab_size"] - 3, SEQ)]
    logits, stats = route_stats(model, cfg, ids)
    errors = []
    if not np.isfinite(logits).all():
        errors.append("non-finite logits")
    argmax = logits.argmax(-1)
    distinct = len(set(argmax.tolist())) / SEQ
    spread = float(np.std(logits, axis=0).mean() / (np.std(logits) + 1e-30))
    e = family_field(tc, EXPERT_COUNT_FIELDS)
    k = family_field(tc, TOP_K_FIELDS)
    uniform_jaccard = k / (2 * e - k)  # expected overlap of two independent random k-sets ~
    for i, (used, jac, top_share) in enumerate(stats):
        if report:
            print(f"  {preset} moe layer {i}: experts used {used:.2f}, consecutive-token "
                  f"overlap {jac:.2f} (random ~{uniform_jaccard:.2f}), busiest expert "
                  f"{top_share:.2f} of selections (uniform {1 / e:.2f})")
        if used < 0.75:
            errors.append(f"moe layer {i}: only {used:.0%} of the experts used over {SEQ} tokens")
        if jac > 0.6:
            errors.append(f"moe layer {i}: consecutive tokens share {jac:.0%} of their experts")
        if top_share > 3.0 / e:
            errors.append(f"moe layer {i}: one expert takes {top_share:.0%} of the selections")
    if report:
        print(f"  {preset}: argmax distinct over positions {distinct:.2f}, "
              f"per-position logit spread ratio {spread:.2f}")
    if distinct < 0.5:
        errors.append(f"logits degenerate: only {distinct:.0%} distinct argmax over {SEQ} positions")
    # The tokenizer, through transformers directly.
    t = AutoTokenizer.from_pretrained(str(d), **TOKENIZER_CONFIG)
    enc = t.encode("Hello, how are you today?")
    if not enc or max(enc) >= tc["vocab_size"]:
        errors.append(f"tokenizer ids out of range: {enc}")
    eos = cfg.get("eos_token_id")
    if t.eos_token_id != eos:
        errors.append(f"tokenizer eos {t.eos_token_id} != config eos_token_id {eos}")
    return errors


def family_presets(moex):
    """The tiny preset of every registered family (src/model/arch/families.def), from the binary."""
    out = subprocess.run([moex, "make-model", "--list-presets", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return [p["name"] for p in json.loads(out) if p["family_test"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--preset", action="append")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    failed = False
    presets = a.preset or family_presets(a.moex)
    if not presets:
        sys.exit("model_reference_test: the binary lists no family presets")
    for p in presets:
        errs = check(a.moex, a.work, p, a.report)
        print(f"{p}: {'ok' if not errs else 'FAILED'}")
        for e in errs:
            print(f"  - {e}")
        failed |= bool(errs)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
