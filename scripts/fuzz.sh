#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) into build-fuzz, replays
# fuzz/regressions/<target>/, then fuzzes each target for SECONDS (default 600) from inputs made
# from the tiny presets. Exit 1 on any crash, leak, timeout, OOM or broken invariant.
# Usage: scripts/fuzz.sh [seconds-per-target] [target ...]   (JOBS=n for the build's -j)
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-600}"
shift || true
all_targets=(fuzz_safetensors fuzz_gguf fuzz_gguf_model fuzz_checkpoint_index fuzz_model_config fuzz_tokenizer
             fuzz_chat_template fuzz_serve_request fuzz_http_framing)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
jobs="${JOBS:-$(nproc)}"

# Largest input per target: above the biggest starting input, small enough to keep executions fast.
max_len_of() {
  case "$1" in
    fuzz_safetensors) echo 32768 ;;
    fuzz_gguf) echo 16384 ;;
    fuzz_gguf_model) echo 65536 ;;
    fuzz_checkpoint_index) echo 32768 ;;
    fuzz_model_config) echo 16384 ;;
    fuzz_tokenizer) echo 65536 ;;
    fuzz_chat_template) echo 32768 ;;
    fuzz_serve_request) echo 8192 ;;
    fuzz_http_framing) echo 8192 ;;
    *) echo 4096 ;;
  esac
}
# Token dictionary per target: JSON for the file parsers, Jinja for the templates, HTTP syntax
# for the request framing, GGUF's magic, keys and little-endian integers for GGUF.
dict_of() {
  case "$1" in
    fuzz_chat_template) echo fuzz/dicts/jinja.dict ;;
    fuzz_http_framing) echo fuzz/dicts/http.dict ;;
    fuzz_gguf|fuzz_gguf_model) echo fuzz/dicts/gguf.dict ;;
    *) echo fuzz/dicts/json.dict ;;
  esac
}

source scripts/lib/checked_build.sh
dir=$moex_checked_dir

echo "== fuzz: build ($dir) =="
t0=$SECONDS
moex_checked_configure
cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
echo "== fuzz: build took $((SECONDS - t0)) s =="

# Starting inputs: the tiny presets written by `moex make-model` (a Release build's, or built here).
moex_bin="${MOEX_BIN:-build/tools/moex}"
if [ ! -x "$moex_bin" ]; then
  echo "fuzz: no $moex_bin; building the moex tool in $dir for the starting inputs"
  cmake --build "$dir" -j"$jobs" --target moex
  moex_bin="$dir/tools/moex"
fi
rm -rf "$dir/initial"
ASAN_OPTIONS=detect_leaks=0 python3 fuzz/make_corpus.py "$moex_bin" "$dir/initial"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
summary=()
for t in "${targets[@]}"; do
  bin="$dir/fuzz/$t"
  art="$dir/artifacts/$t"
  corpus="$dir/corpus/$t"
  log="$dir/logs/$t.log"
  mkdir -p "$art" "$corpus" "$dir/logs"
  rm -f "$art"/*
  flags=(-max_len="$(max_len_of "$t")" -timeout=10 -rss_limit_mb=2048 -dict="$(dict_of "$t")"
         -artifact_prefix="$art/" -print_final_stats=1)

  # Inputs that once failed: each must now pass (one run per file names every failing one).
  mapfile -t regress < <(find "fuzz/regressions/$t" -type f ! -name '*.md' 2>/dev/null | sort)
  replay="no regressions"
  if [ ${#regress[@]} -gt 0 ]; then
    echo "== fuzz: $t: replaying ${#regress[@]} regression input(s) =="
    failing=()
    for r in "${regress[@]}"; do
      rlog="$dir/logs/$t.replay.$(basename "$r").log"
      if ! "$bin" "${flags[@]}" "$r" >"$rlog" 2>&1; then
        failing+=("$(basename "$r")")
        echo "fuzz: $t: regression $r FAILS:"
        grep -E "invariant broken|ERROR:|runtime error|terminate called|#[0-9]+ .* in moex::" \
          "$rlog" | head -20 || true
      fi
    done
    if [ ${#failing[@]} -eq 0 ]; then
      replay="${#regress[@]} regressions pass"
    else
      replay="${#failing[@]}/${#regress[@]} REGRESSIONS FAIL (${failing[*]})"
      status=1
    fi
  fi

  echo "== fuzz: $t: ${secs} s =="
  rc=0
  "$bin" "${flags[@]}" -max_total_time="$secs" "$corpus" "$dir/initial/$t" >"$log" 2>&1 || rc=$?
  # (A run that dies while loading its corpus prints none of these.)
  execs="$(grep 'stat::number_of_executed_units:' "$log" | tail -1 | awk '{print $2}' || true)"
  rate="$(grep 'stat::average_exec_per_sec:' "$log" | tail -1 | awk '{print $2}' || true)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}' || true)"
  mapfile -t found < <(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' \
                         -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  line="$t: ${execs:-?} executions (${rate:-?}/s), coverage ${cov:-?}"
  line="$line, corpus $(ls "$corpus" | wc -l), $replay"
  if [ "$rc" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
    status=1
    line="$line, FINDING (exit $rc): ${found[*]:-see $log}"
    pattern='ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|ERROR: libFuzzer|runtime error'
    grep -E -A30 "$pattern|invariant broken|terminate called" "$log" | head -60 || true
  else
    line="$line, no findings"
  fi
  echo "fuzz: $line"
  summary+=("$line")
done

echo "== fuzz: summary =="
printf '  %s\n' "${summary[@]}"
[ $status -eq 0 ] || echo "fuzz: findings: save each reproducer under fuzz/regressions/<target>/"
exit $status
