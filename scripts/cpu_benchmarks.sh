#!/usr/bin/env bash
# Runs the CPU measurements behind docs/benchmark_results/ and keeps every raw output:
# bench-moe on the four shapes of the goal, bench-decode on the full qwen3-30b-a3b checkpoint,
# the model-level sweep over the prior system's models (layer-reduced) and `moex tune`.
# usage: scripts/cpu_benchmarks.sh OUT_DIR [steps...]   steps: moe decode sweep tune (default all)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/cpu_benchmarks.sh OUT_DIR [moe decode sweep tune]}; shift
steps=${*:-moe decode sweep tune}
moex=build/tools/moex
mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/steps.log"; }
log "commit $(git rev-parse --short=12 HEAD) $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for step in $steps; do
  case $step in
    moe)
      for p in qwen3-30b-a3b lfm2-8b-a1b phi-3.5-moe mixtral-8x7b; do
        log "bench-moe $p"
        $moex bench-moe --preset "$p" --threads 2 --repeats 15 -o md > "$out/bench_moe_$p.md" 2>>"$out/steps.log"
        $moex bench-moe --preset "$p" --threads 1 --repeats 9 -o md > "$out/bench_moe_${p}_t1.md" 2>>"$out/steps.log"
      done ;;
    decode)
      [ -f models/qwen3-30b-a3b/config.json ] || $moex make-model --preset qwen3-30b-a3b --out models/qwen3-30b-a3b
      $moex inspect models/qwen3-30b-a3b > "$out/inspect_qwen3-30b-a3b.txt"
      # Drop the checkpoint from the page cache: bench-decode then reads it through its
      # huge-page-advised mapping at open (populate), so the kernel caches it in 2 MB folios
      # and maps them with 2 MB entries (weights_pmd_mapped_fraction in the report). Pages
      # left cached by `cat` or by make-model's writes stay in small folios: 4 KB mappings,
      # TLB-bound reads (12.0 vs 12.9 tok/s measured 2026-11-29).
      for f in models/qwen3-30b-a3b/*.safetensors; do dd if="$f" iflag=nocache count=0 status=none; done
      log "bench-decode qwen3-30b-a3b (48 layers)"
      /usr/bin/time -v $moex bench-decode -m models/qwen3-30b-a3b --fused both -n 100 --warmup-tokens 20 \
        --repeats 3 --threads 2 -o md > "$out/bench_decode_qwen3-30b-a3b.md" 2>"$out/bench_decode_qwen3-30b-a3b.time" ;;
    sweep)
      log "sweep"
      $moex sweep -m models/lfm2-8b-a1b-L6,models/qwen3-30b-a3b-L4,models/olmoe-1b-7b-L4,models/qwen1.5-moe-a2.7b-L4,models/phi-3.5-moe-L4,models/llama-4-scout-L4,models/mixtral-8x7b-L4 \
        --repeats 3 -n 100 --warmup-tokens 20 --threads 2 --out "$out/sweep.csv" --resume > "$out/sweep_report.txt" 2>>"$out/steps.log" ;;
    tune)
      log "tune"
      $moex tune --threads 2 --out "$out/calibration.json" -o md > "$out/tune_report.md" 2>>"$out/steps.log" ;;
  esac
done
log "done"
