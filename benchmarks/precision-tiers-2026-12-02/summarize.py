#!/usr/bin/env python3
"""Medians (min-max) of run.sh's raw JSON: decode and prefill tokens/s per model and arm, and
each arm's ratio to the base binary."""
import glob
import json
import os
import re
import statistics

raw = os.path.join(os.path.dirname(os.path.abspath(__file__)), "raw")
vals = {}
for f in glob.glob(os.path.join(raw, "*.json")):
    m = re.match(r"(decode|prefill)-(\w+)-(\w+)-r\d+\.json", os.path.basename(f))
    if not m:
        continue
    kind, model, arm = m.groups()
    run = json.load(open(f))["arms"][0]["runs"][0]
    vals.setdefault((kind, model, arm), []).append(run["decode_tps" if kind == "decode" else "prefill_tps"])
print("| run | model | arm | tok/s median | min-max | n | vs base |")
print("|---|---|---|--:|--:|--:|--:|")
for kind in ("decode", "prefill"):
    for model in ("qwen", "mix"):
        base = vals.get((kind, model, "base"))
        for arm in ("base", "exact", "standard", "fast"):
            v = vals.get((kind, model, arm))
            if not v:
                continue
            med = statistics.median(v)
            ratio = f"{med / statistics.median(base):.2f}" if base else ""
            print(f"| {kind} | {model} | {arm} | {med:.1f} | {min(v):.1f}-{max(v):.1f} | {len(v)} | {ratio} |")
