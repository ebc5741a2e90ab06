#!/usr/bin/env bash
# Decode and prefill of one checkpoint with several moex binaries, interleaved per round:
#   run.sh MODEL OUTDIR ROUNDS NAME=BINARY [NAME=BINARY ...]
# Each run: bench-decode --prompt-tokens 512 -n 32 (prefill tok/s, decode tok/s, per-op profiles)
# into OUTDIR/round<r>.<name>.p512.json; a rerun keeps what is there.
set -euo pipefail
model=$1 out=$2 rounds=$3
shift 3
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for arm in "$@"; do
    name=${arm%%=*} bin=${arm#*=}
    f="$out/round$r.$name.p512.json"
    [[ -s $f ]] && continue
    "$bin" bench-decode -m "$model" --prompt-tokens 512 -n 32 --repeats 1 --warmup-tokens 1 \
      -o json > "$f.tmp" 2> "$f.stderr.txt"
    mv "$f.tmp" "$f"
  done
done
