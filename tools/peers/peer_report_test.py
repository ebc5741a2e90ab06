#!/usr/bin/env python3
"""peer_report's table from a hand-made compare.py folder: the bytes a decode step reads (the
weights, plus the KV cache at the run's middle token when the runs had a depth), the test names,
the ratio and the fraction of the probe. Exits non-zero on the first mismatch."""
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_report import model_rows  # noqa: E402

WEIGHTS_MOEX, WEIGHTS_GGUF, KV32, KV16 = 300e6, 280e6, 16384, 8192


def write(path, result):
    path.write_text(json.dumps({"cmd": [], "wall_s": 0, "result": result}))


def folder(root, depth, prompt_text, moex_kv="f32"):
    d = Path(root) / "m"
    d.mkdir()
    (d / "twin.json").write_text(json.dumps({
        "type": "q4_0", "bits_per_weight_gguf": 4.5, "bits_per_weight_moex": 4.5,
        "bytes_per_token_gguf": WEIGHTS_GGUF, "bytes_per_token_moex": WEIGHTS_MOEX}))
    for r, (moex_tps, llama_tps) in enumerate([(10.0, 8.0), (12.0, 6.0), (11.0, 7.0)], start=1):
        write(d / f"round{r}.probe.json", {"header": {"read_bw_best_gbps": 30.0 + r}})
        write(d / f"round{r}.moex-tg.json", {
            "model": {"active_weight_bytes_per_token": WEIGHTS_MOEX,
                      "kv_cache_bytes_per_token": {"f32": KV32, "f16": KV16}},
            "host": {"kv_cache": moex_kv},
            "settings": {"n": 64, "prompt_tokens": depth or 7, "prompt": prompt_text},
            "arms": [{"median_decode_tps": moex_tps}]})
        llama = {"n_gen": 64, "avg_ts": llama_tps, "type_k": "f16"}
        if depth:
            llama["n_depth"] = depth
        write(d / f"round{r}.llama-tg.json", [llama])
    return d


def check(cond, what):
    if not cond:
        print(f"peer_report_test: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as root:
        rows = {r["engine"]: r for r in model_rows(folder(root, 4096, ""))}
        moex, llama = rows["moex"], rows["llama.cpp"]
        check(moex["test"] == llama["test"] == "tg64 @ d4096", f"test names {moex['test']}")
        tokens = 4096 + 32  # the middle of 64 decoded tokens after 4096 of context
        kv = KV32 * tokens  # moex ran an f32 cache, llama.cpp an f16 one
        check(moex["bytes_per_token"] == WEIGHTS_MOEX + kv, f"moex bytes {moex['bytes_per_token']}")
        check(llama["bytes_per_token"] == WEIGHTS_GGUF + KV16 * tokens,
              f"llama bytes {llama['bytes_per_token']}")
        check(moex["tps_median"] == 11.0 and llama["tps_median"] == 7.0, "medians")
        check(abs(moex["ratio_moex_over_llama"] - 11.0 / 7.0) < 1e-12, "ratio")
        frac = 11.0 * (WEIGHTS_MOEX + kv) / 1e9 / 32.0  # probes 31, 32, 33: median 32
        check(abs(moex["fraction_of_read_bw"] - frac) < 1e-12, "fraction of the probe")
    with tempfile.TemporaryDirectory() as root:
        moex = {r["engine"]: r for r in model_rows(folder(root, 4096, "", "f16"))}["moex"]
        check(moex["bytes_per_token"] == WEIGHTS_MOEX + KV16 * (4096 + 32), "moex f16 bytes")
    with tempfile.TemporaryDirectory() as root:
        # No depth: moex's short text prompt is not a depth, and only the weights count.
        rows = {r["engine"]: r for r in model_rows(folder(root, 0, "Hello"))}
        check(rows["moex"]["test"] == rows["llama.cpp"]["test"] == "tg64", "names without depth")
        check(rows["moex"]["bytes_per_token"] == WEIGHTS_MOEX, "moex bytes without depth")
        check(rows["llama.cpp"]["bytes_per_token"] == WEIGHTS_GGUF, "llama bytes without depth")
    print("peer_report_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
