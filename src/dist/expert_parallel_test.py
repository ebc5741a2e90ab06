#!/usr/bin/env python3
# Expert parallelism end to end (docs/expert_parallel.md): `mpirun -np R moex generate
# --expert-parallel` against the single-process run of the same checkpoint.
#  - parity: tiny checkpoints of six families (plain routing; shared expert with expert
#    groups and a dense first layer; Llama-4's input-scaling top-1 with a shared expert;
#    Gemma-4's dense branch and expert output norm; gpt-oss's biases; Qwen3-Next's linear
#    attention and gated shared expert), 2 and 3 ranks (3 splits
#    8 experts 3/3/2), fused on and off, and a placement file with interleaved owners: the
#    ranks exchange their experts' outputs and each combines them as one process does, so
#    the greedy tokens and every step's logits equal the single run's bit for bit;
#  - reads: on a checkpoint whose experts are large next to a page, each rank's resident
#    checkpoint bytes stay near what it populated at open (its share, not the whole file);
#  - errors: a bad placement file, --placement alone, a rank that fails: exit non-zero with
#    the message, every rank stopped (no hang: each run has a timeout).
import argparse
import json
import os
import subprocess
import sys

import numpy as np

PROMPT = "3,14,15,92,65,35,89,79,32,38,46,26,43"
STEPS = 24
FAMILIES = ["tiny-qwen3-moe", "tiny-glm4-moe", "tiny-llama4", "tiny-gemma4", "tiny-gpt-oss",
            "tiny-qwen3-next", "tiny-deepseek-v3"]


def mpirun(a, np_, args, timeout=120):
    cmd = [a.mpiexec, "-np", str(np_), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return subprocess.run(cmd + [a.moex] + args, capture_output=True, text=True, timeout=timeout)


def generate_args(model, dump, fused):
    return ["generate", "-m", model, "--prompt-ids", PROMPT, "-n", str(STEPS), "--ignore-eos",
            "--threads", "1", "--fused", fused, "--dump-logits", dump]


def load(dump):
    with open(dump + ".json") as f:
        meta = json.load(f)
    logits = np.fromfile(dump, np.float32).reshape(meta["steps"], meta["vocab"])
    return meta["generated_ids"], logits


def nrms(a, b):
    return float(np.sqrt(((a - b) ** 2).mean() / (b ** 2).mean()))


def check(cond, what, failures):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def parity(a, failures):
    for preset in FAMILIES:
        model = os.path.join(a.work, preset)
        subprocess.run([a.moex, "make-model", "--preset", preset, "--out", model, "--reuse", "-q"],
                       check=True)
        for fused in ["on", "off"]:
            single = os.path.join(a.work, f"{preset}.{fused}.single")
            r = subprocess.run([a.moex] + generate_args(model, single, fused), capture_output=True,
                               text=True, timeout=120)
            if r.returncode != 0:
                check(False, f"{preset} fused {fused}: single run: {r.stderr.strip()}", failures)
                continue
            ids, ref = load(single)
            runs = [(2, None), (3, None)]
            if preset == "tiny-glm4-moe":
                runs.append((3, "interleaved"))
            for ranks, placement in runs:
                dump = os.path.join(a.work, f"{preset}.{fused}.{ranks}.{placement or 'even'}")
                extra = ["--expert-parallel"]
                if placement:
                    pfile = os.path.join(a.work, "interleaved.json")
                    with open(pfile, "w") as f:  # owners 0,1,2,0,1,2,... and layer 1 reversed
                        json.dump({"experts": [e % ranks for e in range(8)],
                                   "layers": {"1": [(7 - e) % ranks for e in range(8)]}}, f)
                    extra += ["--placement", pfile]
                r = mpirun(a, ranks, generate_args(model, dump, fused) + extra)
                what = f"{preset} fused {fused} {ranks} ranks ({placement or 'even split'})"
                if r.returncode != 0:
                    check(False, f"{what}: exit {r.returncode}: {r.stderr.strip()[-400:]}", failures)
                    continue
                got_ids, got = load(dump)
                check(got_ids == ids, f"{what}: greedy tokens equal the single process's", failures)
                differ = int((got.view(np.uint32) != ref.view(np.uint32)).sum())
                if differ:
                    worst = max(nrms(got[s], ref[s]) for s in range(len(ids)))
                    check(False, f"{what}: {differ} logits differ from the single process's "
                          f"(worst step nRMS {worst:.2e})", failures)
                else:
                    check(True, f"{what}: every logit equals the single process's bit for bit", failures)


def reads(a, failures):
    # OLMoE's real shape, one layer: 64 experts of 3.5 MB (4-bit), 2 ranks.
    model = os.path.join(a.work, "olmoe-1layer")
    subprocess.run([a.moex, "make-model", "--preset", "olmoe-1b-7b", "--layers", "1", "--out", model,
                    "--reuse", "-q"], check=True)
    file_bytes = sum(os.path.getsize(os.path.join(model, f)) for f in os.listdir(model)
                     if f.endswith(".safetensors"))
    r = mpirun(a, 2, ["bench-decode", "-m", model, "--prompt-ids", "3,14,15", "-n", "4",
                      "--warmup-tokens", "1", "--repeats", "1", "--threads", "1", "-o", "json",
                      "--expert-parallel"], timeout=300)
    if r.returncode != 0:
        check(False, f"bench-decode --expert-parallel: exit {r.returncode}: {r.stderr[-400:]}", failures)
        return
    ep = json.loads(r.stdout)["expert_parallel"]
    for row in ep["per_rank"]:
        read, resident = row["checkpoint_bytes_read_at_open"], row["resident_checkpoint_bytes"]
        print(f"rank {row['rank']}: read at open {read / 1e6:.1f} MB, resident {resident / 1e6:.1f} MB, "
              f"file {file_bytes / 1e6:.1f} MB")
        # Its share: the replicated weights plus half the experts, well under the file.
        check(read < 0.75 * file_bytes, f"rank {row['rank']}: populated {read / file_bytes:.2f} of the file",
              failures)
        # Pages beyond what it populated: the mapping is huge-page advised, so a populated range
        # can bring in the rest of the 2 MiB folio at each of its ends (and 64 KiB of
        # fault-around on 4 KiB pages). A rank that read the other rank's experts would exceed
        # this by ~110 MB.
        slack = row["checkpoint_ranges_read_at_open"] * 2 * (2 << 20)
        check(resident <= read + slack,
              f"rank {row['rank']}: resident {resident / 1e6:.1f} MB <= populated + {slack / 1e6:.1f} MB "
              f"(2 MiB at both ends of {int(row['checkpoint_ranges_read_at_open'])} ranges)", failures)
    check(0.99 < ep["imbalance_median"] < ep["ranks"] + 0.01, "imbalance reported in [1, ranks]", failures)


def errors(a, failures):
    model = os.path.join(a.work, "tiny-qwen3-moe")
    bad = os.path.join(a.work, "bad_placement.json")
    with open(bad, "w") as f:
        json.dump({"experts": [0, 1, 2, 0, 1, 0, 1, 0]}, f)
    r = mpirun(a, 2, generate_args(model, os.path.join(a.work, "x"), "on") +
               ["--expert-parallel", "--placement", bad], timeout=60)
    check(r.returncode != 0 and "experts[2]: expected a rank in [0, 2), got 2" in r.stderr,
          "a placement naming rank 2 of 2 ranks: refused, naming the entry", failures)
    r = subprocess.run([a.moex] + generate_args(model, os.path.join(a.work, "x"), "on") +
                       ["--placement", bad], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--placement needs --expert-parallel" in r.stderr,
          "--placement without --expert-parallel: exit 2 with the reason", failures)
    # One rank cannot read its checkpoint (the other can): that rank reports, every rank stops.
    r = mpirun(a, 2, ["generate", "-m", model, "--prompt-ids", "3,99999", "-n", "2", "--threads", "1",
                      "--expert-parallel"], timeout=60)
    check(r.returncode != 0 and "[rank 0 of 2]" in r.stderr and "99999" in r.stderr,
          "a token outside the vocabulary: the rank's error names it and the run ends", failures)
    r = subprocess.run([a.moex] + generate_args(model, os.path.join(a.work, "single1"), "on") +
                       ["--expert-parallel"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "--expert-parallel without mpirun: one rank, runs", failures)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--moex", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failures = []
    parity(a, failures)
    reads(a, failures)
    errors(a, failures)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all expert-parallel checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
