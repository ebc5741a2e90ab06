#!/usr/bin/env python3
"""moex against llama.cpp on CPU, on the same weights: for each checkpoint, its GGUF twin
(cached), then R rounds of A = `moex bench-decode`, B = `llama-bench` tg (and, with --prefill,
moex's prompt processing against llama-bench pp), with a read-bandwidth probe per round; then a
table of tok/s median/min/max per engine, the ratio, bytes per token and the fraction of the
measured read bandwidth. Every run's raw output is written as soon as it completes, and a rerun
with the same --out keeps those and runs only what is missing.

usage: compare.py --moex BIN --llama-bench BIN --out DIR [-n 64] [--rounds 3] CHECKPOINT...
"""
import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gguf_twin import LLAMA_QUANTIZE_TYPES, twin  # noqa: E402
from peer_report import render  # noqa: E402


def write_atomic(path, text):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run_once(path, cmd, parse, log):
    """Runs cmd unless `path` already holds its result; stores stdout (parsed by `parse`),
    stderr and the command line; returns the parsed result."""
    if path.is_file():
        return json.loads(path.read_text())
    log(f"  {' '.join(map(str, cmd[:3]))} ... -> {path.name}")
    start = time.time()
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    err_path = path.with_name(path.name.replace(".json", ".stderr.txt"))
    err_path.write_text(done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {done.returncode}; see {err_path}")
    result = {"cmd": [str(c) for c in cmd], "wall_s": time.time() - start,
              "result": parse(done.stdout, done.stderr)}
    write_atomic(path, json.dumps(result, indent=1) + "\n")
    return result


def parse_json(stdout, _stderr):
    return json.loads(stdout)


def parse_moex_prefill(_stdout, stderr):
    m = re.search(r"prompt: (\d+) tokens, ([0-9.]+) s, ([0-9.]+) tokens/s", stderr)
    if not m:
        raise RuntimeError("moex generate printed no 'prompt: N tokens, S s, T tokens/s' line")
    return {"prompt_tokens": int(m.group(1)), "prefill_s": float(m.group(2)),
            "prefill_tps": float(m.group(3))}


def host_facts(args, out):
    facts_path = out / "host.json"
    if facts_path.is_file():
        return json.loads(facts_path.read_text())
    repo = Path(__file__).resolve().parents[2]

    def sh(cmd):
        done = subprocess.run(cmd, capture_output=True, text=True, shell=True, cwd=repo)
        return done.stdout.strip()

    facts = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpu_model": sh("lscpu | sed -n 's/^Model name:[[:space:]]*//p'"),
        "cores": os.cpu_count(),
        "repo_commit": sh("git rev-parse --short HEAD"),
        "moex_binary": str(args.moex), "moex_version": sh(f"{args.moex} --version"),
        "llama_bench": str(args.llama_bench),
        "llama_cpp_commit": os.environ.get("LLAMA_CPP_COMMIT", "unknown"),
        "llama_cpp_python_version": os.environ.get("LLAMA_CPP_PYTHON_VERSION", "unknown"),
        "threads": args.threads, "n": args.n, "warmup_tokens": args.warmup_tokens,
        "rounds": args.rounds, "prefill_tokens": args.prefill, "twin_type": args.type,
        "depth": args.depth, "kv_cache": f"moex {args.kv_cache}, llama.cpp f16",
        "moex_precision": args.precision or "default",
        "moex_input": "the GGUF file llama.cpp runs" if args.same_file else "the MLX checkpoint",
    }
    write_atomic(facts_path, json.dumps(facts, indent=1) + "\n")
    return facts


def load_snapshot(out, tag):
    """`top -bn1 | head -15` kept beside the data: was the host busy?"""
    top = subprocess.run("top -bn1 | head -15", shell=True, capture_output=True, text=True).stdout
    (out / f"top-{tag}-{time.strftime('%H%M%S')}.txt").write_text(top)


def prefill_ids(n, vocab, seed=20261201):
    rng = random.Random(seed)
    return ",".join(str(rng.randrange(min(vocab, 1000))) for _ in range(n))


def measure(args, ckpt, out, log):
    name = Path(ckpt).name
    key = hashlib.sha256(str(Path(ckpt).resolve()).encode()).hexdigest()[:8]
    twins = Path(args.twin_dir)
    twins.mkdir(parents=True, exist_ok=True)
    log(f"{name}: GGUF twin ({args.type}) ...")
    meta = twin(ckpt, twins / f"{name}-{key}-{args.type}.gguf", args.type, args.llama_quantize,
                reuse=True, progress=False)
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    write_atomic(d / "twin.json", json.dumps({k: v for k, v in meta.items() if k != "tensors"},
                                             indent=1) + "\n")
    cfg = json.loads((Path(ckpt) / "config.json").read_text())
    t = str(args.threads)
    tier = ["--precision", args.precision] if args.precision else []
    # --same-file: moex loads the very GGUF file llama-bench runs, not the MLX checkpoint.
    moex_in = meta["gguf"] if args.same_file else ckpt
    # --depth D: both engines decode after D tokens of context (moex a D-token prompt, llama-bench
    # -d D). moex's KV cache is of the element type --kv-cache names; llama-bench's is f16, its
    # default, named here (it takes no f32 cache).
    moex_tg = [args.moex, "bench-decode", "-m", moex_in, "-n", args.n, "--warmup-tokens",
               args.warmup_tokens, "--repeats", 1, "--threads", t, "--kv-cache", args.kv_cache,
               "-o", "json"] + tier
    llama_tg = [args.llama_bench, "-m", meta["gguf"], "-t", t, "-p", 0, "-n", args.n, "-r", 1,
                "-ctk", "f16", "-ctv", "f16", "-o", "json"]
    if args.depth:
        moex_tg += ["--prompt-tokens", args.depth]
        llama_tg += ["-d", args.depth]
    probe = [args.moex, "bench-moe", "--shape", "256,128,8,4", "--threads", t, "--repeats", 1,
             "--layers-cycle", 2, "-o", "json"]
    for r in range(1, args.rounds + 1):
        run_once(d / f"round{r}.probe.json", probe, parse_json, log)
        run_once(d / f"round{r}.moex-tg.json", moex_tg, parse_json, log)
        run_once(d / f"round{r}.llama-tg.json", llama_tg, parse_json, log)
        if args.prefill:
            ids = prefill_ids(args.prefill, int(cfg["vocab_size"]))
            moex_pp = [args.moex, "generate", "-m", moex_in, "--prompt-ids", ids, "-n", 1,
                       "--threads", t, "--ignore-eos"] + tier
            llama_pp = [args.llama_bench, "-m", meta["gguf"], "-t", t, "-p", args.prefill,
                        "-n", 0, "-r", 1, "-o", "json"]
            run_once(d / f"round{r}.moex-pp.json", moex_pp, parse_moex_prefill, log)
            run_once(d / f"round{r}.llama-pp.json", llama_pp, parse_json, log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT")
    ap.add_argument("--moex", required=True)
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--llama-quantize", help="for the types llama-quantize makes (q4_k_m, ...)")
    ap.add_argument("--out", required=True, help="raw data and summary.{md,csv,json}")
    ap.add_argument("--twin-dir", default=os.path.expanduser(
        os.path.join(os.environ.get("MOEX_PEERS_DIR", "~/.cache/moex-peers"), "twins")))
    ap.add_argument("--type", default="q4_0", choices=["q4_0", *LLAMA_QUANTIZE_TYPES])
    ap.add_argument("-n", type=int, default=64, help="decode tokens per run (both engines)")
    ap.add_argument("--warmup-tokens", type=int, default=16, help="moex warm-up decode steps")
    ap.add_argument("--rounds", type=int, default=3, help="A,B rounds (interleaved)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=["fast", "standard", "exact"],
                    help="moex's activation precision tier (default: moex's own default)")
    ap.add_argument("--prefill", type=int, default=0, metavar="TOKENS",
                    help="also prompt processing of this many tokens (llama-bench pp)")
    ap.add_argument("--depth", type=int, default=0, metavar="TOKENS",
                    help="decode after this many tokens of context (llama-bench -d); the "
                         "bytes per token then count the KV cache read at the run's middle")
    ap.add_argument("--kv-cache", default="f32", choices=["f32", "f16"],
                    help="moex's KV cache element type (--kv-cache; default f32, moex's "
                         "default); llama-bench's is f16 (-ctk/-ctv f16, its default)")
    ap.add_argument("--same-file", action="store_true",
                    help="moex runs the GGUF twin itself (the file llama.cpp runs), not the MLX "
                         "checkpoint it was written from")
    ap.add_argument("-o", "--output", default="md", choices=["md", "csv", "json"])
    args = ap.parse_args()
    for name, low in (("n", 1), ("rounds", 1), ("prefill", 0), ("depth", 0)):
        if getattr(args, name) < low:
            ap.error(f"--{name} must be at least {low}, not {getattr(args, name)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = lambda msg: print(f"compare: {msg}", file=sys.stderr, flush=True)  # noqa: E731
    facts = host_facts(args, out)
    load_snapshot(out, "before")
    for ckpt in args.checkpoints:
        measure(args, ckpt, out, log)
    load_snapshot(out, "after")
    tables = {fmt: render(out, [Path(c).name for c in args.checkpoints], facts, fmt)
              for fmt in ("md", "csv", "json")}
    for fmt, text in tables.items():
        write_atomic(out / f"summary.{fmt}", text)
    print(tables[args.output], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
