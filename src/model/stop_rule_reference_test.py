#!/usr/bin/env python3
"""Reference test of the stop rule: for a tiny checkpoint with and without a
generation_config.json, `moex generate -v --prompt-ids` stops at the same set of token ids as
mlx-lm (mlx_lm.load's tokenizer.eos_token_ids: generation_config.json's eos_token_id replaces
config.json's, plus the tokenizer's eos token), and ends after the first of them it samples.

usage: stop_rule_reference_test.py --moex BIN --work DIR
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

PRESET = "tiny-qwen3-moe"


def moex_generate(moex, d, extra=()):
    r = subprocess.run([moex, "generate", "-m", str(d), "--prompt-ids", "5,17,3", "-n", "6", "-v",
                        *extra], capture_output=True, text=True, check=True)
    m = re.search(r"stop at token ids \[([0-9, ]*)\]", r.stderr)
    if not m:
        raise SystemExit(f"no 'stop at token ids' line in moex generate -v:\n{r.stderr}")
    stops = {int(x) for x in m.group(1).split(",") if x.strip()}
    tokens = [int(x) for x in r.stdout.split()]
    return stops, tokens


def mlx_stops(d):
    import mlx_lm

    _, tok = mlx_lm.load(str(d))
    return set(tok.eos_token_ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = work / "base"
    subprocess.run([a.moex, "make-model", "--preset", PRESET, "--out", str(base), "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    cfg = json.loads((base / "config.json").read_text())
    cfg_eos = cfg["eos_token_id"]
    vocab = cfg["vocab_size"]

    # The greedy continuation without any stop from generation_config.json.
    _, free = moex_generate(a.moex, base, ["--ignore-eos"])
    first = free[0]
    cases = {
        "no generation_config.json": None,
        "generation_config eos list replaces config.json's": {"eos_token_id": [7, 9, vocab - 1]},
        "generation_config eos 0 is ignored (falsy)": {"eos_token_id": 0},
        "generation_config eos = the first greedy token": {"eos_token_id": [first, 11]},
    }
    failures = 0
    for name, gen in cases.items():
        d = work / re.sub(r"[^a-z0-9]+", "_", name)
        shutil.copytree(base, d)
        if gen is not None:
            (d / "generation_config.json").write_text(json.dumps(gen))
        want = mlx_stops(d)
        got, tokens = moex_generate(a.moex, d)
        ok = got == want
        # Generation ends right after the first stop id it samples (or after -n tokens).
        cut = next((i for i, t in enumerate(tokens) if t in want), None)
        ends_right = tokens == free[: len(tokens)] and (
            len(tokens) == cut + 1 if cut is not None else len(tokens) == 6)
        print(f"{'ok  ' if ok and ends_right else 'FAIL'} {name}: moex {sorted(got)}, "
              f"mlx-lm {sorted(want)}, config.json {cfg_eos}, tokens {tokens}")
        failures += (not ok) + (not ends_right)
    if failures:
        sys.exit(1)
    print(f"stop rule: {len(cases)} cases equal mlx-lm's")


if __name__ == "__main__":
    main()
