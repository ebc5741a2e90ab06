// DeviceMoeLayer: validation and upload of host expert weights, and random device-side
// weights for benchmarks.
#include "backend/cuda/device_moe_layer.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "quant/format.h"

namespace moex::cuda {
namespace {

using kernels::Activation;
using kernels::QuantWeightsView;

void check_projection(const QuantWeightsView& p, const char* name) {
  if (p.mode != quant::Mode::kAffine)
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " is ", quant::mode_name(p.mode),
         p.mode == quant::Mode::kFloat ? str_cat(" (", dtype_name(p.sb_dtype), ")") : std::string(),
         "; the CUDA kernels read MLX affine-quantized weights only (use --backend cpu)");
  if (!p.w || !p.scales || !p.biases)
    fail("cuda::DeviceMoeLayer::upload: projection ", name,
         " has a null weight, scales or biases pointer");
  if (!quant::is_valid_bits(p.bits))
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " bits = ", p.bits,
         "; expected one of 2, 3, 4, 5, 6, 8");
  if (!quant::is_valid_group_size(p.group_size))
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " group_size = ", p.group_size,
         "; expected 32, 64 or 128");
  if (p.experts < 1 || p.n < 1 || p.k < 1)
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " has shape [", p.experts, "][",
         p.n, "][", p.k, "]; expected positive dimensions");
  if (p.k % p.group_size != 0)
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " input size k = ", p.k,
         " is not a multiple of group_size = ", p.group_size);
  if (p.k > (int64_t{1} << 24) || p.n > (int64_t{1} << 24) || p.experts > (int64_t{1} << 20))
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " shape [", p.experts, "][", p.n,
         "][", p.k, "] is beyond the supported range");
  if (p.sb_dtype != DType::F32 && p.sb_dtype != DType::F16 && p.sb_dtype != DType::BF16)
    fail("cuda::DeviceMoeLayer::upload: projection ", name, " scales dtype ",
         dtype_name(p.sb_dtype), "; expected F32, F16 or BF16");
}

SbKind sb_kind_of(DType t) {
  return t == DType::F32 ? SbKind::kF32 : t == DType::F16 ? SbKind::kF16 : SbKind::kBF16;
}

// --- random weights for benchmarks -------------------------------------------------------

__device__ uint32_t hash_u32(uint64_t i, uint32_t seed) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return uint32_t((z ^ (z >> 31)) >> 16);
}

__global__ void fill_words_kernel(uint32_t* w, uint64_t words, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < words;
       i += uint64_t(gridDim.x) * blockDim.x)
    w[i] = hash_u32(i, seed);
}

// {scale, bias} pairs giving weights of magnitude ~0.05: scale of random sign and size, bias
// centring the quantized range.
__device__ float2 random_scale_bias(uint64_t g, uint32_t seed, int bits) {
  const uint32_t h = hash_u32(g, seed ^ 0x5bd1e995u);
  const float qmax = float((1 << bits) - 1);
  const float mag = (0.5f + float(h & 0xffff) / 65536.f) * (0.1f / qmax);
  const float scale = (h & 0x10000u) ? -mag : mag;
  return make_float2(scale, -scale * qmax * 0.5f);
}

__global__ void fill_sb_kernel(void* sb, uint64_t groups, int kind, int bits, uint32_t seed) {
  for (uint64_t g = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; g < groups;
       g += uint64_t(gridDim.x) * blockDim.x) {
    const float2 v = random_scale_bias(g, seed, bits);
    if (kind == int(SbKind::kF32)) {
      static_cast<float2*>(sb)[g] = v;
    } else {
      uint32_t s, b;
      if (kind == int(SbKind::kBF16)) {  // truncation is fine: any bf16 value is valid
        s = __float_as_uint(v.x) >> 16;
        b = __float_as_uint(v.y) >> 16;
      } else {
        s = __half_as_ushort(__float2half_rn(v.x));
        b = __half_as_ushort(__float2half_rn(v.y));
      }
      static_cast<uint32_t*>(sb)[g] = s | (b << 16);
    }
  }
}

}  // namespace

DeviceProjection DeviceProjection::upload(const QuantWeightsView& p, const char* name) {
  check_projection(p, name);
  DeviceProjection out;
  DeviceQuantWeights& d = out.view_;
  d.sb_kind = sb_kind_of(p.sb_dtype);
  d.experts = p.experts;
  d.n = p.n;
  d.k = p.k;
  d.bits = p.bits;
  d.group_size = p.group_size;
  const size_t rows = size_t(p.experts * p.n);
  const size_t groups = rows * size_t(d.groups_per_row());
  out.w_ = DeviceBuffer(rows * size_t(d.row_bytes()));
  out.w_.upload(p.w, out.w_.bytes());
  // {scale, bias} interleaved: one load fetches both.
  std::vector<uint8_t> sb(groups * size_t(d.sb_pair_bytes()));
  if (d.sb_kind == SbKind::kF32) {
    const float* s = static_cast<const float*>(p.scales);
    const float* b = static_cast<const float*>(p.biases);
    float* o = reinterpret_cast<float*>(sb.data());
    for (size_t g = 0; g < groups; ++g) {
      o[2 * g] = s[g];
      o[2 * g + 1] = b[g];
    }
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(p.scales);
    const uint16_t* b = static_cast<const uint16_t*>(p.biases);
    for (size_t g = 0; g < groups; ++g) {
      const uint32_t v = uint32_t(s[g]) | (uint32_t(b[g]) << 16);
      std::memcpy(sb.data() + 4 * g, &v, 4);
    }
  }
  out.sb_ = DeviceBuffer(sb.size());
  out.sb_.upload(sb.data(), sb.size());
  d.w = out.w_.as<const uint8_t>();
  d.sb = out.sb_.data();
  return out;
}

DeviceProjection DeviceProjection::random(int64_t experts, int64_t n, int64_t k, int bits,
                                          int group_size, SbKind kind, uint32_t seed) {
  if (!quant::is_valid_bits(bits) || !quant::is_valid_group_size(group_size))
    fail("cuda::DeviceProjection::random: bits ", bits, " / group_size ", group_size,
         " is not a valid MLX affine format");
  if (experts < 1 || n < 1 || k < group_size || k % group_size != 0)
    fail("cuda::DeviceProjection::random: shape [", experts, "][", n, "][", k,
         "] needs positive sizes and k a multiple of group_size = ", group_size);
  DeviceProjection out;
  DeviceQuantWeights& d = out.view_;
  d.sb_kind = kind;
  d.experts = experts;
  d.n = n;
  d.k = k;
  d.bits = bits;
  d.group_size = group_size;
  const uint64_t rows = uint64_t(experts * n);
  const uint64_t groups = rows * uint64_t(d.groups_per_row());
  out.w_ = DeviceBuffer(rows * uint64_t(d.row_bytes()));
  out.sb_ = DeviceBuffer(groups * uint64_t(d.sb_pair_bytes()));
  // row_bytes = k*bits/8 with k a multiple of 32: whole uint32 words.
  fill_words_kernel<<<1024, 256>>>(out.w_.as<uint32_t>(), out.w_.bytes() / 4, seed);
  MOEX_CUDA_CHECK_LAUNCH("fill_words_kernel");
  fill_sb_kernel<<<1024, 256>>>(out.sb_.data(), groups, int(kind), bits, seed);
  MOEX_CUDA_CHECK_LAUNCH("fill_sb_kernel");
  MOEX_CUDA_CHECK(cudaDeviceSynchronize());  // ready for work on any stream
  d.w = out.w_.as<const uint8_t>();
  d.sb = out.sb_.data();
  return out;
}

DeviceMoeLayer DeviceMoeLayer::upload(const kernels::MoeExpertsView& v) {
  if (v.act == Activation::kSwiGLUOai)
    fail("cuda::DeviceMoeLayer::upload: the CUDA kernels have no swiglu_oai (gpt-oss) activation"
         " yet (use --backend cpu)");
  const bool gated = v.act != Activation::kSquaredReLU;
  check_projection(v.up, "up");
  check_projection(v.down, "down");
  if (gated) check_projection(v.gate, "gate");
  const int64_t din = v.up.k, dff = v.up.n, e = v.up.experts;
  if (v.down.n != din || v.down.k != dff)
    fail("cuda::DeviceMoeLayer::upload: down projection is [", v.down.n, "][", v.down.k,
         "] per expert; expected [Din = ", din, "][Dff = ", dff, "]");
  if (v.down.experts != e)
    fail("cuda::DeviceMoeLayer::upload: down has ", v.down.experts, " experts, up has ", e);
  if (gated && (v.gate.n != dff || v.gate.k != din || v.gate.experts != e))
    fail("cuda::DeviceMoeLayer::upload: gate projection is [", v.gate.experts, "][", v.gate.n,
         "][", v.gate.k, "]; expected the up projection's shape [", e, "][", dff, "][", din,
         "]");
  DeviceMoeLayer l;
  l.act_ = v.act;
  l.up_ = DeviceProjection::upload(v.up, "up");
  l.down_ = DeviceProjection::upload(v.down, "down");
  if (gated) l.gate_ = DeviceProjection::upload(v.gate, "gate");
  return l;
}

DeviceMoeLayer DeviceMoeLayer::random(const RandomShape& s) {
  DeviceMoeLayer l;
  l.act_ = s.act;
  l.up_ = DeviceProjection::random(s.experts, s.dff, s.din, s.gate_up_bits, s.group_size,
                                   s.sb_kind, s.seed * 3 + 1);
  l.down_ = DeviceProjection::random(s.experts, s.din, s.dff, s.down_bits, s.group_size,
                                     s.sb_kind, s.seed * 3 + 2);
  if (s.act != Activation::kSquaredReLU)
    l.gate_ = DeviceProjection::random(s.experts, s.dff, s.din, s.gate_up_bits, s.group_size,
                                       s.sb_kind, s.seed * 3 + 3);
  return l;
}

int64_t DeviceMoeLayer::bytes_per_expert() const {
  return up().bytes_per_expert() + down().bytes_per_expert() +
         (has_gate() ? gate().bytes_per_expert() : 0);
}

}  // namespace moex::cuda
