// The per-element and per-row arithmetic of the device ops (device_ops.h), written once for
// the CUDA kernels and for host code: under g++ (no __CUDACC__) __host__ / __device__ expand
// to nothing, so ops_math_test.cc runs these very functions on the CPU against backend/cpu.
// Each function performs the float operations of the CPU op it mirrors in the same order,
// every one rounded on its own (nvcc would otherwise contract a*b+c into an FMA), so a
// device result differs from the CPU op only where a library function (expf, sinf, cosf) or
// a summation order differs.
#pragma once

#if !defined(__CUDACC__)
#ifndef __host__
#define __host__
#endif
#ifndef __device__
#define __device__
#endif
#endif

#include <cmath>
#include <cstdint>

#include "kernels/elementwise_variants.h"  // kGeluC2, kGeluCubic, kOaiAlpha, kOaiLimit

namespace moex::cuda::ops::math {

// --- f32 operations, each rounded once and never fused --------------------------------------

__host__ __device__ inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
__host__ __device__ inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
__host__ __device__ inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
__host__ __device__ inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
__host__ __device__ inline float sqrt_rn(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
// e^a: CUDA's expf (at most 2 ulp from the true value, CUDA C Programming Guide, table of
// single-precision functions) on the device, the C library's on the host.
__host__ __device__ inline float exp_f(float a) {
#if defined(__CUDA_ARCH__)
  return expf(a);
#else
  return std::exp(a);
#endif
}
// std::min / std::max exactly (NaN handling included): min(a, b) = b < a ? b : a.
__host__ __device__ inline float std_min(float a, float b) { return b < a ? b : a; }
__host__ __device__ inline float std_max(float a, float b) { return a < b ? b : a; }
__host__ __device__ inline bool is_nan(float a) { return a != a; }

// --- norms (backend/cpu/norm.cc) -------------------------------------------------------------

// 1 / sqrt(ss / dim + eps): RMSNorm's factor from the row's sum of squares (and LayerNorm's
// from its sum of squared deviations).
__host__ __device__ inline float rms_inv(float ss, int64_t dim, float eps) {
  return div_rn(1.f, sqrt_rn(add_rn(div_rn(ss, float(dim)), eps)));
}
// One output of RMSNorm: weight * (x * inv), or x * inv without a weight.
__host__ __device__ inline float rms_out(float x, float inv, const float* weight, int64_t i) {
  const float y = mul_rn(x, inv);
  return weight ? mul_rn(weight[i], y) : y;
}
// LayerNorm: the mean from the row sum, one term of the (biased) variance sum, the factor,
// and one output (x - mean) * inv [* weight] [+ bias].
__host__ __device__ inline float ln_mean(float sum, int64_t dim) { return div_rn(sum, float(dim)); }
__host__ __device__ inline float ln_var_term(float x, float mean) {
  const float d = sub_rn(x, mean);
  return mul_rn(d, d);
}
__host__ __device__ inline float ln_out(float x, float mean, float inv, const float* weight,
                                        const float* bias, int64_t i) {
  float y = mul_rn(sub_rn(x, mean), inv);
  if (weight) y = mul_rn(y, weight[i]);
  if (bias) y = add_rn(y, bias[i]);
  return y;
}

// --- RoPE (backend/cpu/rope.cc, Rope::rotate) ------------------------------------------------

// The angle of pair i at position pos: float(pos) * inv_freq[i], one rounding.
__host__ __device__ inline float rope_theta(int64_t pos, float inv_freq) {
  return mul_rn(float(pos), inv_freq);
}
// Rotates one pair (v0, v1) by the angle whose cosine and sine are c, s, after scaling both
// by input_scale (YaRN / longrope mscale; 1 otherwise).
__host__ __device__ inline void rope_pair(float& v0, float& v1, float c, float s,
                                          float input_scale) {
  const float a = mul_rn(v0, input_scale), b = mul_rn(v1, input_scale);
  v0 = sub_rn(mul_rn(a, c), mul_rn(b, s));
  v1 = add_rn(mul_rn(a, s), mul_rn(b, c));
}
// Element indices of pair i of a head: (2i, 2i+1) traditional, else (i, i + dims/2).
__host__ __device__ inline int64_t rope_first(int64_t i, bool traditional) {
  return traditional ? 2 * i : i;
}
__host__ __device__ inline int64_t rope_second(int64_t i, int64_t dims, bool traditional) {
  return traditional ? 2 * i + 1 : i + dims / 2;
}

// --- gated activations (kernels/elementwise_scalar.cc, backend/cpu/softmax.h swiglu) ---------

// kind: int(kernels::Activation): 0 SwiGLU, 1 GeGLU, 2 squared ReLU (gate unused), 3 SwiGLU-OAI.
__host__ __device__ inline float gated_act(int kind, float gate, float up) {
  switch (kind) {
    case 0:  // silu(g) * u = g / (1 + e^-g) * u
      return mul_rn(div_rn(gate, add_rn(1.f, exp_f(-gate))), up);
    case 1: {  // gelu_tanh(g) * u, as g * sigmoid(c2 (g + c3 g^3)); c3 g^3 as ((c3 g) g) g
      const float cube = mul_rn(mul_rn(mul_rn(kernels::kGeluCubic, gate), gate), gate);
      const float z = mul_rn(kernels::kGeluC2, add_rn(gate, cube));
      return mul_rn(div_rn(gate, add_rn(1.f, exp_f(-z))), up);
    }
    case 2: {  // relu(u)^2
      const float r = std_max(up, 0.f);
      return mul_rn(r, r);
    }
    default: {  // gpt-oss: g = min(gate, L), u = clip(up, -L, L); g sigmoid(alpha g) (u + 1)
      const float g = std_min(gate, kernels::kOaiLimit);
      const float u = std_max(std_min(up, kernels::kOaiLimit), -kernels::kOaiLimit);
      const float sig = div_rn(g, add_rn(1.f, exp_f(-mul_rn(kernels::kOaiAlpha, g))));
      return mul_rn(sig, add_rn(u, 1.f));
    }
  }
}

// --- weights: packed values, affine dequantization, 16-bit floats --------------------------

// Value i of a packed row of `bits`-bit fields, LSB-first (quant::extract_q).
__host__ __device__ inline uint32_t packed_value(const uint8_t* row, int64_t i, int bits) {
  const uint64_t bit = uint64_t(i) * uint64_t(bits);
  const uint8_t* p = row + (bit >> 3);
  const int shift = int(bit & 7);
  uint32_t v = p[0];
  if (shift + bits > 8) v |= uint32_t(p[1]) << 8;
  return (v >> shift) & ((1u << bits) - 1u);
}
// scale * q + bias in f32, two roundings (ops::embedding_row).
__host__ __device__ inline float affine_value(uint32_t q, float scale, float bias) {
  return add_rn(mul_rn(float(q), scale), bias);
}
__host__ __device__ inline float bits_as_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}
__host__ __device__ inline float bf16_value(uint16_t h) { return bits_as_float(uint32_t(h) << 16); }
// IEEE half to f32, exact (subnormals normalized, inf and NaN kept, NaN payload shifted).
__host__ __device__ inline float f16_value(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_as_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_as_float(sign);
    exp = 113;  // 127 - 15 + 1, lowered below while normalizing
    while ((man & 0x400u) == 0) {
      man <<= 1;
      --exp;
    }
    return bits_as_float(sign | (exp << 23) | ((man & 0x3ffu) << 13));
  }
  return bits_as_float(sign | ((exp + 112) << 23) | (man << 13));
}

// --- attention (backend/cpu/attention.cc, softmax.cc) ----------------------------------------

// The first key position a query at `pos` sees: 0 (causal), its chunk's start (chunk > 0),
// raised to pos - window + 1 with a sliding window (window > 0).
__host__ __device__ inline int64_t attention_first_key(int64_t pos, int64_t chunk,
                                                       int64_t window) {
  int64_t first = chunk > 0 ? pos - pos % chunk : 0;
  if (window > 0 && pos - window + 1 > first) first = pos - window + 1;
  return first;
}

// One unnormalized softmax weight e^(s - m) (m: the row's largest logit, sink included).
__host__ __device__ inline float softmax_term(float s, float m) { return exp_f(sub_rn(s, m)); }

// --- argmax (backend/cpu/softmax.cc) ---------------------------------------------------------

// Whether candidate (v, i) beats (best_v, best_i): larger value, then smaller index; NaN
// ranks below every number. A total order, so any reduction tree picks the CPU's answer: the
// first maximum, NaN never chosen unless all are NaN (then index 0).
__host__ __device__ inline bool argmax_better(float v, int64_t i, float best_v, int64_t best_i) {
  const bool nan_v = is_nan(v), nan_b = is_nan(best_v);
  if (nan_v != nan_b) return nan_b;
  if (nan_v || v == best_v) return i < best_i;
  return v > best_v;
}

}  // namespace moex::cuda::ops::math
