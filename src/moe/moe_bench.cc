// The fused-vs-fallback decode timing machinery (see moe_bench.h).
#include "moe/moe_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "core/read_bandwidth.h"
#include "core/sysinfo.h"
#include "kernels/moe_kernels.h"
#include "moe/moe_block.h"
#include "moe/path_counters.h"
#include "moe/synthetic_experts.h"
#include "quant/format.h"

namespace moex::moe {
namespace {

ArmTiming timing_of(std::vector<double> us) {
  ArmTiming t;
  t.us = us;
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  t.median = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
  t.min = us.front();
  t.max = us.back();
  return t;
}

// Uniform distinct experts and positive scores summing to 1.
void draw_routing(std::mt19937_64& rng, int64_t experts, int64_t k, std::vector<int32_t>& perm,
                  int32_t* ids, float* scores) {
  float sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t r = j + int64_t(rng() % uint64_t(experts - j));
    std::swap(perm[size_t(j)], perm[size_t(r)]);
    ids[j] = perm[size_t(j)];
    scores[j] = 0.05f + float(rng() % 1000) / 1000.f;
    sum += scores[j];
  }
  for (int64_t j = 0; j < k; ++j) scores[j] /= sum;
}

double nrms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += double(a[i] - b[i]) * double(a[i] - b[i]);
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

// Bytes of one n x k projection of one expert, from the format alone (no weights needed).
int64_t projection_bytes_of(int64_t n, int64_t k, int bits, int group_size) {
  kernels::QuantWeightsView v;
  v.n = n;
  v.k = k;
  v.bits = bits;
  v.group_size = group_size;
  v.sb_dtype = DType::BF16;  // what SyntheticExperts uses by default
  return projection_bytes(v);
}

// The byte ranges one call reads: per routed expert, packed rows, scales and biases of each
// projection.
struct ByteRange {
  const unsigned char* p;
  int64_t bytes;
};
void call_ranges(const kernels::MoeExpertsView& ex, const int32_t* ids, int64_t k,
                 std::vector<ByteRange>& out) {
  out.clear();
  for (int64_t j = 0; j < k; ++j)
    for (const kernels::QuantWeightsView* w : {&ex.gate, &ex.up, &ex.down}) {
      if (w->w == nullptr) continue;
      const int64_t e = ids[j], sb_bytes = w->n * w->scale_row_bytes();
      out.push_back({w->row(e, 0), w->n * w->row_bytes()});
      out.push_back({w->scale_row(e, 0), sb_bytes});
      if (w->biases) out.push_back({w->bias_row(e, 0), sb_bytes});
    }
}

// Reads all ranges once, thread t taking bytes [total*t/T, total*(t+1)/T) of their
// concatenation (cut at 64-byte multiples), so every thread reads the same amount.
uint64_t read_ranges(const std::vector<ByteRange>& ranges) {
  int64_t total = 0;
  for (const ByteRange& r : ranges) total += r.bytes;
  const int nt = num_threads();
  std::vector<uint64_t> sums(size_t(nt), 0);
  parallel_for(nt, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t b = total * t / nt / 64 * 64;
      const int64_t e = t + 1 == nt ? total : total * (t + 1) / nt / 64 * 64;
      int64_t at = 0;  // start of the current range in the concatenation
      uint64_t s = 0;
      for (const ByteRange& r : ranges) {
        const int64_t r0 = std::max(b, at), r1 = std::min(e, at + r.bytes);
        if (r0 < r1) s += stream_read(r.p + (r0 - at), size_t(r1 - r0));
        at += r.bytes;
      }
      sums[size_t(t)] = s;
    }
  });
  uint64_t s = 0;
  for (uint64_t v : sums) s += v;
  return s;
}

std::string format_gb(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace

MoeBenchPlan plan_moe_bench(const MoeBenchShape& s, int64_t target_bytes, int64_t layers,
                            int64_t min_layers, const std::string& context) {
  for (int b : {s.bits, s.down_bits})
    if (!quant::is_valid_bits(b)) fail(context, ": bits ", b, " is not one of 2, 3, 4, 5, 6, 8");
  if (!quant::is_valid_group_size(s.group_size))
    fail(context, ": group size ", s.group_size, " is not one of 32, 64, 128");
  if (s.hidden <= 0 || s.dff <= 0 || s.hidden % s.group_size || s.dff % s.group_size)
    fail(context, ": hidden ", s.hidden, " and dff ", s.dff,
         " must both be positive multiples of the group size ", s.group_size);
  if (s.experts < 1 || s.top_k < 1 || s.top_k > s.experts)
    fail(context, ": top_k ", s.top_k, " and experts ", s.experts,
         " must satisfy 1 <= top_k <= experts");
  MoeBenchPlan p;
  const bool has_gate = s.act != kernels::Activation::kSquaredReLU;
  p.expert_bytes = (has_gate ? 2 : 1) * projection_bytes_of(s.dff, s.hidden, s.bits, s.group_size) +
                   projection_bytes_of(s.hidden, s.dff, s.down_bits, s.group_size);
  p.layer_bytes = p.expert_bytes * s.experts;
  p.layers = layers > 0 ? layers
                        : std::max(min_layers, (target_bytes + p.layer_bytes - 1) / p.layer_bytes);
  p.layers = std::max<int64_t>(p.layers, 1);
  p.pool_bytes = p.layers * p.layer_bytes;
  return p;
}

MoeBenchResult run_moe_bench(const MoeBenchArgs& args) {
  const MoeBenchShape& shape = args.shape;
  const int64_t layers = args.plan.layers;
  const std::string& ctx = args.context;
  if (layers < 1 || args.repeats < 1)
    fail(ctx, ": needs at least one layer and one repeat (got ", layers, " and ", args.repeats,
         ")");
  auto log = [&](const std::string& line) {
    if (args.log) args.log(line);
  };

  SyntheticExpertsArgs sa;
  sa.experts = shape.experts;
  sa.din = shape.hidden;
  sa.dff = shape.dff;
  sa.gate_bits = sa.up_bits = shape.bits;
  sa.down_bits = shape.down_bits;
  sa.group_size = shape.group_size;
  sa.act = shape.act;

  log(str_cat("building ", layers, " layers of random ", shape.bits, "-bit experts (",
              format_gb("%.2f", double(args.plan.pool_bytes) / 1e9), " GB)..."));
  const int64_t huge_before = anon_huge_page_bytes();
  std::vector<std::unique_ptr<SyntheticExperts>> weights;
  std::vector<MoeBlock> fused_blocks, fallback_blocks;
  MoePolicy on, off;
  on.settings.mode = FusedMode::kOn;
  on.settings.mode_source = SettingSource::kFlag;
  off.settings.mode = FusedMode::kOff;
  off.settings.mode_source = SettingSource::kFlag;
  for (int64_t l = 0; l < layers; ++l) {
    sa.seed = uint64_t(l) + 1;
    weights.push_back(std::make_unique<SyntheticExperts>(sa));
    const MoeLayer layer{weights.back()->view()};
    fused_blocks.emplace_back(layer, on);
    fallback_blocks.emplace_back(layer, off);
  }
  const double pool_huge_page_fraction = huge_page_share_since(huge_before, args.plan.pool_bytes);
  if (weights[0]->expert_bytes() != args.plan.expert_bytes)
    fail(ctx, ": planned ", args.plan.expert_bytes, " bytes per expert but built ",
         weights[0]->expert_bytes());
  if (fused_blocks[0].decision(1).path != Path::kFused)
    fail(ctx, ": the fused arm would not run the fused path: ",
         fused_blocks[0].decision(1).explanation());

  MoeBenchResult res;
  res.pool_huge_page_fraction = pool_huge_page_fraction;
  const kernels::MoeExpertsView& v0 = weights[0]->view();
  res.fused_kernel = kernels::moe_decode_fused_name(v0, active_isa());
  res.fallback_kernel = kernels::gather_qmm_name(v0.up, active_isa());

  const int64_t din = shape.hidden, k = shape.top_k;
  std::mt19937_64 rng(args.routing_seed);
  std::normal_distribution<float> nd;
  const size_t nl = static_cast<size_t>(layers), nd_ = static_cast<size_t>(din);
  const size_t nk = static_cast<size_t>(k), ne = static_cast<size_t>(shape.experts);
  std::vector<std::vector<float>> xs(nl, std::vector<float>(nd_, 0.f));
  for (auto& x : xs)
    for (float& v : x) v = nd(rng);
  std::vector<int32_t> perm(ne), ids(nk);
  for (int64_t e = 0; e < shape.experts; ++e) perm[size_t(e)] = int32_t(e);
  std::vector<float> scores(nk), out(nd_), out_ref(nd_);
  std::vector<int64_t> usage(nl * ne, 0);
  MoeWorkspace ws;
  PathCounters fused_counters, fallback_counters;

  // Numerical check: both paths on the same call.
  draw_routing(rng, shape.experts, k, perm, ids.data(), scores.data());
  MoeBlockCall call{xs[0].data(), 1, ids.data(), scores.data(), int(k), false, out.data()};
  fused_blocks[0].run(call, ws, nullptr);
  call.out = out_ref.data();
  fallback_blocks[0].run(call, ws, nullptr);
  res.fused_vs_fallback_nrms = nrms(out, out_ref);
  for (size_t h = 0; h < nd_; ++h)
    res.fused_vs_fallback_max_abs =
        std::max(res.fused_vs_fallback_max_abs, std::fabs(double(out[h]) - double(out_ref[h])));
  res.fused_equals_fallback = std::memcmp(out.data(), out_ref.data(), nd_ * sizeof(float)) == 0;
  call.out = out.data();

  // One pass = every layer once, fresh random routing per call.
  auto pass = [&](std::vector<MoeBlock>& blocks, PathCounters& counters) {
    const double t0 = now_seconds();
    for (int64_t l = 0; l < layers; ++l) {
      draw_routing(rng, shape.experts, k, perm, ids.data(), scores.data());
      for (int64_t j = 0; j < k; ++j) ++usage[size_t(l * shape.experts + ids[size_t(j)])];
      call.x = xs[size_t(l)].data();
      blocks[size_t(l)].run(call, ws, &counters);
    }
    return (now_seconds() - t0) / double(layers) * 1e6;
  };
  std::vector<ByteRange> ranges;
  uint64_t read_sum = 0;
  auto read_pass = [&] {
    const double t0 = now_seconds();
    for (int64_t l = 0; l < layers; ++l) {
      draw_routing(rng, shape.experts, k, perm, ids.data(), scores.data());
      call_ranges(weights[size_t(l)]->view(), ids.data(), k, ranges);
      read_sum += read_ranges(ranges);
    }
    return (now_seconds() - t0) / double(layers) * 1e6;
  };
  log(str_cat("warm-up, then ", args.repeats,
              " repeats of fused, fallback and read-only passes..."));
  pass(fused_blocks, fused_counters);
  pass(fallback_blocks, fallback_counters);
  read_pass();
  std::vector<double> fused_us, fallback_us, read_us;
  for (int r = 0; r < args.repeats; ++r) {  // rotate which arm goes first
    for (int i = 0; i < 3; ++i) {
      const int arm = (r + i) % 3;
      if (arm == 0) fused_us.push_back(pass(fused_blocks, fused_counters));
      if (arm == 1) fallback_us.push_back(pass(fallback_blocks, fallback_counters));
      if (arm == 2) read_us.push_back(read_pass());
    }
  }
  res.read_checksum = read_sum;
  // Each arm must have run the path it is named after, on every call.
  const int64_t calls = int64_t(args.repeats + 1) * layers;
  if (fused_counters.fused_calls() != calls || fallback_counters.fallback_calls() != calls)
    fail(ctx, ": path check failed: fused arm ", fused_counters.summary(), "; fallback arm ",
         fallback_counters.summary(), " (expected ", calls, " calls each)");

  res.fused = timing_of(fused_us);
  res.fallback = timing_of(fallback_us);
  res.read_only = timing_of(read_us);
  res.ratio = res.fallback.median / res.fused.median;
  const auto [umin, umax] = std::minmax_element(usage.begin(), usage.end());
  res.usage_min = *umin;
  res.usage_max = *umax;
  res.usage_expected = double((args.repeats + 1) * 2 * k) / double(shape.experts);
  res.fused_counters = fused_counters.summary();
  res.fallback_counters = fallback_counters.summary();
  return res;  // the pool is freed here
}

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

}  // namespace moex::moe
