#!/usr/bin/env python3
# Expert parallelism end to end (docs/expert_parallel.md): `mpirun -np R moex generate
# --expert-parallel` against the single-process run of the same checkpoint.
#  - parity: tiny checkpoints of nine families (FAMILIES below: plain routing; shared expert
#    with expert groups and a dense first layer; Llama-4's input-scaling top-1 with a shared
#    expert; Gemma-4's dense branch and expert output norm; gpt-oss's biases; Qwen3-Next's and
#    Qwen3.5-MoE's linear attention and gated shared expert; Nemotron-H's relu2 experts beside
#    Mamba-2 blocks; DeepSeek-V3's latent attention), 2 and 3 ranks (3 splits
#    8 experts 3/3/2), fused on and off, and a placement file with interleaved owners: the
#    ranks exchange their experts' outputs and each combines them as one process does, so
#    the greedy tokens and every step's logits equal the single run's bit for bit;
#  - reads: on a checkpoint whose experts are large next to a page, each rank's resident
#    checkpoint bytes stay near what it populated at open (its share, not the whole file); in
#    the Hugging Face per-expert layout, whose experts moex copies at load, a rank copies only
#    its own (bit-equal logits on a tiny model, and a lower peak RSS on the real shape);
#  - serve: `moex serve --expert-parallel` under mpirun answers concurrent requests with the
#    single-process server's text (greedy), and SIGTERM to rank 0 ends every rank with exit 0;
#  - gguf: a Q4_0 GGUF file (experts in the ggml_q0 block mode) on 2 ranks equals one process bit
#    for bit; ranks with different GGUF files are refused, by default and with
#    --verify-checkpoint;
#  - faults: a bad placement file, --placement alone, a rank whose checkpoint is missing, ranks
#    that opened different checkpoints, a rank that fails mid-run, a rank killed mid-run: exit
#    non-zero with a message naming the rank and the cause, every rank stopped (no hang: each
#    run has a timeout).
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np

PROMPT = "3,14,15,92,65,35,89,79,32,38,46,26,43"
STEPS = 24
# A chosen subset of the families (arch/families.def), not all of them: expert parallelism
# splits only the routed experts and exchanges their outputs and the shared expert's term, so
# one family per distinct MoE block and per kind of mixer beside it covers it (the features
# named above). A family that brings a new kind of either joins this list.
FAMILIES = ["tiny-qwen3-moe", "tiny-glm4-moe", "tiny-llama4", "tiny-gemma4", "tiny-gpt-oss",
            "tiny-qwen3-next", "tiny-qwen3-5-moe", "tiny-nemotron-h",
            "tiny-deepseek-v3"]


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


def gguf(a, failures):
    """A GGUF file (tiny Mixtral's Q4_0 twin: its experts in the ggml_q0 block mode), 2 ranks
    against one process, bit for bit; ranks opening different GGUF files are refused; with
    --verify-checkpoint every byte of the file is compared."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "tools", "peers"))
    from gguf_twin import twin  # noqa: E402
    files = []
    for seed in (0, 1):
        model = os.path.join(a.work, f"tiny-mixtral-seed{seed}")
        subprocess.run([a.moex, "make-model", "--preset", "tiny-mixtral", "--seed", str(seed),
                        "--out", model, "--reuse", "-q"], check=True)
        path = os.path.join(a.work, f"tiny-mixtral-seed{seed}-q4_0.gguf")
        twin(model, path, mode="q4_0", reuse=True, progress=False)
        files.append(path)
    single = os.path.join(a.work, "gguf.single")
    r = subprocess.run([a.moex] + generate_args(files[0], single, "on"), capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        check(False, f"GGUF single run: {r.stderr.strip()[-400:]}", failures)
        return
    ids, ref = load(single)
    dump = os.path.join(a.work, "gguf.ep2")
    r = mpirun(a, 2, generate_args(files[0], dump, "on") + ["--expert-parallel"])
    if r.returncode != 0:
        check(False, f"GGUF 2 ranks: exit {r.returncode}: {r.stderr.strip()[-400:]}", failures)
        return
    got_ids, got = load(dump)
    check(got_ids == ids and not (got.view(np.uint32) != ref.view(np.uint32)).any(),
          "a Q4_0 GGUF file on 2 ranks: greedy tokens and every logit equal one process's", failures)
    cmd = [a.mpiexec, "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    one = ["generate", "--prompt-ids", "3,14,15", "-n", "4", "--threads", "1", "--expert-parallel"]
    for extra, want in (([], "checkpoint of rank 1 differs from rank 0's"),
                        (["--verify-checkpoint"], "differs from rank 0's (some byte")):
        r = subprocess.run(cmd + ["-np", "1", a.moex] + one + extra + ["-m", files[0], ":", "-np", "1",
                                  a.moex] + one + extra + ["-m", files[1]],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode != 0 and want in r.stderr,
              f"ranks opening different GGUF files{' (' + extra[0] + ')' if extra else ''}: "
              "refused, naming rank 1", failures)
    r = mpirun(a, 2, ["generate", "-m", files[0], "--prompt-ids", "3,14,15", "-n", "4", "--threads",
                      "1", "--expert-parallel", "--verify-checkpoint"], timeout=60)
    check(r.returncode == 0, "the same GGUF file on both ranks, --verify-checkpoint: runs", failures)


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
    hf_layout_reads(a, big=model, failures=failures)


def to_hf_copy(src, dst):
    # The Hugging Face per-expert layout of a moex checkpoint (parity.py's writer).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model",
                                    "engine", "reference"))
    import parity
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    parity.to_hf_layout(dst)


def hf_layout_reads(a, big, failures):
    tiny = os.path.join(a.work, "tiny-qwen3-moe")
    tiny_hf = os.path.join(a.work, "tiny-qwen3-moe-hf")
    to_hf_copy(tiny, tiny_hf)
    single, ep = os.path.join(a.work, "hf.single"), os.path.join(a.work, "hf.ep2")
    r1 = subprocess.run([a.moex] + generate_args(tiny_hf, single, "on"), capture_output=True,
                        text=True, timeout=120)
    r2 = mpirun(a, 2, generate_args(tiny_hf, ep, "on") + ["--expert-parallel"])
    same = r1.returncode == 0 and r2.returncode == 0 and open(single, "rb").read() == open(ep, "rb").read()
    check(same, "Hugging Face per-expert layout, 2 ranks: logits equal the single process's bit for bit",
          failures)
    big_hf = big + "-hf"
    to_hf_copy(big, big_hf)
    bench = ["bench-decode", "-m", big_hf, "--prompt-ids", "3,14,15", "-n", "4", "--warmup-tokens", "1",
             "--repeats", "1", "--threads", "1", "-o", "json"]
    r1 = subprocess.run([a.moex] + bench, capture_output=True, text=True, timeout=300)
    r2 = mpirun(a, 2, bench + ["--expert-parallel"], timeout=300)
    if r1.returncode != 0 or r2.returncode != 0:
        check(False, f"bench-decode on the Hugging Face layout: {r1.stderr[-300:]} {r2.stderr[-300:]}", failures)
        return
    one, two = json.loads(r1.stdout)["peak_rss_bytes"], json.loads(r2.stdout)["peak_rss_bytes"]
    # Experts are 226 of the checkpoint's 352 MB: copying half of them leaves rank 0 near
    # 0.7 of one process's peak or less (measured 267 MB against 369-663 MB, which depends on
    # how much of the file the single process still holds); copying all would be ~1.0.
    check(two < 0.8 * one, f"Hugging Face layout: rank 0 peak RSS {two / 1e6:.0f} MB < 0.8 x one "
          f"process's {one / 1e6:.0f} MB (it copies only its own experts)", failures)


def flip_one_expert_byte(src, dst):
    """A copy of checkpoint `src` whose one byte, in the middle of the last routed-expert
    tensor (switch_mlp), is inverted; every other byte and file is the same."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    for name in sorted(os.listdir(dst)):
        if not name.endswith(".safetensors"):
            continue
        path = os.path.join(dst, name)
        with open(path, "r+b") as f:
            (n,) = np.frombuffer(f.read(8), np.uint64)
            header = json.loads(f.read(int(n)))
            experts = [k for k in header if "switch_mlp" in k and k.endswith(".weight")]
            if not experts:
                continue
            begin, end = header[sorted(experts)[-1]]["data_offsets"]
            at = 8 + int(n) + (begin + end) // 2
            f.seek(at)
            b = f.read(1)[0]
            f.seek(at)
            f.write(bytes([b ^ 0xFF]))
            return dst
    raise RuntimeError(f"{src}: no switch_mlp weight to change")


def errors(a, failures):
    model = os.path.join(a.work, "tiny-qwen3-moe")
    subprocess.run([a.moex, "make-model", "--preset", "tiny-qwen3-moe", "--out", model, "--reuse",
                    "-q"], check=True)
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
    # Both ranks meet the bad id; whichever reports first aborts the other.
    check(r.returncode != 0 and re.search(r"\[rank [01] of 2\]", r.stderr) is not None
          and "99999" in r.stderr,
          "a token outside the vocabulary: the rank's error names it and the run ends", failures)
    r = subprocess.run([a.moex] + generate_args(model, os.path.join(a.work, "single1"), "on") +
                       ["--expert-parallel"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "--expert-parallel without mpirun: one rank, runs", failures)
    # Different command lines per rank (MPMD): rank 1 gets a missing, then another checkpoint.
    def two_ranks(model1, args_tail, timeout=60, both=()):
        cmd = [a.mpiexec, "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        one = ["generate", "--prompt-ids", "3,14,15", "-n", "4", "--threads", "1", "--expert-parallel",
               *both]
        cmd += ["-np", "1", a.moex] + one + ["-m", model] + [":", "-np", "1", a.moex] + one + ["-m", model1]
        return subprocess.run(cmd + args_tail, capture_output=True, text=True, timeout=timeout)
    missing = os.path.join(a.work, "no-such-model")
    r = two_ranks(missing, [])
    check(r.returncode != 0 and "[rank 1 of 2]" in r.stderr and missing in r.stderr,
          "rank 1's checkpoint missing: its error names the rank and the directory, the run ends",
          failures)
    other = os.path.join(a.work, "tiny-qwen3-moe-seed1")
    subprocess.run([a.moex, "make-model", "--preset", "tiny-qwen3-moe", "--seed", "1", "--out", other,
                    "--reuse", "-q"], check=True)
    r = two_ranks(other, [])
    check(r.returncode != 0 and "checkpoint of rank 1 differs from rank 0's" in r.stderr,
          "ranks opening different checkpoints of one shape: refused, naming rank 1", failures)
    # The same checkpoint but for one byte of an expert weight: the default comparison does not
    # read expert bytes and says so; --verify-checkpoint compares every byte and refuses it.
    flipped = flip_one_expert_byte(model, os.path.join(a.work, "tiny-qwen3-moe-flipped"))
    r = two_ranks(flipped, [])
    check(r.returncode == 0 and "not by their expert weights" in r.stderr,
          "one expert byte differs, default check: runs and says expert weights are not compared",
          failures)
    r = two_ranks(flipped, [], both=["--verify-checkpoint"])
    check(r.returncode != 0 and "checkpoint of rank 1 differs from rank 0's (some byte" in r.stderr,
          "one expert byte differs, --verify-checkpoint: refused, naming rank 1", failures)
    r = two_ranks(model, [], both=["--verify-checkpoint"])
    check(r.returncode == 0 and "not by their expert weights" not in r.stderr,
          "the same checkpoint on both ranks, --verify-checkpoint: runs", failures)
    r = two_ranks(model, ["--verify-checkpoint"])
    check(r.returncode != 0 and "--verify-checkpoint on some ranks only (rank 1 not as rank 0)" in r.stderr,
          "--verify-checkpoint on rank 1 only: refused, naming the flag and rank 1", failures)
    # A rank killed mid-run (SIGKILL, no chance to report): mpirun ends the others.
    big = os.path.join(a.work, "olmoe-1layer")
    cmd = [a.mpiexec, "-np", "2", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    p = subprocess.Popen(cmd + [a.moex, "bench-decode", "-m", big, "--prompt-ids", "3,14,15", "-n", "4000",
                                "--warmup-tokens", "0", "--repeats", "50", "--threads", "1",
                                "--expert-parallel"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.time() + 60
    while victim is None and time.time() < deadline and p.poll() is None:
        time.sleep(0.5)
        victim = rank_pid(p.pid, 1)
    time.sleep(2)  # into the decode loop
    if victim:
        os.kill(victim, signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=60)
        ended = True
    except subprocess.TimeoutExpired:
        p.kill()
        err, ended = "", False
    check(victim is not None and ended and p.returncode != 0 and "rank 1" in err,
          f"rank 1 killed mid-run: the run ends (exit {p.returncode}) and mpirun names rank 1", failures)


def start_server(cmd):
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines = []
    deadline = time.time() + 60
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"listening on http://127.0.0.1:(\d+)", line)
        if m:
            threading.Thread(target=p.stderr.read, daemon=True).start()  # keep draining
            return p, int(m.group(1))
    p.kill()
    raise RuntimeError("server did not start: " + "".join(lines[-5:]))


def complete(port, prompt):
    body = json.dumps({"prompt": prompt, "max_tokens": 12, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        j = json.load(r)
    return j["choices"][0]["text"], j["usage"]["completion_tokens"]


def ask_all(port, prompts):
    out = [None] * len(prompts)
    def one(i):
        out[i] = complete(port, prompts[i])
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def rank_pid(mpirun_pid, rank):
    # The moex processes this mpirun started (its children on one host); a rank's environment
    # says OMPI_COMM_WORLD_RANK=<rank>.
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == mpirun_pid and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


def serve(a, failures):
    model = os.path.join(a.work, "tiny-qwen3-moe")
    prompts = ["hello world", "the quick brown fox", "hello world again", "a b c d e f"]
    args = ["serve", "-m", model, "--port", "0", "--parallel", "3", "--threads", "1"]
    single, port = start_server([a.moex] + args)
    want = ask_all(port, prompts)
    again = ask_all(port, prompts)  # prompt-cache hits this time
    single.send_signal(signal.SIGTERM)
    single.wait(timeout=30)
    cmd = [a.mpiexec, "-np", "2", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    ep, port = start_server(cmd + [a.moex] + args + ["--expert-parallel"])
    try:
        got = ask_all(port, prompts)
        got_again = ask_all(port, prompts)
        check(got == want and got_again == again,
              f"serve --expert-parallel, 2 ranks: {len(prompts)} concurrent greedy completions (twice, "
              f"the second from the prompt cache) equal the single-process server's", failures)
        pid = rank_pid(ep.pid, 0)
        check(pid is not None, "serve --expert-parallel: rank 0's process found", failures)
        if pid:
            os.kill(pid, signal.SIGTERM)
            rc = ep.wait(timeout=30)
            check(rc == 0, f"SIGTERM to rank 0: every rank exits, mpirun exit {rc}", failures)
    finally:
        if ep.poll() is None:
            ep.kill()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--moex", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--work", required=True)
    sections = {"parity": parity, "gguf": gguf, "reads": reads, "serve": serve, "errors": errors}
    p.add_argument("--only", choices=sorted(sections), action="append",
                   help="run these sections (default: all)")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failures = []
    for name, section in sections.items():
        if not a.only or name in a.only:
            section(a, failures)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all expert-parallel checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
