#!/usr/bin/env python3
"""Summarizes run.sh's raw bench-decode outputs: per checkpoint and binary, the median and
min-max of decode tok/s over every measured pass, and of the mixer's decode-profile line
(ms per token, GB/s on its weights), the lm_head's and the attention projections' GB/s over the runs. Prints markdown."""
import glob
import os
import re
import statistics
import sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
MIXER = {"qn4": "linear_attention", "q354": "linear_attention", "nano6": "state_space"}


def parse(path):
    text = open(path).read()
    tps = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 9 and cells[1] == "auto" and cells[2].isdigit():
            tps.append(float(cells[8]))  # decode_tps
    prof = re.search(r"decode profile per token: (.*)", text).group(1)
    ops = {}
    for part in prof.split("; "):
        m = re.match(r"(\w+) ([\d.]+) ms \(([\d.]+)%\)(?: ([\d.]+) MB ([\d.]+) GB/s)?", part)
        ops[m.group(1)] = (float(m.group(2)), float(m.group(3)),
                           float(m.group(5)) if m.group(5) else None)
    commit = re.search(r"moex_commit: (\S+)", text).group(1)
    return tps, ops, commit


def spread(xs, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


print("| checkpoint | binary (commit) | runs x passes | decode tok/s median (min-max) "
      "| mixer ms/token | mixer GB/s (weights) | lm_head GB/s | attention proj. GB/s "
      "| mixer / lm_head |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
for model in ["qn4", "q354", "nano6"]:
    for arm in ["old", "new"]:
        files = sorted(glob.glob(f"{here}/{model}-{arm}-*.md"))
        if not files:
            continue
        tps, ms, gbps, head, attn, ratio, commits = [], [], [], [], [], [], set()
        for f in files:
            t, ops, c = parse(f)
            tps += t
            mixer = ops[MIXER[model]]
            ms.append(mixer[0])
            gbps.append(mixer[2])
            head.append(ops["lm_head"][2])
            attn.append(ops["attention_projections"][2])
            ratio.append(mixer[2] / ops["lm_head"][2])
            commits.add(c)
        print(f"| {model} | {arm} ({', '.join(sorted(commits))}) | {len(files)} x 3 | {spread(tps)} "
              f"| {spread(ms)} | {spread(gbps, '{:.1f}')} | {spread(head, '{:.1f}')} "
              f"| {spread(attn, '{:.1f}')} "
              f"| {spread(ratio)} |")
