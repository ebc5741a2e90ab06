#!/usr/bin/env python3
"""The Generator's logits processors against a float32 numpy reference, bit for bit.

The reference follows vLLM's vectorized definitions (vllm/model_executor/layers/utils.py
apply_penalties, as docs/generation.md restates them): the stop ids masked to -inf while fewer
than min_tokens tokens were generated; logit_bias added; then for every token seen in the
prompt or the output, logit / r when positive else logit * r; then for every token of the output,
logit - frequency * count - presence. Greedy picks the first maximum. Random cases (vocabulary
sizes 1 to 5000, -inf and signed-zero logits, repeated prompt ids, repeated bias ids, negative
penalties) run through generator_reference_main; every step's processed logits must equal the
reference's bits, and its token the reference's argmax. The test also checks that the
processors changed the greedy choice on many steps, so it cannot pass on a no-op.
"""
import argparse
import json
import pathlib
import subprocess
import sys

import numpy as np

F32 = np.float32


def reference_step(raw, spec, outputs):
    x = raw.astype(F32).copy()
    v = x.shape[0]
    if len(outputs) < spec["min_tokens"] and not spec["ignore_eos"]:
        for s in spec["stop_ids"]:
            if 0 <= s < v:
                x[s] = F32(-np.inf)
    for tid, b in spec["logit_bias"]:
        x[tid] = x[tid] + F32(b)
    counts = np.bincount(np.array(outputs, dtype=np.int64), minlength=v)[:v] if outputs else np.zeros(v, np.int64)
    out_mask = counts > 0
    r = F32(spec["repetition"])
    if r != F32(1):
        prompt_mask = np.zeros(v, bool)
        if spec["prompt"]:
            prompt_mask[np.array(spec["prompt"])] = True
        seen = prompt_mask | out_mask
        x = np.where(seen, np.where(x > 0, x / r, x * r), x).astype(F32)
    f, p = F32(spec["frequency"]), F32(spec["presence"])
    if f != 0 or p != 0:
        penalized = (x - f * counts.astype(F32)).astype(F32)
        penalized = (penalized - p).astype(F32)
        x = np.where(out_mask, penalized, x).astype(F32)
    return x


def random_case(rng, i):
    v = int(rng.choice([1, 2, 7, 50, 1000, 5000]))
    steps = int(rng.integers(1, 12))
    base = (rng.standard_normal(v) * 3).astype(F32)
    rows = np.stack([base + (rng.standard_normal(v) * 0.3).astype(F32) for _ in range(steps)]).astype(F32)
    if v > 2:
        rows[:, rng.integers(0, v, size=max(1, v // 20))] = F32(-np.inf)
        rows[:, 0] = F32(0.0)
        rows[:, 1] = F32(-0.0)
        rows[:, -1] = F32(rng.standard_normal() * 3)  # a finite entry on every row
    spec = {
        "vocab": v,
        "prompt": [int(t) for t in rng.integers(0, v, size=int(rng.integers(0, 30)))],
        "stop_ids": [int(t) for t in rng.integers(0, v + 3, size=int(rng.integers(0, 3)))],
        "min_tokens": int(rng.integers(0, 4)),
        "ignore_eos": bool(rng.random() < 0.2),
        "logit_bias": [[int(rng.integers(0, v)), float(F32(rng.uniform(-100, 100)))]
                       for _ in range(int(rng.integers(0, 6)))],
        "repetition": float(rng.choice([1.0, 1.3, 2.0, 0.7, float(F32(rng.uniform(0.5, 3)))])),
        "frequency": float(rng.choice([0.0, 0.5, -0.5, 2.0, float(F32(rng.uniform(-2, 2)))])),
        "presence": float(rng.choice([0.0, 0.75, -1.0, float(F32(rng.uniform(-2, 2)))])),
        "max_tokens": steps,
    }
    spec["min_tokens"] = min(spec["min_tokens"], spec["max_tokens"])
    if v <= 2:  # the stop ids could mask the whole vocabulary (an error, tested in C++)
        spec["min_tokens"] = 0
    if i % 7 == 0:  # all off: the plain path
        spec.update(logit_bias=[], repetition=1.0, frequency=0.0, presence=0.0, min_tokens=0)
    return spec, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cases", type=int, default=300)
    args = ap.parse_args()
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261203)
    failures, steps_checked, changed = [], 0, 0
    for i in range(args.cases):
        spec, rows = random_case(rng, i)
        (work / "spec.json").write_text(json.dumps(spec))
        rows.astype("<f4").tofile(work / "logits.f32")
        run = subprocess.run([args.tool, str(work / "spec.json"), str(work / "logits.f32")],
                             capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            failures.append(f"case {i}: tool failed: {run.stderr.strip()}")
            continue
        outputs = []
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        for step, got in enumerate(lines):
            want = reference_step(rows[step], spec, outputs)
            got_bits = np.array(got["bits"], dtype=np.uint32)
            if not np.array_equal(got_bits, want.view(np.uint32)):
                bad = np.nonzero(got_bits != want.view(np.uint32))[0][:5]
                failures.append(f"case {i} step {step}: logits differ at {bad.tolist()}: "
                                f"moex {got_bits[bad].view(F32).tolist()} reference {want[bad].tolist()}")
                break
            token = int(np.argmax(want))
            if got["token"] != token:
                failures.append(f"case {i} step {step}: token {got['token']}, reference {token}")
                break
            steps_checked += 1
            changed += int(token != int(np.argmax(rows[step])))
            is_stop = token in spec["stop_ids"] and not spec["ignore_eos"]
            want_end = "stop" if is_stop else ("length" if len(outputs) + 1 == spec["max_tokens"] else "none")
            if got["end"] != want_end:
                failures.append(f"case {i} step {step}: end {got['end']}, reference {want_end}")
                break
            if is_stop:
                break
            outputs.append(token)
        else:
            if lines and lines[-1]["end"] == "none":
                failures.append(f"case {i}: the tool stopped before the generation ended")
    print(f"generator reference: {args.cases} cases, {steps_checked} steps equal bit for bit; "
          f"the processors changed the greedy token on {changed} steps")
    for f in failures[:20]:
        print("FAIL", f)
    if changed < 20:
        print("FAIL: the processors changed too few greedy choices for the test to mean anything")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
