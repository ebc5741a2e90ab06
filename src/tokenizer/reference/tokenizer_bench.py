#!/usr/bin/env python3
"""Encoding throughput, moex vs the `tokenizers` package, single thread, same run.

  python tokenizer_bench.py --moex-bench BUILD/src/tokenizer/moex_tokenizer_bench [--mb 10]
      [--tokenizer DIR ...]

Builds a deterministic mixed corpus (English, code, CJK, Arabic, Cyrillic, emoji, digits,
whitespace runs), cuts it into ~4 KB chunks at line ends, and encodes every chunk with both
(no special tokens). Default tokenizers: the real vocabularies the reference test uses when
their pip packages are installed, else trained ones. Prints MB/s side by side and checks that
both produced the same token count and checksum."""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import TEXTS  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402


def make_corpus(n_bytes, seed=1):
    rng = random.Random(seed)
    syll = ["ka", "to", "ri", "mu", "sen", "lo", "pa", "vi", "dre", "qua", "ex", "th", "ing"]
    scripts = [(0x4E00, 0x9FA5), (0x3040, 0x30FF), (0xAC00, 0xD7A3), (0x0627, 0x064A),
               (0x0410, 0x044F), (0x1F600, 0x1F64F)]
    parts, size = [], 0
    while size < n_bytes:
        kind = rng.random()
        if kind < 0.45:
            line = " ".join("".join(rng.choice(syll) for _ in range(rng.randint(1, 4)))
                            .capitalize() if rng.random() < 0.1 else
                            "".join(rng.choice(syll) for _ in range(rng.randint(1, 4)))
                            for _ in range(rng.randint(5, 25))) + rng.choice([".", "!", "?", ","])
        elif kind < 0.65:
            lo, hi = rng.choice(scripts)
            line = "".join(chr(rng.randint(lo, hi)) if rng.random() > 0.1 else " "
                           for _ in range(rng.randint(10, 60)))
        elif kind < 0.75:
            line = " ".join(str(rng.randint(0, 10 ** rng.randint(1, 12))) for _ in range(8))
        elif kind < 0.85:
            line = ("    " * rng.randint(0, 3) + "x_%d = foo(%d, \"bar\")  # c\t%d"
                    % (rng.randint(0, 99), rng.randint(0, 9999), rng.randint(0, 99)))
        else:
            line = rng.choice(TEXTS)
        line += "\n"
        parts.append(line)
        size += len(line.encode("utf-8"))
    return "".join(parts)


def chunks_of(data, target):
    out, pos = [], 0
    while pos < len(data):
        end = min(len(data), pos + target)
        nl = data.find(b"\n", end)
        end = len(data) if nl < 0 else nl + 1
        out.append(data[pos:end].decode("utf-8"))
        pos = end
    return out


def bench_tokenizers(path, chunks, reps):
    tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        count, checksum = 0, 0
        for c in chunks:
            ids = tok.encode(c, add_special_tokens=False).ids
            count += len(ids)
            for i in ids:
                checksum = (checksum * 1000003 + i) & 0xFFFFFFFFFFFFFFFF
        times.append(time.perf_counter() - t0)
    return statistics.median(times), count, checksum


def bench_tokenizers_only_encode(path, chunks, reps):
    tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for c in chunks:
            tok.encode(c, add_special_tokens=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex-bench", required=True)
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokenizer", action="append")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="moex_tok_bench_")
    dirs = a.tokenizer
    if not dirs:
        import tokenizer_reference
        out = os.path.join(work, "tok")
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            tokenizer_reference.prepare(out)
        names = [n for n in ("real_qwen25", "real_llama32", "real_mistral_v1")
                 if os.path.exists(os.path.join(out, n))] or ["bytelevel_qwen",
                                                              "sentencepiece_legacy"]
        dirs = [os.path.join(out, n) for n in names]
    text = make_corpus(int(a.mb * 1e6))
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(text)
    data = text.encode("utf-8")
    chunks = chunks_of(data, 4096)
    print("corpus: %.2f MB, %d chunks of ~4 KB, single thread, median of %d"
          % (len(data) / 1e6, len(chunks), a.reps))
    print("%-22s %12s %16s %8s  %s" % ("tokenizer", "moex MB/s", "tokenizers MB/s", "ratio",
                                       "same ids"))
    for d in dirs:
        r = json.loads(subprocess.check_output([a.moex_bench, "--tokenizer", d, "--corpus", corpus,
                                                "--reps", str(a.reps)]))
        t_ref = bench_tokenizers_only_encode(d, chunks, a.reps)
        _, count, checksum = bench_tokenizers(d, chunks, 1)
        ref_mbs = len(data) / 1e6 / t_ref
        same = count == r["tokens"] and checksum == r["checksum"]
        print("%-22s %12.2f %16.2f %8.2f  %s" % (os.path.basename(d), r["mb_per_s"], ref_mbs,
                                                 r["mb_per_s"] / ref_mbs, same))
    import shutil
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
