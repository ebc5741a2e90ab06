#!/usr/bin/env python3
"""Shares of prefill time from prefill.sh's outputs: per measured pass, the mixers' recurrence,
projections and other work (summed over the mixer layers) against the pass's prefill_s; the
first group of PREFILL_TIMING lines is the warm-up pass's prefill. Prints markdown."""
import os
import re
import statistics
import sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
LAYERS = {"qn4": 3, "nano6": 3}  # mixer layers per prefill: 3 Gated DeltaNet / 3 Mamba-2

print("| checkpoint | mixer | prefill s (median of 3) | recurrence s | share | mixer projections s "
      "| share | mixer other s | share | rest of the step s | share |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for model, per in LAYERS.items():
    text = open(f"{here}/prefill-{model}.md").read()
    calls = re.findall(r"PREFILL_TIMING (\w+) n=(\d+) proj=([\d.]+) rec=([\d.]+) other=([\d.]+)", text)
    passes = [float(l.split("|")[4]) for l in text.splitlines()
              if l.startswith("| auto |") and l.split("|")[2].strip().isdigit()]
    assert len(calls) == per * (len(passes) + 1), (model, len(calls), len(passes))
    rows = []
    for i, total in enumerate(passes):
        group = calls[per * (i + 1): per * (i + 2)]
        proj = sum(float(c[2]) for c in group)
        rec = sum(float(c[3]) for c in group)
        other = sum(float(c[4]) for c in group)
        rows.append((total, rec, proj, other, total - rec - proj - other))
    med = [statistics.median(col) for col in zip(*rows)]
    t = med[0]
    print(f"| {model} | {calls[0][0]} x{per} | {t:.3f} ({min(r[0] for r in rows):.3f}-"
          f"{max(r[0] for r in rows):.3f}) | {med[1]:.3f} | {100 * med[1] / t:.1f}% | {med[2]:.3f} "
          f"| {100 * med[2] / t:.1f}% | {med[3]:.3f} | {100 * med[3] / t:.1f}% | {med[4]:.3f} "
          f"| {100 * med[4] / t:.1f}% |")
