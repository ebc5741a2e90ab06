// Benchmarks of the CUDA MoE decode paths for `moex bench-moe --backend cuda` and
// `moex tune --backend cuda`: fused and fallback timed per layer with CUDA events (graph
// replays of many layers whose expert weights together far exceed the L2 cache), weight
// bytes per second, and a device-to-device copy bandwidth probe measured in the same call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/moe_decode.h"
#include "kernels/moe_contract.h"

namespace moex::cuda {

struct BenchMoeShape {
  int64_t din = 2048, dff = 768;
  int top_k = 8;
  int gate_up_bits = 4, down_bits = 4, group_size = 64;
  kernels::Activation act = kernels::Activation::kSwiGLU;
  SbKind sb_kind = SbKind::kBF16;
};

struct BenchMoeOptions {
  // Expert weights allocated (and cycled through, top_k distinct experts per layer): at least
  // this many bytes, so that no layer finds its weights in L2.
  int64_t weight_bytes = int64_t{1} << 30;
  int max_layers = 256;    // layers captured in one graph replay
  int warmup = 3;          // untimed replays per path
  int repeats = 15;        // timed replays per path (alternating fused / fallback)
  RowTiling fused_tiling = kFusedTiling;
  RowTiling fallback_tiling = kFallbackTiling;
  bool measure_copy = true;
  int64_t copy_bytes = int64_t{1} << 30;  // per buffer of the copy probe
};

struct BenchStat {
  double median_us = 0, min_us = 0, max_us = 0;  // per layer
};

struct BenchMoeResult {
  BenchMoeShape shape;
  std::string device, fused_name, fallback_name;
  int64_t experts_allocated = 0, layers = 0;
  int64_t weight_bytes_per_layer = 0;  // top_k experts' packed weights + scales/biases
  BenchStat fused, fallback;
  double fused_gbps = 0, fallback_gbps = 0;  // weight bytes per layer / median time
  double copy_gbps = 0;  // copy probe: (bytes read + bytes written) / time; 0 if not measured
  double fused_fraction_of_copy = 0, fallback_fraction_of_copy = 0;
  double ratio = 0;  // fallback_us / fused_us: the fused/fallback throughput ratio (>1: fused wins)
};

// Throws moex::Error without a device, for invalid shapes, or on CUDA errors.
BenchMoeResult bench_moe(const BenchMoeShape& shape, const BenchMoeOptions& opt = {});

// Where a layer's time goes (diagnostics for tuning the kernels): per-layer medians of an
// empty kernel, stage A alone, stage B alone, fused, fallback, and a plain read of the same
// weight bytes (one launch per layer, and all layers in one launch), all as graph replays
// over the same expert pool as bench_moe.
struct BenchProbeResult {
  BenchMoeShape shape;
  int64_t layers = 0, weight_bytes_per_layer = 0;
  double empty_us = 0, stage_a_us = 0, stage_b_us = 0, fused_us = 0, fallback_us = 0;
  double read_layer_us = 0, read_all_us = 0;
  double read_layer_wave_us = 0;  // the same read as one wave of blocks, 8 loads in flight each
  double fused_gbps = 0, read_layer_gbps = 0, read_all_gbps = 0;
};
BenchProbeResult probe_moe(const BenchMoeShape& shape, const BenchMoeOptions& opt = {});

// Median bandwidth of device-to-device cudaMemcpyAsync of `bytes`, counting read + write.
double measure_copy_bandwidth_gbps(int64_t bytes, int repeats);

// 256 .. 16384, including the Dff of the model table of docs/background.md §4 (768 .. 14336).
std::vector<int64_t> default_dff_grid();

struct DffSweepPoint {
  int64_t dff = 0;
  double fused_us = 0, fallback_us = 0, ratio = 0, fused_gbps = 0, fallback_gbps = 0;
  double fused_spread = 0, fallback_spread = 0;  // (max - min) / median over the repeats
};
struct DffSweepResult {
  std::string device;
  BenchMoeShape base;
  double copy_gbps = 0;
  std::vector<DffSweepPoint> points;
  // First Dff where the ratio falls from >= 1 to < 1, interpolated linearly between the two
  // neighbouring points; -1 when it never does.
  double crossover_dff = -1;
};
// Runs bench_moe at every Dff (skipping values the group size does not divide: Error).
DffSweepResult sweep_dff(const BenchMoeShape& base, const std::vector<int64_t>& dffs,
                         const BenchMoeOptions& opt = {});

}  // namespace moex::cuda
