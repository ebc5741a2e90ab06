#!/usr/bin/env bash
# Peak resident memory of loading and decoding the same unquantized (bf16) weights stored
# stacked (MLX layout, mapped in place) and per expert (Hugging Face layout, stacked into
# owned memory at load): the qwen3-30b-a3b shape cut to LAYERS layers.
# Usage: run.sh MOEX WORKDIR [LAYERS]   (from the repository root; needs .venv with mlx)
set -euo pipefail
moex=$1 work=$2 layers=${3:-2}
mkdir -p "$work"
"$moex" make-model --preset qwen3-30b-a3b --layers "$layers" --bits 0 --dtype bf16 \
  --out "$work/mlx" --reuse -q
rm -rf "$work/hf" && cp -r "$work/mlx" "$work/hf"
.venv/bin/python -c "import sys; sys.path.insert(0, 'src/model/engine/reference'); \
import parity; parity.to_hf_layout(sys.argv[1])" "$work/hf"
for layout in mlx hf; do
  for run in 1 2 3; do
    # Drop the page cache's hold on neither: both read the same bytes from files.
    "$moex" generate -m "$work/$layout" --prompt-ids 1,2,3,4 -n 4 --ignore-eos -v 2>&1 |
      grep -E "peak memory|loaded" | sed "s/^/$layout run $run: /"
  done
done
