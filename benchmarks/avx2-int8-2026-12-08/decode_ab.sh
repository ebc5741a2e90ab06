#!/usr/bin/env bash
# Decode only (the default short prompt), several binaries interleaved per round:
#   decode_ab.sh MODEL OUTDIR ROUNDS NAME=BINARY [NAME=BINARY ...]
set -euo pipefail
model=$1 out=$2 rounds=$3
shift 3
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for arm in "$@"; do
    name=${arm%%=*} bin=${arm#*=}
    f="$out/decode.round$r.$name.json"
    [[ -s $f ]] && continue
    "$bin" bench-decode -m "$model" -n 64 --repeats 1 --warmup-tokens 8 -o json > "$f.tmp" 2> "$f.stderr.txt"
    mv "$f.tmp" "$f"
  done
done
