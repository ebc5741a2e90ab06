#!/usr/bin/env python3
"""Measures each CPU precision tier's logits error against mlx-lm, beside what MLX itself loses
by running the same checkpoint with bf16 activations (src/kernels/README.md, precision tiers).

For every model directory: mlx-lm in float32 decodes the prompt greedily for --steps tokens
(the reference, as parity.py); moex decodes the same prompt at --precision fast, standard and
exact; and mlx-lm with the model cast to bfloat16 runs the reference's token sequence
(teacher forced, one forward pass). Each line gives the worst per-step logits normalized RMS
against the reference and whether moex's greedy tokens equal the reference's.

usage: precision_tiers.py MOEX DIR... [--prompt-ids 3,14,...] [--steps 32] [--out FILE.json]
"""
import argparse
import json
import os
import sys

import mlx.core as mx
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity import (errors_until_divergence, load_model, moex_dump_logits,  # noqa: E402
                    mlx_run, nrms)  # (the parity test's reference and moex run)

TIERS = ("fast", "standard", "exact")


def bf16_logits(model_dir, ids, ref_toks):
    """mlx-lm's logits with the model in bfloat16, on the reference's tokens."""
    from pathlib import Path
    model, _ = load_model(Path(model_dir))
    model.set_dtype(mx.bfloat16)
    seq = ids + ref_toks[:-1]
    out = model(mx.array([seq]))[0].astype(mx.float32)
    return np.array(out[len(ids) - 1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--prompt-ids", default="3,14,15,92,65,35,89,79,32,38,46,26,43")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    ids = [int(x) for x in a.prompt_ids.split(",")]
    rows = []
    for model in a.models:
        ref, ref_toks = mlx_run(model, ids, a.steps, False)
        row = {"model": os.path.basename(model.rstrip("/"))}
        for tier in TIERS:
            got, toks, _ = moex_dump_logits(a.moex, model, a.prompt_ids, a.steps,
                                            ["--precision", tier])
            errs, same = errors_until_divergence(got, toks, ref, ref_toks)
            row[tier] = max(errs)
            row[tier + "_tokens_identical"] = same
        b = bf16_logits(model, ids, ref_toks)
        row["mlx_bf16"] = max(nrms(b[s], ref[s]) for s in range(ref.shape[0]))
        rows.append(row)
        print(f"{row['model']:40s} fast {row['fast']:.2e}{'' if row['fast_tokens_identical'] else '*'}"
              f"  standard {row['standard']:.2e}{'' if row['standard_tokens_identical'] else '*'}"
              f"  exact {row['exact']:.2e}{'' if row['exact_tokens_identical'] else '*'}"
              f"  mlx-bf16 {row['mlx_bf16']:.2e}", flush=True)
    print("(* greedy tokens differ from mlx-lm float32; the error is over the steps before)")
    if a.out:
        with open(a.out + ".tmp", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
