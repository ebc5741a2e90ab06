#!/usr/bin/env python3
"""Table of run-window.sh's runs: pairs the measurement took, its paired figure and band, the
decision, and the auto arm's decode tokens/s and path counters."""
import json
import pathlib
import sys

raw = pathlib.Path(sys.argv[1])
print("| run | pairs | fused time / fallback (paired), band | decision | auto tok/s median [min-max] "
      "| calls fused/fallback |")
print("|---|--:|---|---|--:|---|")
for m in ["q30_4", "mix_2", "q30_48"]:
    for r in (1, 2, 3):
        f = raw / f"{m}_window_{r}.json"
        if not f.exists():
            continue
        d = json.loads(f.read_text())
        a = d["arms"][0]
        n = pr = band = dec = "-"
        for line in d.get("policy_measurement", []):
            if "paired" in line:
                n = line[line.index("n=") + 2:line.index(" each")]
                at = line.index("paired")
                pr = line[at + 7:line.index("x,", at)]
                band = line[line.index("+-") + 2:line.index("%;", line.index("+-"))]
                dec = line.split("): ")[-1]
        pc = a["path_counters"]
        print(f"| {m} {r} | {n} | {pr}x, +-{band}% | {dec} | {a['median_decode_tps']:.2f} "
              f"[{a['min_decode_tps']:.2f}-{a['max_decode_tps']:.2f}] | "
              f"{pc['fused_calls']}/{pc['fallback_calls']} |")
