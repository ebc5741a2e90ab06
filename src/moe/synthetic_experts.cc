// Synthetic quantized experts (see synthetic_experts.h).
#include "moe/synthetic_experts.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "quant/format.h"

namespace moex::moe {
namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr int64_t kChunk = int64_t{1} << 20;  // bytes per independently seeded chunk

// Fills n bytes deterministically, in parallel over fixed chunks.
void fill_random_bytes(uint8_t* p, int64_t n, uint64_t seed) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      uint64_t s = seed ^ (uint64_t(c) * 0xD1B54A32D192ED03ull);
      const int64_t b = c * kChunk, e = std::min(n, b + kChunk);
      int64_t i = b;
      for (; i + 8 <= e; i += 8) {
        const uint64_t v = splitmix64(s);
        std::memcpy(p + i, &v, 8);
      }
      for (; i < e; ++i) p[i] = uint8_t(splitmix64(s));
    }
  });
}

}  // namespace

int64_t projection_bytes(const kernels::QuantWeightsView& w) {
  return w.n * w.format().row_bytes_with_scales(w.k);
}

void SyntheticExperts::fill(kernels::QuantWeightsView& v, Buffers& b, int bits, int group_size,
                            int64_t n, int64_t k, uint64_t seed) {
  if (!quant::is_valid_bits(bits))
    fail("synthetic experts: bits = ", bits, " is not one of 2,3,4,5,6,8");
  if (!quant::is_valid_group_size(group_size))
    fail("synthetic experts: group size ", group_size, " is not one of 32, 64, 128");
  if (k <= 0 || n <= 0 || k % group_size != 0 || k % 32 != 0)
    fail("synthetic experts: a ", n, " x ", k,
         " projection needs k a positive multiple of 32 "
         "and of the group size ",
         group_size);
  const int64_t e = args_.experts;
  v.experts = e;
  v.n = n;
  v.k = k;
  v.bits = bits;
  v.group_size = group_size;
  v.sb_dtype = args_.sb_dtype;
  const int64_t wbytes = e * n * v.row_bytes();
  const int64_t groups = e * n * v.groups_per_row();
  const size_t es = dtype_size(args_.sb_dtype);
  b.w = make_huge_array<uint8_t>(size_t(wbytes), "synthetic expert weights");
  b.scales = make_huge_array<uint8_t>(size_t(groups) * es, "synthetic expert scales");
  b.biases = make_huge_array<uint8_t>(size_t(groups) * es, "synthetic expert biases");
  fill_random_bytes(b.w.get(), wbytes, seed);
  // w = s*q + b with q uniform on [0, 2^bits): mean s*(2^bits-1)/2 + b, spread ~ s*2^bits/sqrt(12).
  // Target per-weight std 1/sqrt(k) (unit-variance outputs), jittered +-25% per group, and a
  // small random offset of the group mean so biases are not all alike.
  const float levels = float((1 << bits) - 1);
  const float s0 = std::sqrt(12.f / float(k)) / float(1 << bits);
  parallel_for((groups + 4095) / 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      uint64_t st = seed * 31 + 7 + uint64_t(c);
      for (int64_t g = c * 4096; g < std::min(groups, (c + 1) * 4096); ++g) {
        const uint64_t r = splitmix64(st);
        const float u1 = float(r & 0xffffff) / float(1 << 24);
        const float u2 = float((r >> 24) & 0xffffff) / float(1 << 24);
        const float s = s0 * (0.75f + 0.5f * u1);
        const float bias = -s * levels * 0.5f + (u2 - 0.5f) * s;
        store_from_f32(b.scales.get(), args_.sb_dtype, size_t(g), s);
        store_from_f32(b.biases.get(), args_.sb_dtype, size_t(g), bias);
      }
    }
  });
  v.w = b.w.get();
  v.scales = b.scales.get();
  v.biases = b.biases.get();
}

SyntheticExperts::SyntheticExperts(const SyntheticExpertsArgs& args) : args_(args) {
  if (args.experts < 1) fail("synthetic experts: experts = ", args.experts, "; expected >= 1");
  if (!is_float_dtype(args.sb_dtype)) fail("synthetic experts: scales dtype must be F32/F16/BF16");
  const int dgs = args.down_group_size ? args.down_group_size : args.group_size;
  view_.act = args.act;
  if (args.act != kernels::Activation::kSquaredReLU)
    fill(view_.gate, gate_, args.gate_bits, args.group_size, args.dff, args.din, args.seed * 3 + 1);
  fill(view_.up, up_, args.up_bits, args.group_size, args.dff, args.din, args.seed * 3 + 2);
  fill(view_.down, down_, args.down_bits, dgs, args.din, args.dff, args.seed * 3 + 3);
  auto one = [](const kernels::QuantWeightsView& w) {
    return w.w ? projection_bytes(w) : int64_t{0};
  };
  expert_bytes_ = one(view_.gate) + one(view_.up) + one(view_.down);
}

}  // namespace moex::moe
