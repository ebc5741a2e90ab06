"""The reference for `moex perplexity`: mlx-lm runs the same windows of the same tokens and
writes its logits in moex's logits-file format (src/eval/logits_file.h), so that
`moex perplexity --kl-divergence OUT` compares moex with mlx-lm position by position.

The windows and tokens come from a logits file moex wrote (--tokens-from, any run's
--save-logits), so both engines score exactly the same tokens; with --text, the script also
tokenizes the text with Hugging Face `tokenizers` and says whether moex's tokens equal them.

    python mlx_perplexity.py --model DIR --tokens-from moex.logits --out mlx.logits \\
        [--dtype float32|native] [--text FILE]

--dtype float32 (default) casts the unquantized parameters to f32 (the oracle arithmetic);
native keeps the checkpoint's dtype (mlx-lm's own bf16 arithmetic, what its users get).
Prints one JSON line: perplexity, mean NLL and its standard error, tokens, seconds.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np

MAGIC = b"MOEXLGT1"
HEADER = 48


def read_header(path):
    with open(path, "rb") as f:
        head = f.read(HEADER)
        if len(head) != HEADER or head[:8] != MAGIC:
            sys.exit(f"{path}: not a moex logits file")
        version, vocab, ctx, chunks, first = struct.unpack("<5I", head[8:28])
        if version != 1:
            sys.exit(f"{path}: version {version}")
        tokens = np.frombuffer(f.read(4 * chunks * ctx), dtype="<i4")
    return vocab, ctx, chunks, first, tokens.reshape(chunks, ctx)


def write_header(f, vocab, ctx, chunks, first, tokens):
    rows = chunks * (ctx - 1 - first)
    f.write(MAGIC + struct.pack("<6I", 1, vocab, ctx, chunks, first, 0) +
            struct.pack("<2Q", rows, 0))
    f.write(np.ascontiguousarray(tokens, dtype="<i4").tobytes())


def log_softmax(rows):
    """Log-probabilities of f32 logit rows, in float64."""
    r = rows.astype(np.float64)
    top = r.max(axis=1, keepdims=True)
    return r - (top + np.log(np.exp(r - top).sum(axis=1, keepdims=True)))


def run(model_dir, tokens_from, out, dtype="float32", text="", kl_base=""):
    """The reference run; returns the result dict (the JSON line main prints)."""
    import mlx.core as mx
    from mlx.utils import tree_map
    from mlx_lm.utils import load
    mx.set_default_device(mx.cpu)
    vocab, ctx, chunks, first, windows = read_header(tokens_from)
    model, _ = load(model_dir)
    if dtype == "float32":
        # Unquantized parameters to f32; packed weights, scales and biases stay as they are.
        def cast(p):
            return p.astype(mx.float32) if p.dtype in (mx.bfloat16, mx.float16) else p
        model.update(tree_map(cast, model.parameters()))
    result = {"model": model_dir, "dtype": dtype, "ctx": ctx, "chunks": chunks}
    if text:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        ids = tok.encode(open(text, encoding="utf-8").read(), add_special_tokens=False).ids
        want = np.array(ids[:chunks * ctx], dtype=np.int32).reshape(chunks, ctx)
        result["tokens_equal_hf_tokenizers"] = bool(np.array_equal(want, windows))
    nll, kld, same = [], [], []
    base = None
    if kl_base:
        bv, bctx, bchunks, bfirst, btokens = read_header(kl_base)
        if (bv, bctx, bchunks, bfirst) != (vocab, ctx, chunks, first) or \
                not np.array_equal(btokens, windows):
            sys.exit(f"{kl_base}: other windows or tokens than {tokens_from}")
        base = open(kl_base, "rb")
        base.seek(HEADER + 4 * chunks * ctx)
    t0 = time.time()
    tmp = out + ".partial"
    with open(tmp, "wb") as f:
        write_header(f, vocab, ctx, chunks, first, windows)
        for c in range(chunks):
            logits = model(mx.array(windows[c][None]))[0].astype(mx.float32)
            try:
                rows = np.array(logits[first:ctx - 1])
            except RuntimeError as e:
                # MLX's CPU backend lacks some ops in some dtypes (gather_mm in bf16): say so.
                os.remove(tmp)
                if base is not None:
                    base.close()
                result["error"] = f"mlx-lm cannot run {model_dir} in {dtype}: {e}"
                return result
            if rows.shape[1] != vocab:
                sys.exit(f"{model_dir}: vocabulary {rows.shape[1]}, the tokens file has {vocab}")
            f.write(np.ascontiguousarray(rows, dtype="<f4").tobytes())
            logp = log_softmax(rows)
            targets = windows[c][first + 1:ctx]
            nll.extend((-logp[np.arange(len(targets)), targets]).tolist())
            if base is not None:
                b = np.frombuffer(base.read(4 * rows.size), dtype="<f4").reshape(rows.shape)
                blogp = log_softmax(b)
                kld.extend((np.exp(blogp) * (blogp - logp)).sum(axis=1).tolist())
                same.extend((b.argmax(axis=1) == rows.argmax(axis=1)).tolist())
    if base is not None:
        base.close()
    os.replace(tmp, out)
    n = len(nll)
    mean = float(np.mean(nll))
    err = float(np.std(nll, ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    result.update({"scored_tokens": n, "mean_nll": mean, "nll_stderr": err,
                   "ppl": math.exp(mean), "ppl_stderr": math.exp(mean) * err,
                   "seconds": round(time.time() - t0, 2)})
    if base is not None:
        result.update({"kld_mean": float(np.mean(kld)), "kld_p99": float(np.percentile(kld, 99)),
                       "same_top": float(np.mean(same))})
    return result



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens-from", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["float32", "native"], default="float32")
    ap.add_argument("--text", default="")
    ap.add_argument("--kl-base", default="", help="a base logits file: also report mean KL "
                    "divergence and same-top fraction against it")
    a = ap.parse_args()

    print(json.dumps(run(a.model, a.tokens_from, a.out, a.dtype, a.text, a.kl_base)))


if __name__ == "__main__":
    main()
