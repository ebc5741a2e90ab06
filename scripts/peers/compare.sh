#!/usr/bin/env bash
# moex against llama.cpp on the same weights, one command: builds the pinned llama.cpp peer when
# missing (scripts/peers/llamacpp.sh), writes each checkpoint's GGUF twin (cached) and runs both
# engines interleaved (tools/peers/compare.py; its --help lists the options).
#
#   scripts/peers/compare.sh --out benchmarks/peers-DATE [-n 64] [--rounds 3] [--prefill 512] DIR...
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
python="${MOEX_PEERS_PYTHON:-$repo/.venv/bin/python}"
moex="${MOEX:-$repo/build/tools/moex}"
if [[ ! -x "$moex" ]]; then
  echo "compare.sh: no moex binary at $moex (build first, or set MOEX)" >&2
  exit 2
fi
"$python" -c 'import gguf' 2>/dev/null || {
  echo "compare.sh: the gguf package is missing: $python -m pip install gguf==0.19.0" >&2; exit 2; }

peer=$("$repo/scripts/peers/llamacpp.sh")
eval "$peer"
export LLAMA_CPP_COMMIT LLAMA_CPP_PYTHON_VERSION
exec "$python" "$repo/tools/peers/compare.py" --moex "$moex" --llama-bench "$LLAMA_BENCH" \
  --llama-quantize "$LLAMA_QUANTIZE" "$@"
