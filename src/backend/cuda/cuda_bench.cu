// CUDA MoE decode benchmarks (cuda_bench.h): graphs of many layers' fused or fallback decode
// over disjoint expert sets, timed with CUDA events; a device-to-device copy probe.
#include "backend/cuda/cuda_bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"
#include "backend/cuda/kernel_launch.h"

namespace moex::cuda {
namespace {

// RAII holders of the few CUDA objects the benchmark creates.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { MOEX_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s); }
};
struct Event {
  cudaEvent_t e = nullptr;
  Event() { MOEX_CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { (void)cudaEventDestroy(e); }
};
struct Graph {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (g) (void)cudaGraphDestroy(g);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Captures fn(l) for every layer l into one graph on `stream`.
template <typename Fn>
void capture(Graph& graph, cudaStream_t stream, int64_t layers, Fn&& fn) {
  MOEX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int64_t l = 0; l < layers; ++l) fn(l);
  } catch (...) {
    cudaGraph_t dropped = nullptr;
    (void)cudaStreamEndCapture(stream, &dropped);
    if (dropped) (void)cudaGraphDestroy(dropped);
    throw;
  }
  MOEX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph.g));
  MOEX_CUDA_CHECK(cudaGraphInstantiate(&graph.exec, graph.g, 0));
}

// Milliseconds of one replay of `graph`.
double time_replay(const Graph& graph, cudaStream_t stream, const Event& t0, const Event& t1) {
  MOEX_CUDA_CHECK(cudaEventRecord(t0.e, stream));
  MOEX_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));
  MOEX_CUDA_CHECK(cudaEventRecord(t1.e, stream));
  MOEX_CUDA_CHECK(cudaEventSynchronize(t1.e));
  float ms = 0.f;
  MOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, t0.e, t1.e));
  return double(ms);
}

BenchStat stat_per_layer(const std::vector<double>& ms, int64_t layers) {
  BenchStat s;
  const double f = 1000.0 / double(layers);
  s.median_us = median(ms) * f;
  s.min_us = *std::min_element(ms.begin(), ms.end()) * f;
  s.max_us = *std::max_element(ms.begin(), ms.end()) * f;
  return s;
}

// Bytes one expert's three projections occupy (packed + {scale, bias} pairs).
int64_t expert_bytes(const BenchMoeShape& s) {
  if (s.din <= 0 || s.dff <= 0 || s.group_size <= 0) return 1;
  const int64_t pair = s.sb_kind == SbKind::kF32 ? 8 : 4;
  auto proj = [&](int64_t n, int64_t k, int bits) {
    return n * (k * bits / 8 + k / s.group_size * pair);
  };
  const bool gated = s.act != kernels::Activation::kSquaredReLU;
  return proj(s.dff, s.din, s.gate_up_bits) * (gated ? 2 : 1) + proj(s.din, s.dff, s.down_bits);
}

}  // namespace

double measure_copy_bandwidth_gbps(int64_t bytes, int repeats) {
  if (bytes < (int64_t{1} << 20) || repeats < 1)
    fail("cuda copy probe: bytes = ", bytes, ", repeats = ", repeats,
         "; expected at least 1 MiB and one repeat");
  DeviceBuffer a{size_t(bytes)}, b{size_t(bytes)};
  a.fill_bytes(0x5a);
  Stream st;
  Event t0, t1;
  std::vector<double> ms;
  for (int i = 0; i < repeats + 2; ++i) {
    MOEX_CUDA_CHECK(cudaEventRecord(t0.e, st.s));
    MOEX_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), size_t(bytes), cudaMemcpyDeviceToDevice,
                                    st.s));
    MOEX_CUDA_CHECK(cudaEventRecord(t1.e, st.s));
    MOEX_CUDA_CHECK(cudaEventSynchronize(t1.e));
    float m = 0.f;
    MOEX_CUDA_CHECK(cudaEventElapsedTime(&m, t0.e, t1.e));
    if (i >= 2) ms.push_back(double(m));  // two warm-up copies
  }
  return 2.0 * double(bytes) / (median(ms) * 1e-3) / 1e9;
}

namespace {

// Everything one benchmark call allocates: the expert pool, per-layer ids and scores, the
// token, the output and the workspace, and the stream the graphs run on.
struct BenchSetup {
  DeviceMoeLayer layer;
  int64_t layers = 0, per_expert = 0;
  DeviceBuffer ids, scores, x, out;
  std::unique_ptr<DecodeWorkspace> ws;
  Stream stream;

  DecodeArgs args(const BenchMoeShape& s, int64_t l) const {
    DecodeArgs a;
    a.x = x.as<float>();
    a.expert_ids = ids.as<int32_t>() + l * s.top_k;
    a.scores = scores.as<float>() + l * s.top_k;
    a.top_k = s.top_k;
    a.out = out.as<float>();
    a.stream = stream.s;
    return a;
  }
};

void check_bench_args(const BenchMoeShape& shape, const BenchMoeOptions& opt) {
  if (shape.top_k < 1 || opt.max_layers < 1 || opt.repeats < 1 || opt.warmup < 0)
    fail("cuda bench: top_k = ", shape.top_k, ", max_layers = ", opt.max_layers,
         ", repeats = ", opt.repeats, ", warmup = ", opt.warmup, "; expected positive values");
  check_tiling(opt.fused_tiling, "cuda bench (fused)");
  check_tiling(opt.fallback_tiling, "cuda bench (fallback)");
}

// Sizes the expert pool (top_k distinct experts per layer, pool >= weight_bytes) and fills it.
void make_setup(BenchSetup& b, const BenchMoeShape& shape, const BenchMoeOptions& opt) {
  DeviceMoeLayer::RandomShape rs;
  rs.din = shape.din;
  rs.dff = shape.dff;
  rs.gate_up_bits = shape.gate_up_bits;
  rs.down_bits = shape.down_bits;
  rs.group_size = shape.group_size;
  rs.act = shape.act;
  rs.sb_kind = shape.sb_kind;
  b.per_expert = expert_bytes(shape);
  const int64_t wanted = (opt.weight_bytes + b.per_expert - 1) / b.per_expert;
  b.layers = std::max<int64_t>(2, (wanted + shape.top_k - 1) / shape.top_k);
  b.layers = std::min<int64_t>(b.layers, opt.max_layers);
  rs.experts = b.layers * shape.top_k;
  rs.seed = 12345;
  b.layer = DeviceMoeLayer::random(rs);
  // Layer l uses experts l*K .. l*K+K-1 (listed in reverse, so ids are not trivially sorted).
  std::vector<int32_t> ids(size_t(b.layers * shape.top_k));
  std::vector<float> scores(ids.size(), 1.f / float(shape.top_k));
  for (int64_t l = 0; l < b.layers; ++l)
    for (int k = 0; k < shape.top_k; ++k)
      ids[size_t(l * shape.top_k + k)] = int32_t(l * shape.top_k + (shape.top_k - 1 - k));
  std::vector<float> x(size_t(shape.din));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i) + 0.1f);
  b.ids = to_device(ids);
  b.scores = to_device(scores);
  b.x = to_device(x);
  b.out = DeviceBuffer(size_t(shape.din) * 4);
  b.ws = std::make_unique<DecodeWorkspace>(b.layer, shape.top_k);
}

// Per-layer milliseconds of graph replays of fn(l) over all layers: `repeats` samples after
// `warmup` untimed replays.
template <typename Fn>
std::vector<double> time_layers(BenchSetup& b, const BenchMoeOptions& opt, Fn&& fn) {
  for (int64_t l = 0; l < 1; ++l) fn(l);  // direct run: smem opt-in and errors outside capture
  MOEX_CUDA_CHECK(cudaStreamSynchronize(b.stream.s));
  Graph g;
  capture(g, b.stream.s, b.layers, fn);
  Event t0, t1;
  for (int i = 0; i < opt.warmup; ++i) time_replay(g, b.stream.s, t0, t1);
  std::vector<double> ms;
  for (int i = 0; i < opt.repeats; ++i) ms.push_back(time_replay(g, b.stream.s, t0, t1));
  return ms;
}

__global__ void empty_kernel() {}

// Reads `ranges` 16-byte-word spans (blockIdx.y picks the span) with four loads in flight
// per thread; writes only if the XOR of everything hits a magic value (keeps the loads).
struct ReadRanges {
  const uint4* p[8];
  uint64_t n16[8];
};
template <int L>
__global__ void __launch_bounds__(256) read_kernel(ReadRanges r, uint32_t* sink) {
  const uint4* p = r.p[blockIdx.y];
  const uint64_t n = r.n16[blockIdx.y];
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += L * stride) {
    uint4 v[L];
#pragma unroll
    for (int j = 0; j < L; ++j) v[j] = i + j * stride < n ? __ldg(p + i + j * stride) : uint4{};
#pragma unroll
    for (int j = 0; j < L; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// The weight bytes of layer l (or of layers [l, l + count)) as up to six spans.
ReadRanges layer_ranges(const BenchSetup& b, int top_k, int64_t l, int64_t count) {
  ReadRanges r{};
  int i = 0;
  auto add = [&](const DeviceQuantWeights& w) {
    const uint64_t rows = uint64_t(top_k) * uint64_t(w.n);
    const uint64_t wb = rows * uint64_t(w.row_bytes()), sbb = rows * uint64_t(w.groups_per_row() * w.sb_pair_bytes());
    r.p[i] = reinterpret_cast<const uint4*>(w.w + uint64_t(l) * wb);
    r.n16[i++] = wb * uint64_t(count) / 16;
    r.p[i] = reinterpret_cast<const uint4*>(static_cast<const uint8_t*>(w.sb) + uint64_t(l) * sbb);
    r.n16[i++] = sbb * uint64_t(count) / 16;
  };
  add(b.layer.up());
  add(b.layer.down());
  if (b.layer.has_gate()) add(b.layer.gate());
  for (; i < 8; ++i) {
    r.p[i] = r.p[0];
    r.n16[i] = 0;
  }
  return r;
}

// wave_blocks == 0: one 4-load round per thread (enough blocks for the largest span, at most
// 4096); else wave_blocks blocks per span, 8 loads in flight per thread, grid-stride.
void launch_read(const ReadRanges& r, uint32_t* sink, cudaStream_t s, int wave_blocks = 0) {
  uint64_t most = 0;
  for (int i = 0; i < 8; ++i) most = std::max(most, r.n16[i]);
  if (wave_blocks > 0) {
    read_kernel<8><<<dim3(unsigned(wave_blocks), 8), 256, 0, s>>>(r, sink);
  } else {
    const uint64_t blocks =
        std::min<uint64_t>(std::max<uint64_t>((most + 1023) / 1024, 1), 4096);
    read_kernel<4><<<dim3(unsigned(blocks), 8), 256, 0, s>>>(r, sink);
  }
  MOEX_CUDA_CHECK_LAUNCH("read_kernel");
}

}  // namespace

BenchMoeResult bench_moe(const BenchMoeShape& shape, const BenchMoeOptions& opt) {
  check_bench_args(shape, opt);
  BenchMoeResult r;
  r.shape = shape;
  r.device = device_info().name;
  BenchSetup b;
  make_setup(b, shape, opt);
  r.experts_allocated = b.layers * shape.top_k;
  r.layers = b.layers;
  r.weight_bytes_per_layer = b.per_expert * shape.top_k;
  r.fused_name = fused_kernel_name(b.layer);
  r.fallback_name = fallback_kernel_name(b.layer);

  // Fused and fallback replays alternate, so drift affects both alike.
  auto fused = [&](int64_t l) {
    fused_decode(b.layer, b.args(shape, l), *b.ws, opt.fused_tiling);
  };
  auto fallback = [&](int64_t l) {
    fallback_decode(b.layer, b.args(shape, l), *b.ws, opt.fallback_tiling);
  };
  fused(0);
  fallback(0);
  MOEX_CUDA_CHECK(cudaStreamSynchronize(b.stream.s));
  Graph g_fused, g_fallback;
  capture(g_fused, b.stream.s, b.layers, fused);
  capture(g_fallback, b.stream.s, b.layers, fallback);
  Event t0, t1;
  for (int i = 0; i < opt.warmup; ++i) {
    time_replay(g_fused, b.stream.s, t0, t1);
    time_replay(g_fallback, b.stream.s, t0, t1);
  }
  std::vector<double> ms_fused, ms_fallback;
  for (int i = 0; i < opt.repeats; ++i) {
    ms_fused.push_back(time_replay(g_fused, b.stream.s, t0, t1));
    ms_fallback.push_back(time_replay(g_fallback, b.stream.s, t0, t1));
  }
  r.fused = stat_per_layer(ms_fused, b.layers);
  r.fallback = stat_per_layer(ms_fallback, b.layers);
  const double bytes = double(r.weight_bytes_per_layer);
  r.fused_gbps = bytes / (r.fused.median_us * 1e-6) / 1e9;
  r.fallback_gbps = bytes / (r.fallback.median_us * 1e-6) / 1e9;
  r.ratio = r.fallback.median_us / r.fused.median_us;
  if (opt.measure_copy) {
    r.copy_gbps = measure_copy_bandwidth_gbps(opt.copy_bytes, opt.repeats);
    r.fused_fraction_of_copy = r.fused_gbps / r.copy_gbps;
    r.fallback_fraction_of_copy = r.fallback_gbps / r.copy_gbps;
  }
  return r;
}

BenchProbeResult probe_moe(const BenchMoeShape& shape, const BenchMoeOptions& opt) {
  check_bench_args(shape, opt);
  BenchProbeResult r;
  r.shape = shape;
  BenchSetup b;
  make_setup(b, shape, opt);
  r.layers = b.layers;
  r.weight_bytes_per_layer = b.per_expert * shape.top_k;
  DeviceBuffer sink(16);
  const RowTiling t = opt.fused_tiling;
  auto us = [&](const std::vector<double>& ms) { return stat_per_layer(ms, b.layers).median_us; };
  r.empty_us = us(time_layers(b, opt, [&](int64_t) {
    empty_kernel<<<1, 32, 0, b.stream.s>>>();
    MOEX_CUDA_CHECK_LAUNCH("empty_kernel");
  }));
  r.stage_a_us = us(time_layers(b, opt, [&](int64_t l) {
    detail::fused_decode_stages(b.layer, b.args(shape, l), *b.ws, t, true, false);
  }));
  r.stage_b_us = us(time_layers(b, opt, [&](int64_t l) {
    detail::fused_decode_stages(b.layer, b.args(shape, l), *b.ws, t, false, true);
  }));
  r.fused_us = us(time_layers(b, opt, [&](int64_t l) {
    fused_decode(b.layer, b.args(shape, l), *b.ws, t);
  }));
  r.fallback_us = us(time_layers(b, opt, [&](int64_t l) {
    fallback_decode(b.layer, b.args(shape, l), *b.ws, opt.fallback_tiling);
  }));
  r.read_layer_us = us(time_layers(b, opt, [&](int64_t l) {
    launch_read(layer_ranges(b, shape.top_k, l, 1), sink.as<uint32_t>(), b.stream.s);
  }));
  const int sms = device_info().sm_count;
  r.read_layer_wave_us = us(time_layers(b, opt, [&](int64_t l) {
    launch_read(layer_ranges(b, shape.top_k, l, 1), sink.as<uint32_t>(), b.stream.s, sms);
  }));
  // All layers' bytes in one launch (time per layer, so comparable).
  {
    Event t0, t1;
    std::vector<double> ms;
    const ReadRanges all = layer_ranges(b, shape.top_k, 0, b.layers);
    for (int i = 0; i < opt.warmup + opt.repeats; ++i) {
      MOEX_CUDA_CHECK(cudaEventRecord(t0.e, b.stream.s));
      launch_read(all, sink.as<uint32_t>(), b.stream.s);
      MOEX_CUDA_CHECK(cudaEventRecord(t1.e, b.stream.s));
      MOEX_CUDA_CHECK(cudaEventSynchronize(t1.e));
      float m = 0.f;
      MOEX_CUDA_CHECK(cudaEventElapsedTime(&m, t0.e, t1.e));
      if (i >= opt.warmup) ms.push_back(double(m));
    }
    r.read_all_us = us(ms);
  }
  const double bytes = double(r.weight_bytes_per_layer);
  r.read_layer_gbps = bytes / (r.read_layer_us * 1e-6) / 1e9;
  r.read_all_gbps = bytes / (r.read_all_us * 1e-6) / 1e9;
  r.fused_gbps = bytes / (r.fused_us * 1e-6) / 1e9;
  return r;
}

std::vector<int64_t> default_dff_grid() {
  return {256, 512, 768, 1024, 1408, 1536, 1792, 2048, 2560, 3072, 4096,
          5632, 6400, 7168, 8192, 10240, 12288, 14336, 16384};
}

DffSweepResult sweep_dff(const BenchMoeShape& base, const std::vector<int64_t>& dffs,
                         const BenchMoeOptions& opt) {
  DffSweepResult res;
  res.base = base;
  res.device = device_info().name;
  BenchMoeOptions o = opt;
  o.measure_copy = false;
  for (int64_t dff : dffs) {
    if (dff <= 0 || dff % base.group_size != 0)
      fail("cuda Dff sweep: Dff = ", dff, " is not a positive multiple of group_size = ",
           base.group_size);
    BenchMoeShape s = base;
    s.dff = dff;
    const BenchMoeResult r = bench_moe(s, o);
    DffSweepPoint p;
    p.dff = dff;
    p.fused_us = r.fused.median_us;
    p.fallback_us = r.fallback.median_us;
    p.ratio = r.ratio;
    p.fused_gbps = r.fused_gbps;
    p.fallback_gbps = r.fallback_gbps;
    p.fused_spread = (r.fused.max_us - r.fused.min_us) / r.fused.median_us;
    p.fallback_spread = (r.fallback.max_us - r.fallback.min_us) / r.fallback.median_us;
    res.points.push_back(p);
  }
  if (opt.measure_copy) res.copy_gbps = measure_copy_bandwidth_gbps(opt.copy_bytes, opt.repeats);
  for (size_t i = 1; i < res.points.size(); ++i) {
    const DffSweepPoint &a = res.points[i - 1], &b = res.points[i];
    if (a.ratio >= 1.0 && b.ratio < 1.0) {
      const double t = (a.ratio - 1.0) / (a.ratio - b.ratio);
      res.crossover_dff = double(a.dff) + t * double(b.dff - a.dff);
      break;
    }
  }
  return res;
}

}  // namespace moex::cuda
