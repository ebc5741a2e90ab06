#!/usr/bin/env python3
"""Per-token cost of the structured-output mask through `moex serve`: streamed completions
of the same length with and without a JSON schema, alternated, at 1 stream (or --streams N
at once); prints the median time per output token of each and the difference. Also the
schema's first-use compile time (time to first token, first request minus a later one).

usage: bench_structured.py --moex BIN --model DIR [--tokens 160] [--reps 3] [--streams 1]
"""
import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_openai_test import Server  # noqa: E402

SCHEMA = {"type": "array", "minItems": 40, "maxItems": 40,
          "items": {"type": "object",
                    "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 999},
                                   "name": {"type": "string", "maxLength": 6},
                                   "ok": {"type": "boolean"}},
                    "required": ["id", "name", "ok"]}}


def one(client, tokens, seed, schema, out):
    extra = {"guided_json": schema} if schema else {"ignore_eos": True}
    t0 = time.time()
    first = last = None
    n = 0
    for ch in client.completions.create(model="m", prompt="Data:", max_tokens=tokens, seed=seed,
                                        temperature=1.0, stream=True,
                                        stream_options={"include_usage": True}, extra_body=extra):
        now = time.time()
        if ch.choices and ch.choices[0].text:
            first = first or now
            last = now
        if ch.usage:
            n = ch.usage.completion_tokens
    out.append({"ttft": first - t0, "per_token": (last - first) / max(1, n - 1), "tokens": n})


def run(client, tokens, seed, schema, streams):
    out, th = [], []
    for s in range(streams):
        th.append(threading.Thread(target=one, args=(client, tokens, seed + s, schema, out)))
        th[-1].start()
    for t in th:
        t.join()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", type=int, default=160)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--streams", type=int, default=1)
    a = ap.parse_args()
    work = Path("/tmp/bench_structured")
    work.mkdir(exist_ok=True)
    srv = Server(a.moex, a.model, work, "bench", "--parallel", str(a.streams))
    try:
        c = srv.client()
        run(c, a.tokens, 0, None, a.streams)  # warm-up: the first steps of a server are slower
        first = run(c, a.tokens, 100, SCHEMA, 1)[0]  # compiles the schema
        plain, guided = [], []
        for r in range(a.reps):  # alternated, each first in every other repetition
            for schema in ((None, SCHEMA) if r % 2 == 0 else (SCHEMA, None)):
                (guided if schema else plain).extend(run(c, a.tokens, r, schema, a.streams))
    finally:
        srv.stop()
    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    p, g = med(plain, "per_token") * 1e3, med(guided, "per_token") * 1e3
    print(json.dumps({
        "model": a.model, "streams": a.streams, "reps": a.reps,
        "plain_ms_per_token": round(p, 2), "schema_ms_per_token": round(g, 2),
        "overhead_ms": round(g - p, 2), "overhead_pct": round(100 * (g - p) / p, 1),
        "plain_spread_ms": [round(min(x["per_token"] for x in plain) * 1e3, 2),
                            round(max(x["per_token"] for x in plain) * 1e3, 2)],
        "schema_spread_ms": [round(min(x["per_token"] for x in guided) * 1e3, 2),
                             round(max(x["per_token"] for x in guided) * 1e3, 2)],
        "schema_tokens": [x["tokens"] for x in guided],
        "first_schema_ttft_s": round(first["ttft"], 3),
        "cached_schema_ttft_s": round(med(guided, "ttft"), 3),
        "plain_ttft_s": round(med(plain, "ttft"), 3)}))


if __name__ == "__main__":
    main()
