#!/usr/bin/env python3
"""Time to first token per turn of agent conversations through `moex serve`, with and without
the prompt cache (--cache-ram). Each agent holds a conversation of token ids: a system prompt,
then per turn a user message; the whole conversation is sent each turn (as agents do) with the
model's previous answers in it, and the answer's ids come back as logprob tokens. With more
agents than slots (--parallel 1, 2 agents taking turns) a slot's own prefix is the other
agent's, so only the prompt cache keeps the conversation's prefix.

usage: bench_prompt_cache.py --moex BIN --model DIR [--turns 10] [--system 2000] [--user 60]
           [--answer 16] [--agents 1,2] [--cache-ram 0,1024] [--out FILE.jsonl]
Prints a table per setting; --out writes every request as a JSON line.
"""
import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_openai_test import Server  # noqa: E402


def ids(rng, n, vocab):
    lo = min(1000, vocab // 4)  # past the special and byte tokens of a real vocabulary
    return [rng.randrange(lo, vocab) for _ in range(n)]


def turn(client, prompt, answer):
    """One streamed completion: (seconds to the first token, the answer's ids, usage)."""
    t0 = time.perf_counter()
    first, out, usage = None, [], None
    for ch in client.completions.create(
            model="m", prompt=prompt, max_tokens=answer, temperature=0, stream=True, logprobs=0,
            stream_options={"include_usage": True},
            extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True}):
        if ch.choices and ch.choices[0].logprobs and ch.choices[0].logprobs.tokens:
            first = first or time.perf_counter()
            out += [int(t.split(":", 1)[1]) for t in ch.choices[0].logprobs.tokens]
        if ch.usage:
            usage = ch.usage
    return first - t0, out, usage


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def run(args, agents, cache_ram, vocab, work, log):
    extra = ["--parallel", "1", "--cache-ram", str(cache_ram)]
    if args.threads:
        extra += ["--threads", str(args.threads)]
    server = Server(args.moex, args.model, work, f"serve-{agents}-{cache_ram}", *extra)
    rows = []
    try:
        client = server.client()
        rng = random.Random(1)
        convs = [ids(rng, args.system, vocab) for _ in range(agents)]
        for t in range(1, args.turns + 1):
            for a in range(agents):
                convs[a] += ids(rng, args.user, vocab)
                ttft, answer, usage = turn(client, convs[a], args.answer)
                cached = usage.prompt_tokens_details.cached_tokens
                row = {"agents": agents, "cache_ram_mib": cache_ram, "agent": a, "turn": t,
                       "prompt_tokens": usage.prompt_tokens, "cached_tokens": cached,
                       "ttft_s": round(ttft, 4)}
                rows.append(row)
                log.write(json.dumps(row) + "\n")
                log.flush()
                print(f"  agents {agents} cache {cache_ram} MiB agent {a} turn {t:2d}: prompt "
                      f"{usage.prompt_tokens} ({cached} cached) TTFT {ttft:.3f} s", flush=True)
                convs[a] += answer
        m = server.http("GET", "/metrics")[2].decode()
        summary = {k: metric(m, "moex_prompt_cache_" + k) for k in
                   ("hits_total", "misses_total", "hit_tokens_total", "evictions_total", "bytes",
                    "entries", "budget_bytes")}
        log.write(json.dumps({"agents": agents, "cache_ram_mib": cache_ram, "metrics": summary})
                  + "\n")
        print(f"  /metrics prompt cache: {summary}")
    finally:
        server.stop()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--system", type=int, default=2000)
    ap.add_argument("--user", type=int, default=60)
    ap.add_argument("--answer", type=int, default=16)
    ap.add_argument("--agents", default="1,2")
    ap.add_argument("--cache-ram", default="0,1024")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    vocab = json.loads((Path(args.model) / "config.json").read_text())["vocab_size"]
    work = Path(tempfile.mkdtemp(prefix="moex_bench_prompt_cache_"))
    log = open(args.out, "w") if args.out else open(work / "rows.jsonl", "w")
    table = []
    for agents in [int(x) for x in args.agents.split(",")]:
        for cache_ram in [int(x) for x in args.cache_ram.split(",")]:
            rows = run(args, agents, cache_ram, vocab, work, log)
            later = [r["ttft_s"] for r in rows if r["turn"] > 1]
            firsts = [r["ttft_s"] for r in rows if r["turn"] == 1]
            table.append((agents, cache_ram, statistics.median(firsts), statistics.median(later),
                          min(later), max(later),
                          statistics.median([r["cached_tokens"] for r in rows if r["turn"] > 1])))
    print("\n| agents | --cache-ram MiB | TTFT turn 1 (median) | TTFT turns 2-N median (min-max) "
          "| cached tokens, turns 2-N median |")
    print("|---|---|---|---|---|")
    for a, c, f, med, lo, hi, cached in table:
        print(f"| {a} | {c} | {f:.3f} s | {med:.3f} s ({lo:.3f}-{hi:.3f}) | {cached:.0f} |")


if __name__ == "__main__":
    main()
