// Device building blocks shared by the CUDA MoE kernels: a vector staged in shared memory in
// 32-element units (with each unit's sum), a unit's packed bits and {scale, bias} loaded from
// global memory into registers, and the arithmetic of one unit of two rows against the staged
// vector (exponent tricks instead of integer-to-float conversions, one shared-memory read of
// x for both rows). warp_rows.cuh runs these over whole rows. The arithmetic of a row depends
// only on the row and the vector, never on the launch shape, so results are bit-identical for
// every tuning.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/device_moe_layer.h"

namespace moex::cuda::detail {

inline constexpr int kUnit = 32;         // elements per unit (one lane's share)
inline constexpr int kUnitStride = 36;   // floats per unit in shared memory: 32 x, sum, 3 pad
inline constexpr int kMaxThreads = 512;  // block size limit of the row kernels (16 warps)
// Blocks of kMaxThreads the row kernels are compiled to fit per SM. 1 lets them use up to 128
// registers: their look-ahead and the 8 float4 of x per unit need 85..116, and a cap of 64
// spilled every 4-bit variant (ptxas, CUDA 13.0); fewer, wider warps keep more bytes in flight.
inline constexpr int kMinBlocks = 1;

// Shared-memory floats needed to stage a vector of length len (a multiple of 32).
__host__ __device__ inline int64_t staged_floats(int64_t len) { return len / kUnit * kUnitStride; }

// Stages v[0..len) into smem (block-wide; ends with __syncthreads). Unit u occupies
// smem[u*36 .. u*36+31], its sum (left to right, in f32) smem[u*36+32]. The 36-float stride
// makes a quarter-warp's 16-byte reads of eight consecutive units bank-conflict-free.
// v must be 16-byte aligned; each thread has up to four 16-byte loads in flight.
__device__ inline void stage_vector(const float* __restrict__ v, int len, float* smem) {
  const int n4 = len / 4, units = len / kUnit;
  const float4* v4 = reinterpret_cast<const float4*>(v);
  for (int i0 = threadIdx.x; i0 < n4; i0 += 4 * blockDim.x) {
    float4 t[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = i0 + j * blockDim.x;
      if (i < n4) t[j] = v4[i];
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = i0 + j * blockDim.x, e = 4 * i;
      if (i < n4)
        *reinterpret_cast<float4*>(smem + (e / kUnit) * kUnitStride + (e % kUnit)) = t[j];
    }
  }
  __syncthreads();
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    const float4* x4 = reinterpret_cast<const float4*>(smem + u * kUnitStride);
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < kUnit / 4; ++j) {
      const float4 x = x4[j];
      s = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(s, x.x), x.y), x.z), x.w);
    }
    smem[u * kUnitStride + kUnit] = s;
  }
  __syncthreads();
}

// One row of a projection as the kernels see it.
struct RowRef {
  const uint8_t* w;   // packed row start
  const void* sb;     // the row's first {scale, bias} pair
  int sb_kind;        // SbKind
  int group_shift;    // log2(group_size / 32): unit u uses group u >> group_shift
};

__device__ inline RowRef row_ref(const DeviceQuantWeights& p, int64_t e, int64_t r) {
  const int64_t row = e * p.n + r;
  RowRef ref;
  ref.w = p.w + row * p.row_bytes();
  ref.sb = static_cast<const uint8_t*>(p.sb) + row * p.groups_per_row() * p.sb_pair_bytes();
  ref.sb_kind = int(p.sb_kind);
  ref.group_shift = p.group_size == 32 ? 0 : p.group_size == 64 ? 1 : 2;
  return ref;
}

// A unit's {scale, bias} pair as loaded into an 8-byte slot: two f32, or for 16-bit dtypes
// one uint32 (scale in the low half) in the slot's first word.
__device__ __forceinline__ float2 decode_scale_bias(uint2 raw, int sb_kind) {
  if (sb_kind == int(SbKind::kF32)) return make_float2(__uint_as_float(raw.x), __uint_as_float(raw.y));
  const uint32_t v = raw.x;
  if (sb_kind == int(SbKind::kBF16))
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  return make_float2(__half2float(__ushort_as_half((unsigned short)(v & 0xffffu))),
                     __half2float(__ushort_as_half((unsigned short)(v >> 16))));
}

// The B packed words (32 values of B bits) of one unit. A unit starts at byte 4*B*u of its
// row, so it is loaded in pieces of 16 bytes (B = 4, 8), 8 bytes (B = 2, 6) or 4 bytes (3, 5).
template <int B>
struct UnitWords {
  uint32_t w[B];
};
template <int B>
inline constexpr int kPieceBytes = (B == 4 || B == 8) ? 16 : (B == 2 || B == 6) ? 8 : 4;
template <int B>
inline constexpr int kPieces = 4 * B / kPieceBytes<B>;

// Value i (0..31) of a unit as an exact float. Element i occupies stream bits [B*i, B*i+B)
// (LSB-first, little-endian words, as quant/format.h). When the field lies at bit sh <= 23-B
// of its word, OR-ing exponent 150-sh onto the masked word gives the float 2^(23-sh) + q
// exactly, so q costs one LOP3 and one FADD. A field in the upper half of its word is taken
// the same way from the word shifted down by 16 (one shift per word, shared by its fields);
// a field crossing words is funnel-shifted first. Every way gives q exactly, so the choice
// never changes a result bit.
template <int B, int I>
__device__ __forceinline__ float unit_value(const UnitWords<B>& u) {
  constexpr int kBit = B * I, kLo = kBit / 32, kSh = kBit % 32;
  constexpr uint32_t kMask = (1u << B) - 1u;
  if constexpr (kSh + B <= 23) {
    constexpr uint32_t kExp = uint32_t(150 - kSh) << 23;
    constexpr float kOffset = float(1u << (23 - kSh));
    return __uint_as_float((u.w[kLo] & (kMask << kSh)) | kExp) - kOffset;
  } else if constexpr (kSh >= 16 && kSh + B <= 32) {
    constexpr int kSh2 = kSh - 16;  // kSh2 + B <= 16
    constexpr uint32_t kExp = uint32_t(150 - kSh2) << 23;
    constexpr float kOffset = float(1u << (23 - kSh2));
    return __uint_as_float(((u.w[kLo] >> 16) & (kMask << kSh2)) | kExp) - kOffset;
  } else {
    uint32_t v;
    if constexpr (kSh + B <= 32) {
      v = u.w[kLo] >> kSh;
    } else {
      v = __funnelshift_r(u.w[kLo], u.w[kLo + 1], kSh);
    }
    return __uint_as_float((v & kMask) | 0x4B000000u) - 8388608.f;
  }
}

// sum_i q_i * x_i over one unit of two rows (B0 and B1 bits), x read once from the staged
// vector (8 x 16-byte loads) for both. Each row alternates two accumulators (even, odd i).
template <int B0, int B1, int I = 0>
__device__ __forceinline__ void unit_qdot2_step(const UnitWords<B0>& u, const UnitWords<B1>& v,
                                                const float4* x4, float& a0, float& a1,
                                                float& b0, float& b1) {
  if constexpr (I < kUnit) {
    const float4 x = x4[I / 4];
    a0 = fmaf(unit_value<B0, I>(u), x.x, a0);
    a1 = fmaf(unit_value<B0, I + 1>(u), x.y, a1);
    a0 = fmaf(unit_value<B0, I + 2>(u), x.z, a0);
    a1 = fmaf(unit_value<B0, I + 3>(u), x.w, a1);
    b0 = fmaf(unit_value<B1, I>(v), x.x, b0);
    b1 = fmaf(unit_value<B1, I + 1>(v), x.y, b1);
    b0 = fmaf(unit_value<B1, I + 2>(v), x.z, b0);
    b1 = fmaf(unit_value<B1, I + 3>(v), x.w, b1);
    unit_qdot2_step<B0, B1, I + 4>(u, v, x4, a0, a1, b0, b1);
  }
}

template <int B0, int B1>
__device__ __forceinline__ float2 unit_qdot2(const UnitWords<B0>& u, const UnitWords<B1>& v,
                                             const float4* x4) {
  float a0 = 0.f, a1 = 0.f, b0 = 0.f, b1 = 0.f;
  unit_qdot2_step<B0, B1>(u, v, x4, a0, a1, b0, b1);
  return make_float2(a0 + a1, b0 + b1);
}

// The B packed words of unit `unit` of a row (pieces of kPieceBytes<B>, read-only path).
template <int B>
__device__ __forceinline__ void load_unit(UnitWords<B>& u, const uint8_t* row, int unit) {
  const uint8_t* p = row + size_t(unit) * (4 * B);
#pragma unroll
  for (int j = 0; j < kPieces<B>; ++j) {
    if constexpr (kPieceBytes<B> == 16) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p) + j);
      u.w[4 * j] = v.x;
      u.w[4 * j + 1] = v.y;
      u.w[4 * j + 2] = v.z;
      u.w[4 * j + 3] = v.w;
    } else if constexpr (kPieceBytes<B> == 8) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(p) + j);
      u.w[2 * j] = v.x;
      u.w[2 * j + 1] = v.y;
    } else {
      u.w[j] = __ldg(reinterpret_cast<const unsigned int*>(p) + j);
    }
  }
}

// The raw {scale, bias} slot of unit `unit` of a row, as decode_scale_bias takes it.
__device__ __forceinline__ uint2 load_scale_bias(const RowRef& r, int unit) {
  const int g = unit >> r.group_shift;
  if (r.sb_kind == int(SbKind::kF32)) return __ldg(reinterpret_cast<const uint2*>(r.sb) + g);
  return make_uint2(__ldg(reinterpret_cast<const unsigned int*>(r.sb) + g), 0u);
}

// scale * sum(q*x) + bias * sum(x) with explicit roundings (no compiler contraction), so
// every kernel computing a row gets the same bits.
__device__ __forceinline__ float unit_term(float2 sb, float qdot, float xsum) {
  return __fmaf_rn(sb.x, qdot, __fmul_rn(sb.y, xsum));
}

// Sum across the warp with a fixed butterfly; every lane gets the same bits.
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// How many of a warp's items_per_warp items (base + i * warps + warp) are below `items`.
__device__ inline int warp_item_count(int base, int warp, int warps, int items_per_warp,
                                      int items) {
  const int first = base + warp;
  if (first >= items) return 0;
  const int n = (items - first + warps - 1) / warps;
  return n < items_per_warp ? n : items_per_warp;
}

// The activations of kernels::Activation, in f32 with the accurate library functions.
__device__ inline float silu(float g) { return g / (1.f + expf(-g)); }
// gelu with the tanh approximation, written as the CPU kernels do:
// 0.5 g (1 + tanh(c (g + 0.044715 g^3))) = g * sigmoid(2c (g + 0.044715 g^3)), c = sqrt(2/pi).
__device__ inline float gelu_tanh(float g) {
  const float z = (2.0f * 0.7978845608028654f) * (g + 0.044715f * g * g * g);
  return g / (1.f + expf(-z));
}
__device__ inline float relu_squared(float u) {
  const float r = u > 0.f ? u : 0.f;
  return r * r;
}
// kind: 0 SwiGLU, 1 GeGLU (gate, up); 2 squared ReLU (up only, gate ignored).
__device__ inline float apply_act(int kind, float g, float u) {
  if (kind == 0) return silu(g) * u;
  if (kind == 1) return gelu_tanh(g) * u;
  return relu_squared(u);
}

}  // namespace moex::cuda::detail
