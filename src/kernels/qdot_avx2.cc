// AVX2 row dot products in f32: q unpacked to int32 lanes, converted, and multiplied with x by
// FMA per group; sum (s*q + b) x = s * sum q*x + b * sum x with the group sums of x prepared
// once per vector. x is not quantized, so results match the scalar reference to f32 rounding.
#include <immintrin.h>

#include <cstring>

#include "kernels/qdot_avx2_rows.h"
#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

// A block is 8 packed bytes (24 for 6 bits, BITS for 3/5) unpacked to kVecs vectors of 8 int32;
// prepared x is stored block by block in the same lane order:
// element (block j, vector t, lane p) = j*kElems + p*kVecs + t.
template <int BITS>
struct Blk {
  static constexpr int kVecs = BITS == 4 ? 2 : (BITS == 2 || BITS == 6 ? 4 : 1);
  static constexpr int kElems = 8 * kVecs;
};

template <int BITS>
size_t prepared_bytes_avx2(int64_t k, int group_size) {
  return prepared_layout(k, group_size, Blk<BITS>::kElems, 4).total;
}

template <int BITS>
void prepare_avx2(const float* x, int64_t k, int group_size, void* dst) {
  constexpr int kE = Blk<BITS>::kElems, kV = Blk<BITS>::kVecs;
  const PreparedLayout L = prepared_layout(k, group_size, kE, 4);
  char* base = static_cast<char*>(dst);
  float* xsum = reinterpret_cast<float*>(base + L.xsum);
  float* xf = reinterpret_cast<float*>(base + L.data);
  std::memset(base, 0, L.data);
  for (int64_t g = 0; g < L.groups; ++g) {
    float s = 0.f;
    for (int64_t i = g * group_size; i < (g + 1) * group_size; ++i) s += x[i];
    xsum[g] = s;
  }
  for (int64_t j = 0; j < k; j += kE)
    for (int p = 0; p < 8; ++p)
#pragma GCC unroll 4
      for (int t = 0; t < kV; ++t) xf[j + t * 8 + p] = x[j + p * kV + t];
}

template <int BITS>
struct Unpacker {
  __m256i mask, ctl, shifts;
  Unpacker() {
    mask = _mm256_set1_epi32((1 << BITS) - 1);
    // 3/5/6 bits: lane p takes the two bytes holding bits [BITS*p, BITS*p + BITS) of the
    // 8-value group (broadcast to both 128-bit halves) and shifts them down.
    // 6 bits: lane p takes the 3 bytes of values 4p..4p+3 (the upper 128-bit half holds
    // bytes 8..23 of the block, so lanes 4..7 index 4 bytes lower).
    alignas(32) int8_t c[32];
    alignas(32) int32_t sh[8];
    for (int p = 0; p < 8; ++p) {
      const int byte = BITS * p / 8;
      for (int i = 0; i < 4; ++i) {
        if (BITS == 6)
          c[4 * p + i] = int8_t(i < 3 ? 3 * p + i - (p >= 4 ? 8 : 0) : -128);
        else
          c[4 * p + i] = int8_t(i < 2 ? byte + i : -128);
      }
      sh[p] = BITS * p % 8;
    }
    ctl = _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
    shifts = _mm256_load_si256(reinterpret_cast<const __m256i*>(sh));
  }
  inline void operator()(const uint8_t* p, __m256i* u) const {
    if constexpr (BITS == 8 || BITS == 4 || BITS == 2) {
      const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
      if constexpr (BITS == 8) {
        u[0] = v;
      } else {
        for (int t = 0; t < Blk<BITS>::kVecs; ++t)
          u[t] = _mm256_and_si256(_mm256_srli_epi32(v, BITS * t), mask);
      }
    } else if constexpr (BITS == 6) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
      const __m256i v =
          _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1), ctl);
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) u[t] = _mm256_and_si256(_mm256_srli_epi32(v, 6 * t), mask);
    } else {
      // Assemble the BITS bytes in a register (a narrow store + wide reload would stall).
      long long bits;
      if constexpr (BITS == 3) {
        bits = (long long)(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16);
      } else {
        uint32_t lo;
        std::memcpy(&lo, p, 4);
        bits = (long long)(lo | uint64_t(p[4]) << 32 | (BITS == 6 ? uint64_t(p[5]) << 40 : 0));
      }
      const __m256i v = _mm256_shuffle_epi8(_mm256_broadcastq_epi64(_mm_cvtsi64_si128(bits)), ctl);
      u[0] = _mm256_and_si256(_mm256_srlv_epi32(v, shifts), mask);
    }
  }
};

constexpr int kRows = 4;  // rows per block, sharing the x loads

// Rows [row_begin, row_end) of `expert` dotted with NX prepared vectors x[j], into out[j], R
// rows per block. Every (row, vector) value goes through the same operations in the same order
// for any R and NX (the weights of a block are unpacked and converted once for all vectors),
// so dot_rows (R = 4, NX = 1) and dot_rows_multi agree bit for bit.
template <int BITS, int GS, quant::Mode M, int R, int NX>
void qdot_rows_avx2_body(const QuantWeightsView& w, int64_t expert, int64_t row_begin,
                         int64_t row_end, const void* const* x, float* const* out) {
  constexpr int kE = Blk<BITS>::kElems, kV = Blk<BITS>::kVecs, kBlockBytes = kE * BITS / 8;
  const quant::Format f = w.format();
  const int64_t k = w.k, groups = k / GS, row_bytes = k * BITS / 8;
  const PreparedLayout L = prepared_layout(k, GS, kE, 4);
  const PreparedParts<NX, float> xp(x, L);  // x in block order at xp.data[j]
  const int kind = w.sb_dtype == DType::F32 ? 0 : (w.sb_dtype == DType::BF16 ? 1 : 2);
  const int64_t sb_row = w.scale_row_bytes();
  const Unpacker<BITS> unpack;
  const int64_t pf_far = kRows * row_bytes;  // software prefetch kRows rows ahead, into L2

  for (int64_t r0 = row_begin; r0 < row_end; r0 += R) {
    const int nr = int(row_end - r0 < R ? row_end - r0 : R);
    const uint8_t* wp[R];
    const char *sp[R], *bp[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {  // a tail block repeats its last row
      const int64_t idx = expert * w.n + r0 + (r < nr ? r : nr - 1);
      wp[r] = w.w + idx * row_bytes;
      sp[r] = static_cast<const char*>(w.scales) + idx * sb_row;
      bp[r] = w.biases ? static_cast<const char*>(w.biases) + idx * sb_row : nullptr;
    }
    __m256 tot[R][NX];
    float bias[R][NX] = {};  // sum over groups of bias * sum x, in group order
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) tot[r][j] = _mm256_setzero_ps();
    auto block_acc = [&](int64_t eb, __m256 (*acc)[NX]) {  // sum over the block of q * x
      __m256 xv[NX == 1 ? kV : 1];
      if constexpr (NX == 1) {  // shared by the R rows
#pragma GCC unroll 4
        for (int t = 0; t < kV; ++t) xv[t] = _mm256_load_ps(xp.data[0] + eb + 8 * t);
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        __m256i u[kV];
        const uint8_t* wb = wp[r] + (eb / kE) * kBlockBytes;
        if ((eb * BITS / 8) % 64 < kBlockBytes)
          _mm_prefetch(reinterpret_cast<const char*>(wb + pf_far), _MM_HINT_T1);
        unpack(wb, u);
        __m256 wf[kV];
#pragma GCC unroll 4
        for (int t = 0; t < kV; ++t) wf[t] = _mm256_cvtepi32_ps(u[t]);
#pragma GCC unroll 4
        for (int j = 0; j < NX; ++j)
#pragma GCC unroll 4
          for (int t = 0; t < kV; ++t)
            acc[r][j] = _mm256_fmadd_ps(
                wf[t], NX == 1 ? xv[t] : _mm256_load_ps(xp.data[j] + eb + 8 * t), acc[r][j]);
      }
    };
    if constexpr (GS >= kE) {
      for (int64_t g = 0; g < groups; ++g) {
        __m256 gacc[R][NX];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j) gacc[r][j] = _mm256_setzero_ps();
        for (int bl = 0; bl < GS / kE; ++bl) block_acc(g * GS + bl * kE, gacc);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          float s, b;
          group_scale_bias<M>(sp[r], bp[r], g, kind, f, k, s, b);
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j) {
            tot[r][j] = _mm256_fmadd_ps(gacc[r][j], _mm256_set1_ps(s), tot[r][j]);
            bias[r][j] += b * xp.xsum[j][g];
          }
        }
      }
    } else {
      // Groups of 16 in blocks of 32 (2 and 6 bits): lane p holds elements kV*p .. kV*p + 3,
      // so lanes 0-3 belong to the block's first group and lanes 4-7 to its second.
      static_assert(GS * 2 == kE && kV == 4, "a block spans exactly two groups");
      for (int64_t eb = 0; eb < k; eb += kE) {
        __m256 bacc[R][NX];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j) bacc[r][j] = _mm256_setzero_ps();
        block_acc(eb, bacc);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          float s0, s1, b0, b1;
          group_scale_bias<M>(sp[r], bp[r], eb / GS, kind, f, k, s0, b0);
          group_scale_bias<M>(sp[r], bp[r], eb / GS + 1, kind, f, k, s1, b1);
          const __m256 sv = _mm256_setr_ps(s0, s0, s0, s0, s1, s1, s1, s1);
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j) {
            tot[r][j] = _mm256_fmadd_ps(bacc[r][j], sv, tot[r][j]);
            bias[r][j] += b0 * xp.xsum[j][eb / GS];
            bias[r][j] += b1 * xp.xsum[j][eb / GS + 1];
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) out[j][r0 - row_begin + r] = hsum(tot[r][j]) + bias[r][j];
  }
}

// One (bits, group size, mode) variant's entry points: dot_rows shares each x load among 4
// rows; dot_rows_multi runs the vectors four (a row per block: their accumulators fill the
// registers), two (two rows) and one (dot_rows) at a time.
template <int BITS, int GS, quant::Mode M>
struct Avx2Rows {
  static void rows(const QdotRowsArgs& a) {
    qdot_rows_avx2_body<BITS, GS, M, kRows, 1>(*a.w, a.expert, a.row_begin, a.row_end, &a.x,
                                               &a.out);
  }
  static void multi(const QdotMultiArgs& a) {
    in_vector_passes(a, [&](auto nx, int j) {
      constexpr int NX = decltype(nx)::value;  // one vector: dot_rows itself (decode's rows)
      qdot_rows_avx2_body<BITS, GS, M, NX == 4 ? 1 : NX == 2 ? 2 : kRows, NX>(
          *a.w, a.expert, a.row_begin, a.row_end, a.x + j, a.out + j);
    });
  }
};

// Affine rows: the group size is chosen at run time.
template <int BITS>
struct Avx2AffineGroups {
  template <int GS>
  using V = Avx2Rows<BITS, GS, quant::Mode::kAffine>;
};
template <int BITS>
using Avx2Affine = ByGroupSize<Avx2AffineGroups<BITS>::template V>;

#define MOEX_QDOT_AVX2(B)                                                                     \
  QdotKernel {                                                                                \
    "qdot_rows_q" #B "__avx2", Isa::kAvx2, B, 0, prepared_bytes_avx2<B>, prepare_avx2<B>, \
        Avx2Affine<B>::rows, false, quant::Mode::kAffine, Avx2Affine<B>::multi               \
  }
constexpr QdotKernel kTable[] = {MOEX_QDOT_AVX2(2), MOEX_QDOT_AVX2(3), MOEX_QDOT_AVX2(4),
                                 MOEX_QDOT_AVX2(5), MOEX_QDOT_AVX2(6), MOEX_QDOT_AVX2(8)};
#undef MOEX_QDOT_AVX2

#define MOEX_QDOT_GGML_AVX2(NAME, M, B)                                                     \
  QdotKernel {                                                                             \
    "qdot_rows_" #NAME "__avx2", Isa::kAvx2, B, 0, prepared_bytes_avx2<B>, prepare_avx2<B>, \
        Avx2Rows<B, quant::ggml_group_size(M, B), M>::rows, false, M,                        \
        Avx2Rows<B, quant::ggml_group_size(M, B), M>::multi                                  \
  }
constexpr QdotKernel kGgmlTable[] = {MOEX_QDOT_GGML_TABLE(MOEX_QDOT_GGML_AVX2)};
#undef MOEX_QDOT_GGML_AVX2

}  // namespace

const QdotKernel* qdot_kernels_avx2(int* count) {
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

const QdotKernel* qdot_ggml_kernels_avx2(int* count) {
  *count = int(sizeof(kGgmlTable) / sizeof(kGgmlTable[0]));
  return kGgmlTable;
}

}  // namespace moex::kernels
