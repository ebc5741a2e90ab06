#!/usr/bin/env bash
# One checkpoint with several moex binaries, interleaved per round:
#   run.sh MODEL OUTDIR ROUNDS NAME=BINARY [NAME=BINARY ...]
# Each run is one bench-decode (per-op profiles in its JSON): with PROMPT_TOKENS=P (default
# 512) a P-token prompt and 32 decoded tokens, into OUTDIR/round<r>.<name>.p<P>.json; with
# PROMPT_TOKENS=0 (decode_ab.sh) 64 tokens after the default short prompt, into
# OUTDIR/decode.round<r>.<name>.json. A rerun keeps what is there.
set -euo pipefail
model=$1 out=$2 rounds=$3
shift 3
prompt=${PROMPT_TOKENS:-512}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for arm in "$@"; do
    name=${arm%%=*} bin=${arm#*=}
    if [[ $prompt == 0 ]]; then
      f="$out/decode.round$r.$name.json"
      args=(-n 64 --warmup-tokens 8)
    else
      f="$out/round$r.$name.p$prompt.json"
      args=(--prompt-tokens "$prompt" -n 32 --warmup-tokens 1)
    fi
    [[ -s $f ]] && continue
    "$bin" bench-decode -m "$model" "${args[@]}" --repeats 1 -o json > "$f.tmp" 2> "$f.stderr.txt"
    mv "$f.tmp" "$f"
  done
done
