#!/usr/bin/env python3
"""Renders a `moex sweep` result to PNG: fused/fallback ratio vs Dff with the bootstrap 95%
interval of each ratio, each arm's run-to-run spread, the cap in force and the crossover band.

usage: plot_sweep.py RAW.csv --out sweep.png [--cap N] [--crossover X --crossover-lo L --crossover-hi H]
The summary CSV is read from RAW's sibling RAW.summary.csv (written by `moex sweep`)."""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cap", type=float)
    ap.add_argument("--crossover", type=float)
    ap.add_argument("--crossover-lo", type=float)
    ap.add_argument("--crossover-hi", type=float)
    ap.add_argument("--title", default="moex sweep: fused / fallback decode tokens/s")
    a = ap.parse_args()
    summary_path = a.raw[: -len(".csv")] + ".summary.csv" if a.raw.endswith(".csv") else a.raw + ".summary.csv"
    rows = list(csv.DictReader(open(summary_path)))
    ok = [r for r in rows if r["status"] == "OK"]
    bad = [r for r in rows if r["status"] != "OK"]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    xs = [float(r["dff"]) for r in ok]
    ys = [float(r["fused_over_fallback"]) for r in ok]
    lo = [y - float(r["ratio_ci_lo"]) for r, y in zip(ok, ys)]
    hi = [float(r["ratio_ci_hi"]) - y for r, y in zip(ok, ys)]
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", capsize=4, label="fused/fallback (bootstrap 95%)")
    for r, x, y in zip(ok, xs, ys):
        ax.annotate(r["model"], (x, y), textcoords="offset points", xytext=(4, 6), fontsize=8)
    for r in bad:
        ax.axvline(float(r["dff"]), color="red", alpha=0.3, ls=":")
        ax.annotate(r["model"] + " INVALID", (float(r["dff"]), 1.0), color="red", fontsize=8, rotation=90)
    ax.axhline(1.0, color="gray", lw=1)
    if a.cap:
        ax.axvline(a.cap, color="black", ls="--", label=f"cap {a.cap:.0f}")
    if a.crossover:
        ax.axvline(a.crossover, color="green", label=f"crossover {a.crossover:.0f}")
        if a.crossover_lo is not None and a.crossover_hi is not None:
            ax.axvspan(a.crossover_lo, a.crossover_hi, color="green", alpha=0.15, label="crossover 95%")
    ax.set_ylabel("fused / fallback")
    ax.set_title(a.title)
    ax.legend(fontsize=8)
    ax2.plot(xs, [100 * float(r["fallback_spread"]) for r in ok], "s-", label="fallback spread")
    ax2.plot(xs, [100 * float(r["fused_spread"]) for r in ok], "^-", label="fused spread")
    ax2.set_ylabel("run spread %")
    ax2.set_xlabel("expert intermediate size Dff")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out} ({len(ok)} valid, {len(bad)} invalid models)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
