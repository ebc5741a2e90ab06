// Device building blocks shared by the CUDA MoE kernels: a vector staged in shared memory in
// 32-element units (with each unit's sum), and one warp's dot products of two MLX affine rows
// with that vector. Each lane owns whole 32-element units (unit u: lane u % 32), copies the
// unit's packed bits with cp.async in the widest aligned pieces its width allows (16 bytes at
// 4 and 8 bits) into a per-warp ring of shared-memory stages, and dequantizes with exponent
// tricks instead of integer-to-float conversions. The arithmetic of a row depends only on the
// row and the vector, never on the launch shape, so results are bit-identical for every tuning.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/device_moe_layer.h"

namespace moex::cuda::detail {

inline constexpr int kUnit = 32;         // elements per unit (one lane's share)
inline constexpr int kUnitStride = 36;   // floats per unit in shared memory: 32 x, sum, 3 pad
inline constexpr int kMaxThreads = 512;  // block size limit of the row kernels (16 warps)

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

// A unit's {scale, bias} pair as copied into an 8-byte slot: two f32, or for 16-bit dtypes
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
// row, so it is copied in pieces of 16 bytes (B = 4, 8), 8 bytes (B = 2, 6) or 4 bytes (3, 5).
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
// exactly, so q costs one LOP3 and one FADD; otherwise the field is shifted down first.
template <int B, int I>
__device__ __forceinline__ float unit_value(const UnitWords<B>& u) {
  constexpr int kBit = B * I, kLo = kBit / 32, kSh = kBit % 32;
  constexpr uint32_t kMask = (1u << B) - 1u;
  if constexpr (kSh + B <= 23) {
    constexpr uint32_t kExp = uint32_t(150 - kSh) << 23;
    constexpr float kOffset = float(1u << (23 - kSh));
    return __uint_as_float((u.w[kLo] & (kMask << kSh)) | kExp) - kOffset;
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

// sum_i q_i * x_i over one unit, x read from the staged vector (8 x 16-byte loads).
template <int B, int I = 0>
__device__ __forceinline__ void unit_qdot_step(const UnitWords<B>& u, const float4* x4,
                                               float& a0, float& a1) {
  if constexpr (I < kUnit) {
    const float4 x = x4[I / 4];
    a0 = fmaf(unit_value<B, I>(u), x.x, a0);
    a1 = fmaf(unit_value<B, I + 1>(u), x.y, a1);
    a0 = fmaf(unit_value<B, I + 2>(u), x.z, a0);
    a1 = fmaf(unit_value<B, I + 3>(u), x.w, a1);
    unit_qdot_step<B, I + 4>(u, x4, a0, a1);
  }
}

template <int B>
__device__ __forceinline__ float unit_qdot(const UnitWords<B>& u, const float4* x4) {
  float a0 = 0.f, a1 = 0.f;
  unit_qdot_step<B>(u, x4, a0, a1);
  return a0 + a1;
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

// ---- the warp pipeline: cp.async copies into a per-warp ring of shared-memory stages ----
//
// A stage holds one lane-step of a row pair for all 32 lanes: units u and u+32 of row 0 (B0
// bits) and row 1 (B1 bits), and their four {scale, bias} pairs. Every lane copies and later
// reads only its own pieces (so no barrier is needed), laid out lane-minor: piece j of unit
// uu of a row is an array over lanes, so the reads of a warp are consecutive and conflict-free.
// Copies go global -> shared without registers, so a warp keeps stages-1 steps in flight.

inline constexpr int kMaxStages = 4;

// Bytes of one stage of a warp.
__host__ __device__ constexpr int stage_bytes(int b0, int b1) { return 256 * (b0 + b1) + 1024; }

template <int P>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem) {
  const unsigned dst = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem), "n"(P));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most n of this thread's copy groups are still pending (n = stages - 1).
__device__ __forceinline__ void cp_async_wait(int n) {
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::); break;
    default: asm volatile("cp.async.wait_group 3;\n" ::); break;
  }
}

// Offsets inside a stage (bytes) of piece j of unit uu (0, 1) of row 0 / row 1 for `lane`,
// and of the {scale, bias} slot of (row r, unit uu).
template <int B0>
__device__ __forceinline__ int piece_off0(int uu, int j, int lane) {
  return ((uu * kPieces<B0> + j) * 32 + lane) * kPieceBytes<B0>;
}
template <int B0, int B1>
__device__ __forceinline__ int piece_off1(int uu, int j, int lane) {
  return 256 * B0 + ((uu * kPieces<B1> + j) * 32 + lane) * kPieceBytes<B1>;
}
template <int B0, int B1>
__device__ __forceinline__ int sb_off(int r, int uu, int lane) {
  return 256 * (B0 + B1) + ((r * 2 + uu) * 32 + lane) * 8;
}

// Issues the copies of one step (this lane's units u, u+32 of both rows) into `stage`.
template <int B0, int B1>
__device__ __forceinline__ void issue_step(unsigned char* stage, const RowRef& r0,
                                           const RowRef& r1, int u, int units) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int uu = 0; uu < 2; ++uu) {
    const int unit = u + 32 * uu;
    if (unit >= units) break;
    const uint8_t* p0 = r0.w + size_t(unit) * (4 * B0);
    const uint8_t* p1 = r1.w + size_t(unit) * (4 * B1);
#pragma unroll
    for (int j = 0; j < kPieces<B0>; ++j)
      cp_async<kPieceBytes<B0>>(stage + piece_off0<B0>(uu, j, lane), p0 + j * kPieceBytes<B0>);
#pragma unroll
    for (int j = 0; j < kPieces<B1>; ++j)
      cp_async<kPieceBytes<B1>>(stage + piece_off1<B0, B1>(uu, j, lane),
                                p1 + j * kPieceBytes<B1>);
    const int g0 = unit >> r0.group_shift, g1 = unit >> r1.group_shift;
    if (r0.sb_kind == int(SbKind::kF32))
      cp_async<8>(stage + sb_off<B0, B1>(0, uu, lane), static_cast<const uint8_t*>(r0.sb) + 8 * g0);
    else
      cp_async<4>(stage + sb_off<B0, B1>(0, uu, lane), static_cast<const uint8_t*>(r0.sb) + 4 * g0);
    if (r1.sb_kind == int(SbKind::kF32))
      cp_async<8>(stage + sb_off<B0, B1>(1, uu, lane), static_cast<const uint8_t*>(r1.sb) + 8 * g1);
    else
      cp_async<4>(stage + sb_off<B0, B1>(1, uu, lane), static_cast<const uint8_t*>(r1.sb) + 4 * g1);
  }
}

template <int B, int P = kPieceBytes<B>>
__device__ __forceinline__ UnitWords<B> read_unit(const unsigned char* stage, int first_off,
                                                  int piece_stride) {
  UnitWords<B> w;
#pragma unroll
  for (int j = 0; j < kPieces<B>; ++j) {
    const unsigned char* p = stage + first_off + j * piece_stride;
    if constexpr (P == 16) {
      const uint4 v = *reinterpret_cast<const uint4*>(p);
      w.w[4 * j] = v.x;
      w.w[4 * j + 1] = v.y;
      w.w[4 * j + 2] = v.z;
      w.w[4 * j + 3] = v.w;
    } else if constexpr (P == 8) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w.w[2 * j] = v.x;
      w.w[2 * j + 1] = v.y;
    } else {
      w.w[j] = *reinterpret_cast<const uint32_t*>(p);
    }
  }
  return w;
}

// acc += scale * sum(q*x) + bias * sum(x) for the step's units (u, then u+32) of both rows.
template <int B0, int B1>
__device__ __forceinline__ void compute_step(const unsigned char* stage, const float* xs, int u,
                                             int units, int kind0, int kind1, float& acc0,
                                             float& acc1) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int uu = 0; uu < 2; ++uu) {
    const int unit = u + 32 * uu;
    if (unit >= units) break;
    const UnitWords<B0> a =
        read_unit<B0>(stage, piece_off0<B0>(uu, 0, lane), 32 * kPieceBytes<B0>);
    const UnitWords<B1> b =
        read_unit<B1>(stage, piece_off1<B0, B1>(uu, 0, lane), 32 * kPieceBytes<B1>);
    const float2 sa = decode_scale_bias(
        *reinterpret_cast<const uint2*>(stage + sb_off<B0, B1>(0, uu, lane)), kind0);
    const float2 sb = decode_scale_bias(
        *reinterpret_cast<const uint2*>(stage + sb_off<B0, B1>(1, uu, lane)), kind1);
    const float4* x4 = reinterpret_cast<const float4*>(xs + unit * kUnitStride);
    const float xsum = xs[unit * kUnitStride + kUnit];
    acc0 += unit_term(sa, unit_qdot<B0>(a, x4), xsum);
    acc1 += unit_term(sb, unit_qdot<B1>(b, x4), xsum);
  }
}

// Runs one warp over its n_items items, each the dot products of two rows (refs(i, r0, r1))
// with the vector of `units` units that stage() puts into xs (block-wide, with barriers:
// every warp of the block calls warp_pipeline once). ring: this warp's `stages` (2..4) stages
// of stage_bytes(B0, B1). The copies of the first stages-1 steps are issued before stage()
// runs; step j+stages-1 is issued before the math of step j. Lane l accumulates units l,
// l+32, l+64, ... in that order; done(i, d0, d1) gets the warp-reduced sums (all lanes call
// it, with the same values).
template <int B0, int B1, typename Refs, typename Stage, typename Done>
__device__ __forceinline__ void warp_pipeline(int n_items, int units, const Refs& refs,
                                              const Stage& stage, const float* xs,
                                              unsigned char* ring, int stages,
                                              const Done& done) {
  const int lane = threadIdx.x & 31;
  const int steps_per_item = (units + 63) / 64;
  const int total = n_items * steps_per_item;
  constexpr int kStage = stage_bytes(B0, B1);
  int kind0 = 0, kind1 = 0;
  auto issue = [&](int j) {
    if (j < total) {
      const int item = j / steps_per_item, part = j - item * steps_per_item;
      RowRef r0, r1;
      refs(item, r0, r1);
      issue_step<B0, B1>(ring + (j % stages) * kStage, r0, r1, lane + 64 * part, units);
    }
    cp_async_commit();  // one group per step, empty past the end: the wait count stays exact
  };
  if (total > 0) {
    RowRef r0, r1;
    refs(0, r0, r1);
    kind0 = r0.sb_kind;
    kind1 = r1.sb_kind;
  }
  for (int j = 0; j < stages - 1; ++j) issue(j);
  stage();
  float acc0 = 0.f, acc1 = 0.f;
  for (int c = 0; c < total; ++c) {
    issue(c + stages - 1);  // into the slot step c-1 used (this lane finished reading it)
    cp_async_wait(stages - 1);
    const int item = c / steps_per_item, part = c - item * steps_per_item;
    compute_step<B0, B1>(ring + (c % stages) * kStage, xs, lane + 64 * part, units, kind0,
                         kind1, acc0, acc1);
    if (part == steps_per_item - 1) {
      done(item, warp_sum(acc0), warp_sum(acc1));
      acc0 = acc1 = 0.f;
    }
  }
  cp_async_wait(0);  // no copy may land after the block's shared memory is reused
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
