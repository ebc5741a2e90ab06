#!/usr/bin/env bash
# bench-serve on a tiny model: one row per stream count with the batched steps it claims
# (rows per step above 1 with several streams, the union of experts read per step growing
# with the streams but per token shrinking or equal), and a bad --streams refused naming it.
set -euo pipefail
moex="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$moex" make-model --preset tiny-qwen3-moe --out "$tmp/m" -q
export MOEX_FUSED_MOE_MEASURE=0
"$moex" bench-serve -m "$tmp/m" --streams 1,4 -n 12 --prompt-tokens 3 --repeats 1 -o csv \
  >"$tmp/out.csv" 2>"$tmp/err.txt"
python3 - "$tmp/out.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["streams"] for r in rows] == ["1", "4"], rows
one, four = rows
f = lambda r, k: float(r[k])
assert f(one, "rows_per_step") == 1.0, one["rows_per_step"]
assert f(four, "rows_per_step") > 1.5, four["rows_per_step"]  # the four streams shared steps
assert f(four, "expert_mb_per_step") > f(one, "expert_mb_per_step"), (one, four)
assert f(four, "expert_mb_per_token") <= f(one, "expert_mb_per_token") * 1.0001, (one, four)
for r in rows:
    for k in ("median_tps", "engine_batch_tps", "engine_alone_median_tps"):
        assert f(r, k) > 0, (k, r[k])
print("bench_serve_test: rows", [(r["streams"], r["rows_per_step"], r["expert_mb_per_token"]) for r in rows])
PY
set +e
"$moex" bench-serve -m "$tmp/m" --streams 0 >/dev/null 2>"$tmp/bad.txt"
rc=$?
set -e
[ "$rc" = 2 ] || { echo "bench-serve --streams 0: exit $rc, expected 2"; exit 1; }
grep -q -- "--streams" "$tmp/bad.txt" || { echo "error does not name --streams:"; cat "$tmp/bad.txt"; exit 1; }
echo "bench_serve_test: ok"
