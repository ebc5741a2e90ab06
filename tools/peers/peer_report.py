"""The table of compare.py, rebuilt from the raw per-run files under its --out folder (so a
partial or resumed run reports what it has): tok/s median/min/max per engine, the ratio, bytes
per token, GB/s and the fraction of the read bandwidth the per-round probe measured.
"""
import csv
import io
import json
import statistics
from pathlib import Path


def _load(path):
    return json.loads(path.read_text())["result"] if path.is_file() else None


def _rounds(d, kind):
    values, r = [], 1
    while (d / f"round{r}.probe.json").is_file() or (d / f"round{r}.{kind}.json").is_file():
        values.append(_load(d / f"round{r}.{kind}.json"))
        r += 1
    return [v for v in values if v is not None]


def _llama_tps(result):
    return float(result[0]["avg_ts"])


def model_rows(d):
    twin = json.loads((d / "twin.json").read_text())
    probes = [p["header"]["read_bw_best_gbps"] for p in _rounds(d, "probe")]
    bw = statistics.median(probes) if probes else None
    moex_tg = _rounds(d, "moex-tg")
    moex_bpt = (moex_tg[0]["model"]["active_weight_bytes_per_token"] if moex_tg
                else twin["bytes_per_token_moex"])
    # Decode after a context of `depth` tokens (compare.py --depth) also reads the KV cache: at
    # the run's middle token, depth + n / 2 tokens of it, in the element type each engine ran
    # (moex's figures per token of context for each type; llama.cpp's cache has the same shapes).
    kv_per_token = moex_tg[0]["model"].get("kv_cache_bytes_per_token", {}) if moex_tg else {}

    def kv_read(depth, n, kv_type):
        return kv_per_token[kv_type] * (depth + n / 2) if depth else 0

    def tg_name(n, depth):
        return f"tg{n} @ d{depth}" if depth else f"tg{n}"

    series = []
    if moex_tg:
        n = moex_tg[0]["settings"]["n"]
        settings = moex_tg[0]["settings"]
        # A synthetic prompt (--prompt-tokens) is the depth; the default short text prompt is not.
        depth = settings["prompt_tokens"] if not settings.get("prompt") else 0
        series.append((tg_name(n, depth), "moex",
                       [r["arms"][0]["median_decode_tps"] for r in moex_tg],
                       moex_bpt + kv_read(depth, n, moex_tg[0]["host"].get("kv_cache", "f32"))))
    llama_tg = _rounds(d, "llama-tg")
    if llama_tg:
        n, depth = llama_tg[0][0]["n_gen"], llama_tg[0][0].get("n_depth", 0)
        series.append((tg_name(n, depth), "llama.cpp", [_llama_tps(r) for r in llama_tg],
                       twin["bytes_per_token_gguf"]
                       + kv_read(depth, n, llama_tg[0][0].get("type_k", "f16"))))
    moex_pp = _rounds(d, "moex-pp")
    if moex_pp:
        series.append((f"pp{moex_pp[0]['prompt_tokens']}", "moex",
                       [r["prefill_tps"] for r in moex_pp], None))
    llama_pp = _rounds(d, "llama-pp")
    if llama_pp:
        series.append((f"pp{llama_pp[0][0]['n_prompt']}", "llama.cpp",
                       [_llama_tps(r) for r in llama_pp], None))
    rows = []
    for test, engine, tps, bpt in series:
        med = statistics.median(tps)
        gbps = med * bpt / 1e9 if bpt else None
        rows.append({"model": d.name, "test": test, "engine": engine, "runs": len(tps),
                     "tps_median": med, "tps_min": min(tps), "tps_max": max(tps),
                     "bytes_per_token": bpt, "gbps": gbps,
                     "read_bw_gbps": bw, "fraction_of_read_bw": gbps / bw if gbps and bw else None,
                     "probe_min_max": [min(probes), max(probes)] if probes else None,
                     "twin": f"{twin['type']} {twin['bits_per_weight_gguf']:.3f} b/w "
                             f"(moex {twin['bits_per_weight_moex']:.3f})"})
    by_test = {}
    for row in rows:
        by_test.setdefault(row["test"], {})[row["engine"]] = row["tps_median"]
    for row in rows:
        pair = by_test[row["test"]]
        row["ratio_moex_over_llama"] = (pair["moex"] / pair["llama.cpp"]
                                        if "moex" in pair and "llama.cpp" in pair else None)
    return rows


def _fmt(v, digits=1):
    if v is None:
        return ""
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def render(out, names, facts, fmt):
    rows = [row for name in names if (Path(out) / name / "twin.json").is_file()
            for row in model_rows(Path(out) / name)]
    if fmt == "json":
        return json.dumps({"host": facts, "rows": rows}, indent=1) + "\n"
    cols = ["model", "test", "engine", "runs", "tps_median", "tps_min", "tps_max",
            "ratio_moex_over_llama", "bytes_per_token", "gbps", "read_bw_gbps",
            "fraction_of_read_bw", "twin"]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()
    head = ["model", "test", "engine", "runs", "tok/s median", "min", "max", "moex/llama",
            "MB/token", "GB/s", "probe GB/s", "of probe", "twin"]
    lines = [f"moex vs llama.cpp, {facts['threads']} threads, {facts['cpu_model']}, "
             f"{facts['date']}; {facts['moex_version']} (repo {facts['repo_commit']}), "
             f"llama.cpp {facts['llama_cpp_commit'][:10]}; moex ran "
             f"{facts.get('moex_input', 'the MLX checkpoint')}"
             + (f"; KV cache {facts['kv_cache']}" if facts.get("kv_cache") else ""), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        mb = r["bytes_per_token"] / 1e6 if r["bytes_per_token"] else None
        lines.append("| " + " | ".join([
            r["model"], r["test"], r["engine"], str(r["runs"]), _fmt(r["tps_median"]),
            _fmt(r["tps_min"]), _fmt(r["tps_max"]), _fmt(r["ratio_moex_over_llama"], 2),
            _fmt(mb, 2), _fmt(r["gbps"], 2), _fmt(r["read_bw_gbps"], 2),
            _fmt(r["fraction_of_read_bw"], 2), r["twin"]]) + " |")
    return "\n".join(lines) + "\n"
