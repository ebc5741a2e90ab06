#!/usr/bin/env bash
# Decode only (64 tokens after the default short prompt), several binaries interleaved per
# round: decode_ab.sh MODEL OUTDIR ROUNDS NAME=BINARY [NAME=BINARY ...] (run.sh's loop).
PROMPT_TOKENS=0 exec "$(dirname "$0")/run.sh" "$@"
