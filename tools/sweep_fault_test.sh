#!/usr/bin/env bash
# Plants the prior system's sweep faults through a fake bench-decode and checks `moex sweep` reports
# them as INVALID (exit code 1), that a killed sweep resumes without losing or repeating a run,
# that --resume refuses other measurement settings, and that a half-built preset checkpoint
# is rebuilt instead of failing every run.
set -u
moex="$1"; here="$(cd "$(dirname "$0")" && pwd)"; fake="$here/testdata_fake_bench_decode.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/narrow" "$work/wide"
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails+1)); fi; }
sweep() { "$moex" sweep -m "$work/narrow,$work/wide" --repeats 3 -n 50 --bench-exe "$fake" "$@"; }

# 1. Clean sweep: valid ratios, crossover between the two Dff points, computed verdict.
export FAKE_COUNTER="$work/c1" FAKE_FAULT=none
out=$(sweep --out "$work/clean.csv" --cap 4096 2>/dev/null)
rc=$?
check "clean sweep exits 0" '[ $rc -eq 0 ]'
check "clean sweep recorded its settings beside the CSV" 'grep -q "\"n\": 50" "$work/clean.settings.json"'
check "clean sweep wrote its summary" '[ -s "$work/clean.summary.csv" ]'
check "clean sweep has 12 raw rows" '[ $(($(wc -l < "$work/clean.csv") - 1)) -eq 12 ]'
check "clean sweep reports a crossover" 'grep -q "crossover: Dff" <<<"$out"'
check "clean sweep verdict is computed" 'grep -q "verdict vs cap 4096: re-tune to" <<<"$out"'
check "sweep says auto runs fused on narrow, the faster arm" \
  'grep -q "auto policy: narrow (Dff 768): auto with cap 4096 runs fused; .*: the faster arm" <<<"$out"'
check "sweep says auto runs the fallback on wide, the faster arm" \
  'grep -q "auto policy: wide (Dff 14336): auto with cap 4096 runs the fallback; .*: the faster arm" <<<"$out"'
check "no INVALID in a clean sweep" '! grep -q INVALID <<<"$out"'

# 2. A family whose fallback arm still runs fused (no cap check): INVALID, no ratio.
export FAKE_COUNTER="$work/c2" FAKE_FAULT=no_switch
out=$(sweep --out "$work/noswitch.csv" 2>/dev/null)
rc=$?
check "a sweep with an invalid model exits 1" '[ $rc -eq 1 ]'
check "non-switching arm is INVALID" 'grep -q "^wide,.*INVALID: fallback run 1: fallback arm ran 100 fused calls" <<<"$out"'

# 3. A run that stops at end-of-sequence: INVALID.
export FAKE_COUNTER="$work/c3" FAKE_FAULT=early_eos
out=$(sweep --out "$work/eos.csv" 2>/dev/null)
check "early-stopping run is INVALID" 'grep -q "^narrow,.*INVALID: .*generated 16 tokens, expected 50" <<<"$out"'

# 4. A sweep killed on its 5th run keeps 4 rows; --resume adds the other 8, none twice.
export FAKE_COUNTER="$work/c4" FAKE_FAULT=kill_parent_at=5
sweep --out "$work/killed.csv" >/dev/null 2>&1
check "killed sweep kept its 4 finished runs" '[ $(($(wc -l < "$work/killed.csv") - 1)) -eq 4 ]'
export FAKE_FAULT=none
sweep --out "$work/killed.csv" >/dev/null 2>&1
check "without --resume an existing CSV is refused" '[ $(($(wc -l < "$work/killed.csv") - 1)) -eq 4 ]'
out=$(sweep --out "$work/killed.csv" --resume 2>/dev/null)
check "resumed sweep has all 12 runs" '[ $(($(wc -l < "$work/killed.csv") - 1)) -eq 12 ]'
check "no run recorded twice" '[ $(cut -d, -f1,14,15 "$work/killed.csv" | sort | uniq -d | wc -l) -eq 0 ]'
check "resume reported 4 resumed" 'grep -q "8 measured now, 4 resumed" <<<"$out"'
# 4b. Resuming under other measurement settings would mix them in one summary: refused.
"$moex" sweep -m "$work/narrow,$work/wide" --repeats 3 -n 60 --bench-exe "$fake" --out "$work/killed.csv" \
  --resume >/dev/null 2>"$work/err"; rc=$?
check "--resume with another -n is refused (exit 2, -n named)" '[ $rc -eq 2 ] && grep -q -- "-n: the runs so far were measured with 50" "$work/err"'
check "the refused resume added no row" '[ $(($(wc -l < "$work/killed.csv") - 1)) -eq 12 ]'
rm "$work/killed.settings.json"  # a CSV from before settings files: its rows are checked
"$moex" sweep -m "$work/narrow,$work/wide" --repeats 3 -n 60 --bench-exe "$fake" --out "$work/killed.csv" \
  --resume >/dev/null 2>"$work/err"; rc=$?
check "--resume of an older CSV checks -n against its rows" '[ $rc -eq 2 ] && grep -q -- "-n: run" "$work/err"'
# 4c. A model whose every run fails: recorded, INVALID, and the sweep exits 1.
export FAKE_COUNTER="$work/c4c" FAKE_FAULT=crash_wide
out=$(sweep --out "$work/crash.csv" 2>"$work/err"); rc=$?
check "a sweep with failed runs exits 1" '[ $rc -eq 1 ] && grep -q "runs failed or are invalid" "$work/err"'
check "the failed runs are INVALID in the summary" 'grep -q "^wide,.*INVALID: .*run failed" <<<"$out"'
export FAKE_FAULT=none
# 5. A real sweep on two tiny checkpoints (built from presets by the sweep itself): every run
#    valid, each arm ran only its own path, a computed verdict.
out=$("$moex" sweep -m tiny-qwen3-moe,tiny-mixtral --models-dir "$work/models" --repeats 2 -n 8 \
      --warmup-tokens 2 --threads 1 --out "$work/real.csv" 2>/dev/null)
check "real sweep recorded 8 runs" '[ $(($(wc -l < "$work/real.csv") - 1)) -eq 8 ]'
check "real sweep has no INVALID model" '! grep -q INVALID <<<"$out"'
check "real sweep fused arm ran only fused calls" '[ $(awk -F, '"'"'NR>1 && $14=="fused" && $20!=0'"'"' "$work/real.csv" | wc -l) -eq 0 ]'
check "real sweep fallback arm ran only fallback calls" '[ $(awk -F, '"'"'NR>1 && $14=="fallback" && $19!=0'"'"' "$work/real.csv" | wc -l) -eq 0 ]'
check "real sweep printed a verdict" 'grep -q "^verdict vs cap" <<<"$out"'
# 6. A preset directory left half-built (an interrupted make-model of an older moex, a copy
#    cut short): the sweep rebuilds it instead of failing every run, and exits 0.
mkdir -p "$work/models2/tiny-qwen3-moe"
cp "$work/models/tiny-qwen3-moe/config.json" "$work/models2/tiny-qwen3-moe/"
head -c 4096 "$work/models/tiny-qwen3-moe/model.safetensors" > "$work/models2/tiny-qwen3-moe/model.safetensors"
out=$("$moex" sweep -m tiny-qwen3-moe --models-dir "$work/models2" --repeats 1 -n 4 \
      --warmup-tokens 1 --threads 1 --out "$work/half.csv" 2>"$work/err"); rc=$?
check "a half-built preset directory is rebuilt (exit 0)" '[ $rc -eq 0 ] && grep -q "incomplete" "$work/err"'
check "the rebuilt preset's runs are valid" '! grep -q INVALID <<<"$out" && [ $(($(wc -l < "$work/half.csv") - 1)) -eq 2 ]'
exit $fails
