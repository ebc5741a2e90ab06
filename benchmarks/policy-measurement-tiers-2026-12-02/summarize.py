#!/usr/bin/env python3
"""Tables for the policy benchmark: decode tok/s median [min-max] per model, repetition and
arm, the path counters, and what the measurement judged (from the untuned run's notes)."""
import json
import pathlib
import re
import sys

raw = pathlib.Path(sys.argv[1])
arms = ["on", "off", "auto_untuned", "auto_calibrated"]
for model in ["q30_4", "mix_2", "q30_48"]:
    rows = []
    for rep in (1, 2, 3):
        cells, counters, judged = [], [], ""
        for arm in arms:
            f = raw / f"{model}_{arm}_{rep}.json"
            if not f.exists():
                cells.append("-")
                continue
            d = json.loads(f.read_text())
            a = d["arms"][0]
            cells.append(f"{a['median_decode_tps']:.2f} [{a['min_decode_tps']:.2f}-"
                         f"{a['max_decode_tps']:.2f}]")
            pc = a["path_counters"]
            counters.append(f"{arm}: {pc['fused_calls']}/{pc['fallback_calls']}")
            if arm == "auto_untuned":
                for line in d.get("policy_measurement", []):
                    m = re.search(r"fused ([0-9.]+)x the time of the fallback.*?spread ([0-9.]+)% / "
                                  r"([0-9.]+)%\): (.*)$", line)
                    if m:
                        judged = (f"fused {m.group(1)}x of fallback, spread {m.group(2)}% / "
                                  f"{m.group(3)}%: {m.group(4)}")
        if cells.count("-") == len(cells):
            continue
        best = max(float(c.split()[0]) for c in cells[:2] if c != "-")
        autos = [float(c.split()[0]) for c in cells[2:] if c != "-"]
        rel = " / ".join(f"{x / best:.3f}" for x in autos)
        rows.append(f"| {model} | {rep} | " + " | ".join(cells) + f" | {rel} | {judged} |")
        rows.append(f"|  |  | counters (fused/fallback calls) {'; '.join(counters)} | | | | | |")
    if rows:
        print(f"\n### {model}\n")
        print("| model | rep | on | off | auto, untuned | auto, calibrated | auto / faster forced arm "
              "| the measurement judged |")
        print("|---|--:|--:|--:|--:|--:|--:|---|")
        print("\n".join(rows))
    f = raw / f"{model}_auto_exact_tier.json"
    if f.exists():
        notes = json.loads(f.read_text()).get("policy_measurement", [])
        print(f"\n{model}, auto at --precision exact against the standard entry:")
        for n in notes:
            print(f"- {n}")
