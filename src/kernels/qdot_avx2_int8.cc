// AVX2 integer row dot products for 4-bit rows (MLX's affine, ggml's q4_0 and q4_k): x quantized per
// weight group to LV int8 levels, the precision tier's rounding (kernels/precision.h, the same
// levels the AVX-512 VNNI kernels use), then vpmaddubsw (u8 weights x s8 levels, pairs summed
// to int16) accumulated in int16 over a group's blocks and widened once per group by vpmaddwd.
// The integer sums are exact, so sum (s*q + b) x = sum_groups s*c*int_dot(q, levels) + b * sum x
// (exact f32 group sums) carries only the f32 roundings of the per-group terms: the tiers'
// error bounds are the VNNI kernels' (the exact tier about 2^-24 of each group's largest |x|).
// Against the f32 AVX2 kernel (qdot_avx2.cc) this is about half the instructions per weight at
// three levels and a quarter at one, which is what decode on AVX2 hosts is bound by.
#include <immintrin.h>

#include "kernels/qdot_avx2_rows.h"
#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

// A block is 16 packed bytes: 32 weights, element 2i in the low nibble of byte i and 2i + 1 in
// the high one. Unpacked, lanes 0-15 hold the even elements and lanes 16-31 the odd ones;
// prepared x levels are stored block by block in that order.
constexpr int kBlock = 32;
constexpr int kBlockBytes = 16;

template <int LV>
PreparedLayout layout_int8(int64_t k, int group_size) {
  return prepared_layout(k, group_size, kBlock, LV, true);
}

template <int LV>
size_t prepared_bytes_int8(int64_t k, int group_size) {
  return layout_int8<LV>(k, group_size).total;
}

// Per group: the f32 sum of x (the bias term), the activation scale c and the LV levels
// (quantize_group_levels, the tiers' scalar rounding), reordered into block order.
template <int LV>
void prepare_int8(const float* x, int64_t k, int group_size, void* dst) {
  const PreparedLayout L = layout_int8<LV>(k, group_size);
  char* base = static_cast<char*>(dst);
  float* xsum = reinterpret_cast<float*>(base + L.xsum);
  float* scale = reinterpret_cast<float*>(base + L.scale);
  int8_t* data = reinterpret_cast<int8_t*>(base + L.data);
  std::memset(base, 0, L.total);
  int8_t lev[3][128];  // group_size <= 128
  int8_t* a[3] = {lev[0], lev[1], lev[2]};
  for (int64_t g = 0; g < L.groups; ++g) {
    const float* xg = x + g * group_size;
    float s = 0.f;
    for (int i = 0; i < group_size; ++i) s += xg[i];
    xsum[g] = s;
    scale[g] = quantize_group_levels(xg, group_size, LV, a);
    for (int l = 0; l < LV; ++l)
      for (int i = 0; i < group_size; ++i) {
        const int64_t e = g * group_size + i, b = e / kBlock * kBlock, in = e - b;
        data[l * L.k_pad + b + (in % 2) * 16 + in / 2] = a[l][i];
      }
  }
}

// The weight scales and biases (what multiplies the groups' x sums) of groups [g0, g0 + n),
// n <= 8, in lanes 0..n-1 (the rest 0). Eight stored values are read as vectors; a shorter
// tail value by value (never past the row's last group).
template <quant::Mode M>
inline void scales_biases8(const char* sp, const char* bp, int64_t g0, int n, int kind,
                           const quant::Format& f, int64_t k, __m256& ws, __m256& wb) {
  if (M == quant::Mode::kAffine && n == 8) {
    auto load8 = [&](const char* p) {
      if (kind == 0) return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + g0);
      const __m128i v =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(p) + g0));
      if (kind == 2) return _mm256_cvtph_ps(v);
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
    };
    ws = load8(sp);
    wb = load8(bp);
    return;
  }
  alignas(32) float s[8] = {}, b[8] = {};
  for (int i = 0; i < n; ++i) group_scale_bias<M>(sp, bp, g0 + i, kind, f, k, s[i], b[i]);
  ws = _mm256_load_ps(s);
  wb = _mm256_load_ps(b);
}

// Rows [row_begin, row_end) of `expert` dotted with NX prepared vectors x[j], into out[j], R
// rows per block. Every (row, vector) value takes the same operations for any R and NX, so
// dot_rows (R = 4, NX = 1) and dot_rows_multi agree bit for bit.
// Bounds: a pair sum of vpmaddubsw is at most 2 * 15 * 128 = 3840, a group of 128 adds four
// (15360 < 2^15), vpmaddwd two of those (30720), and the Horner form over three levels
// 30720 * (65536 + 256 + 1) < 2^31: no step saturates or overflows.
template <int GS, quant::Mode M, int LV, int R, int NX>
void qdot_rows_int8_body(const QuantWeightsView& w, int64_t expert, int64_t row_begin,
                         int64_t row_end, const void* const* x, float* const* out) {
  static_assert(GS % kBlock == 0 && GS <= 128, "groups of 32, 64 or 128");
  constexpr int kBlocks = GS / kBlock;
  const quant::Format f = w.format();
  const int64_t k = w.k, groups = k / GS, row_bytes = k / 2;
  const PreparedLayout L = layout_int8<LV>(k, GS);
  const PreparedParts<NX, int8_t> xp(x, L);  // level l of vector j at xp.data[j] + l * L.k_pad
  const int kind = w.sb_dtype == DType::F32 ? 0 : (w.sb_dtype == DType::BF16 ? 1 : 2);
  const int64_t sb_row = w.scale_row_bytes();
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i high_half = _mm256_set_epi64x(4, 4, 0, 0);  // the odd elements' shift
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t pf_far = 4 * row_bytes;  // software prefetch four rows ahead, into L2

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
    // tot: the groups' integer dots times their scales; bsum: the groups' biases times their
    // x sums. Both per lane, summed across lanes at the end.
    __m256 tot[R][NX], bsum[R][NX];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) tot[r][j] = bsum[r][j] = _mm256_setzero_ps();
    for (int64_t g0 = 0; g0 < groups; g0 += 8) {  // 8 groups' scales and biases per vector
      const int ng = int(groups - g0 < 8 ? groups - g0 : 8);
      alignas(32) float sc[R][NX][8];  // weight scale x activation scale, per group
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        __m256 ws, wb;
        scales_biases8<M>(sp[r], bp[r], g0, ng, kind, f, k, ws, wb);
#pragma GCC unroll 4
        for (int j = 0; j < NX; ++j) {
          _mm256_store_ps(sc[r][j], _mm256_mul_ps(ws, _mm256_loadu_ps(xp.scale[j] + g0)));
          bsum[r][j] = _mm256_fmadd_ps(wb, _mm256_loadu_ps(xp.xsum[j] + g0), bsum[r][j]);
        }
      }
      for (int gi = 0; gi < ng; ++gi) {
        const int64_t g = g0 + gi;
        __m256i acc[R][NX][LV];  // int16 pair sums over the group's blocks, per level
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j)
#pragma GCC unroll 4
            for (int l = 0; l < LV; ++l) acc[r][j][l] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int bl = 0; bl < kBlocks; ++bl) {
          const int64_t e = g * GS + bl * kBlock;
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            const uint8_t* wb = wp[r] + e / 2;
            if ((e / 2) % 64 == 0)
              _mm_prefetch(reinterpret_cast<const char*>(wb + pf_far), _MM_HINT_T1);
            const __m256i v = _mm256_broadcastsi128_si256(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb)));
            const __m256i u = _mm256_and_si256(_mm256_srlv_epi64(v, high_half), nibble);
#pragma GCC unroll 4
            for (int j = 0; j < NX; ++j)
#pragma GCC unroll 4
              for (int l = 0; l < LV; ++l) {
                const __m256i xl = _mm256_load_si256(
                    reinterpret_cast<const __m256i*>(xp.data[j] + l * L.k_pad + e));
                acc[r][j][l] = _mm256_add_epi16(acc[r][j][l], _mm256_maddubs_epi16(u, xl));
              }
          }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j) {
            __m256i i32 = _mm256_madd_epi16(acc[r][j][0], ones);
#pragma GCC unroll 4
            for (int l = 1; l < LV; ++l)
              i32 = _mm256_add_epi32(_mm256_slli_epi32(i32, 8),
                                     _mm256_madd_epi16(acc[r][j][l], ones));
            tot[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32),
                                        _mm256_broadcast_ss(&sc[r][j][gi]), tot[r][j]);
          }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j)
        out[j][r0 - row_begin + r] = hsum(tot[r][j]) + hsum(bsum[r][j]);
  }
}

// One (group size, mode, levels) variant's entry points: dot_rows one row per block (fewer
// concurrent weight streams per thread: decode on the Zen 3 host ran a median 10% faster than
// with four rows, 9 of 11 interleaved rounds, docs/benchmark_results/avx2-int8-2026-12-08.md);
// dot_rows_multi four vectors a row at a time, two vectors two rows, one vector dot_rows.
template <int GS, quant::Mode M, int LV>
struct Int8Rows {
  static void rows(const QdotRowsArgs& a) {
    qdot_rows_int8_body<GS, M, LV, 1, 1>(*a.w, a.expert, a.row_begin, a.row_end, &a.x, &a.out);
  }
  static void multi(const QdotMultiArgs& a) {
    in_vector_passes(a, [&](auto nx, int j) {
      constexpr int NX = decltype(nx)::value;
      qdot_rows_int8_body<GS, M, LV, NX == 2 ? 2 : 1, NX>(*a.w, a.expert, a.row_begin,
                                                         a.row_end, a.x + j, a.out + j);
    });
  }
};

// Affine rows: the group size is chosen at run time.
template <int LV>
struct Int8AffineGroups {
  template <int GS>
  using V = Int8Rows<GS, quant::Mode::kAffine, LV>;
};
template <int LV>
using Int8Affine = ByGroupSize<Int8AffineGroups<LV>::template V>;

#define MOEX_QDOT_INT8_AVX2(LV, TIER)                                                       \
  QdotKernel {                                                                             \
    "qdot_rows_q4__avx2_" TIER, Isa::kAvx2, 4, LV, prepared_bytes_int8<LV>, prepare_int8<LV>, \
        Int8Affine<LV>::rows, false, quant::Mode::kAffine, Int8Affine<LV>::multi            \
  }
constexpr QdotKernel kInt8Table[] = {MOEX_QDOT_INT8_AVX2(1, "fast"),
                                 MOEX_QDOT_INT8_AVX2(2, "standard"),
                                 MOEX_QDOT_INT8_AVX2(3, "exact")};
#undef MOEX_QDOT_INT8_AVX2

// The ggml block modes with 4-bit members (q4_0, q4_k: groups of 32), per tier.
#define MOEX_QDOT_INT8_GGML_AVX2(NAME, M, LV, TIER)                                           \
  QdotKernel {                                                                              \
    "qdot_rows_" #NAME "__avx2_" TIER, Isa::kAvx2, 4, LV, prepared_bytes_int8<LV>,            \
        prepare_int8<LV>, Int8Rows<32, M, LV>::rows, false, M, Int8Rows<32, M, LV>::multi   \
  }
constexpr QdotKernel kInt8GgmlTable[] = {
    MOEX_QDOT_INT8_GGML_AVX2(q4_0, quant::Mode::kGgmlQ0, 1, "fast"),
    MOEX_QDOT_INT8_GGML_AVX2(q4_0, quant::Mode::kGgmlQ0, 2, "standard"),
    MOEX_QDOT_INT8_GGML_AVX2(q4_0, quant::Mode::kGgmlQ0, 3, "exact"),
    MOEX_QDOT_INT8_GGML_AVX2(q4_k, quant::Mode::kGgmlKMin, 1, "fast"),
    MOEX_QDOT_INT8_GGML_AVX2(q4_k, quant::Mode::kGgmlKMin, 2, "standard"),
    MOEX_QDOT_INT8_GGML_AVX2(q4_k, quant::Mode::kGgmlKMin, 3, "exact")};
#undef MOEX_QDOT_INT8_GGML_AVX2

}  // namespace

const QdotKernel* qdot_ggml_kernels_avx2_int8(int* count) {
  *count = int(sizeof(kInt8GgmlTable) / sizeof(kInt8GgmlTable[0]));
  return kInt8GgmlTable;
}

const QdotKernel* qdot_kernels_avx2_int8(int* count) {
  *count = int(sizeof(kInt8Table) / sizeof(kInt8Table[0]));
  return kInt8Table;
}

}  // namespace moex::kernels
