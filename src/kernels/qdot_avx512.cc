// AVX-512 VNNI row dot products (vpdpbusd: u8 weights x s8 activations). x is quantized per
// weight group to LV int8 levels (the precision tier, kernels/precision.h), for three levels
// x ~= c * (65536*a1 + 256*a2 + a3) with c = max|x over the group| / (127*65536), so
// |x - x'| <= c/2 (levels carry instead of clamping), about 2^-24 of the group's largest
// element: the integer path is as accurate as f32 arithmetic. Two levels drop a3 (c 256 times
// coarser), one level keeps a1 alone. Then sum (s*q + b) x = sum_groups s*c*int_dot(q, levels)
// + b * sum x (exact f32 group sums), with s*c formed once per row and 16 groups.
// dot_rows_multi runs up to 4 prepared vectors per weight-row read: each row block is unpacked
// once and dotted with every vector, in the same operations per (row, vector) as dot_rows.
// This file is compiled twice (qdot_avx512_vbmi.cc includes it with MOEX_QDOT_VBMI=1 and the
// -mavx512vbmi flag): with VBMI every bit width runs here; without it (Cascade Lake) the block
// reorder of prepare is a plain loop and only 2/4/8 bits are built, since 3/5/6-bit unpacking
// needs VBMI's byte permutes (qdot.cc gives those widths the AVX2 kernels there).
// The E2M1 modes (mxfp4, nvfp4) run the same 4-bit body: a vpshufb maps each code to
// u = 12 + 2 * value in [0, 24], so w = scale * value = (scale / 2) * u - 6 * scale is an affine
// row whose per-group scale and bias come from the U8 scale codes (docs/quant_formats.md).
// GCC 12 reports false -Wmaybe-uninitialized inside its own AVX-512 headers (GCC bug 105593,
// the intrinsics' undefined-value idiom `__m512i __Y = __Y`), at every place they are inlined
// into, so the pragma covers this whole file (popped at its end).
#pragma GCC diagnostic push
#ifndef __clang__  // clang has no such warning group (the fuzzing build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/e4m3_avx512.h"
#include "kernels/qdot_variants.h"

namespace moex::kernels {
namespace {

// A block is what one 64-byte weight load (or 8*BITS bytes for 3/5/6 bits) unpacks to: kVecs
// vectors of 64 u8 values. Prepared x is stored block by block in the same lane order:
// element (block j, vector t, byte lane p) = j*kElems + p*kVecs + t.
template <int BITS>
struct Blk {
  static constexpr int kVecs = BITS == 4 ? 2 : (BITS == 2 ? 4 : 1);
  static constexpr int kElems = 64 * kVecs;
  static constexpr int kBytes = kElems * BITS / 8;
};

// LV: int8 activation levels (1, 2 or 3), stored one after another, k_pad bytes each.
template <int BITS, int LV>
PreparedLayout layout_vnni(int64_t k, int group_size) {
  return prepared_layout(k, group_size, Blk<BITS>::kElems, LV, true);
}

template <int BITS, int LV>
size_t prepared_bytes_vnni(int64_t k, int group_size) {
  return layout_vnni<BITS, LV>(k, group_size).total;
}

// Byte-index vector: idx[p] = f(p).
template <typename F>
inline __m512i make_idx8(F f) {
  alignas(64) uint8_t v[64];
  for (int p = 0; p < 64; ++p) v[p] = uint8_t(f(p));
  return _mm512_load_si512(v);
}

#ifndef MOEX_QDOT_VBMI
#define MOEX_QDOT_VBMI 0
#endif

// Reorders a natural-order int8 vector (k_pad bytes) into the block order of Blk<BITS>:
// out[j + 64*t + p] = in[j + kVecs*p + t] within each block j.
template <int BITS>
void permute_blocks(int8_t* a, int64_t k_pad) {
  constexpr int kV = Blk<BITS>::kVecs;
  if constexpr (kV > 1 && !MOEX_QDOT_VBMI) {
    int8_t block[Blk<BITS>::kElems];
    for (int64_t j = 0; j < k_pad; j += Blk<BITS>::kElems) {
      std::memcpy(block, a + j, sizeof(block));
      for (int t = 0; t < kV; ++t)
        for (int p = 0; p < 64; ++p) a[j + 64 * t + p] = block[kV * p + t];
    }
  } else if constexpr (kV == 2) {
    const __m512i even = make_idx8([](int p) { return 2 * p; });
    const __m512i odd = make_idx8([](int p) { return 2 * p + 1; });
    for (int64_t j = 0; j < k_pad; j += 128) {
      const __m512i n0 = _mm512_loadu_si512(a + j), n1 = _mm512_loadu_si512(a + j + 64);
      _mm512_storeu_si512(a + j, _mm512_permutex2var_epi8(n0, even, n1));
      _mm512_storeu_si512(a + j + 64, _mm512_permutex2var_epi8(n0, odd, n1));
    }
  } else if constexpr (kV == 4) {
    __m512i idx[4];
    for (int t = 0; t < 4; ++t) idx[t] = make_idx8([t](int p) { return (4 * p + t) & 127; });
    for (int64_t j = 0; j < k_pad; j += 256) {
      __m512i n[4], o[4];
      for (int i = 0; i < 4; ++i) n[i] = _mm512_loadu_si512(a + j + 64 * i);
      for (int t = 0; t < 4; ++t) {
        const __m512i lo = _mm512_permutex2var_epi8(n[0], idx[t], n[1]);
        const __m512i hi = _mm512_permutex2var_epi8(n[2], idx[t], n[3]);
        o[t] = _mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1);
      }
      for (int t = 0; t < 4; ++t) _mm512_storeu_si512(a + j + 64 * t, o[t]);
    }
  }
}

// Prepared vector: per weight group the f32 sum of x (for the bias term) and the activation
// scale c = max|x over the group| * quantized_x_step(LV); a1..a_LV in block order. Each level
// quantizes the remainder of the previous ones (fnmadd: one rounding), with steps
// 256^(LV-1-l) c, so rounding in an earlier level is absorbed by the next.
template <int BITS, int LV>
void prepare_vnni(const float* x, int64_t k, int group_size, void* dst) {
  const PreparedLayout L = layout_vnni<BITS, LV>(k, group_size);
  char* base = static_cast<char*>(dst);
  float* xsum = reinterpret_cast<float*>(base + L.xsum);
  float* scale = reinterpret_cast<float*>(base + L.scale);
  int8_t* a1 = reinterpret_cast<int8_t*>(base + L.data);
  std::memset(xsum, 0, size_t(L.groups_pad) * 4);
  std::memset(scale, 0, size_t(L.groups_pad) * 4);
  for (int64_t g = 0; g < L.groups; ++g) {
    __m512 sum = _mm512_setzero_ps(), mx = sum;
    for (int i = 0; i < group_size; i += 16) {
      const __m512 v = _mm512_loadu_ps(x + g * group_size + i);
      sum = _mm512_add_ps(sum, v);
      mx = _mm512_max_ps(mx, _mm512_abs_ps(v));
    }
    xsum[g] = _mm512_reduce_add_ps(sum);
    // Below kTinyGroupMax, c would be subnormal and 1/c overflow: such a group counts as 0.
    const float m = _mm512_reduce_max_ps(mx);
    scale[g] = m >= float(kTinyGroupMax) ? m * float(quantized_x_step(LV)) : 0.f;
  }
  const __m512 lim = _mm512_set1_ps(127.f), neg_lim = _mm512_set1_ps(-128.f);
  const __m512 one = _mm512_set1_ps(1.f), k256 = _mm512_set1_ps(256.f);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (int64_t i = 0; i < L.k_pad; i += 16) {  // elements past k read as 0, with c = 0
    const __mmask16 m = __mmask16(k - i >= 16 ? 0xFFFF : (k - i > 0 ? (1u << (k - i)) - 1 : 0));
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 c = _mm512_set1_ps(i < k ? scale[i / group_size] : 0.f);  // 16 | group size
    const __mmask16 nz = _mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_GT_OQ);
    // Steps 256^(LV-1-l) c and their reciprocals (powers of two apart: exact); a reciprocal's
    // rounding only moves a level by at most one, which the next level absorbs.
    const __m512 inv_c = _mm512_maskz_div_ps(nz, one, c);
    __m512 step[LV], inv[LV];
    for (int l = 0; l < LV; ++l) {
      const float mult = float(1 << (8 * (LV - 1 - l)));
      step[l] = _mm512_mul_ps(c, _mm512_set1_ps(mult));
      inv[l] = _mm512_mul_ps(inv_c, _mm512_set1_ps(1.f / mult));
    }
    __m512 a[LV], rem = v;
    for (int l = 0; l < LV; ++l) {
      a[l] = _mm512_roundscale_ps(_mm512_mul_ps(rem, inv[l]), kRound);
      rem = _mm512_fnmadd_ps(a[l], step[l], rem);
    }
    // A remainder of half a step rounds to +-128 in the next level: carry it upwards
    // (128 = 256 - 128) so every lower level fits int8 without clamping; the top level is at
    // most 127 by the choice of c (the clamp only guards rounding slop).
    for (int l = LV - 1; l > 0; --l) {
      const __mmask16 up = _mm512_cmp_ps_mask(a[l], lim, _CMP_GT_OQ);
      const __mmask16 down = _mm512_cmp_ps_mask(a[l], neg_lim, _CMP_LT_OQ);
      a[l] = _mm512_mask_add_ps(_mm512_mask_sub_ps(a[l], up, a[l], k256), down, a[l], k256);
      a[l - 1] = _mm512_mask_sub_ps(_mm512_mask_add_ps(a[l - 1], up, a[l - 1], one), down,
                                    a[l - 1], one);
    }
    a[0] = _mm512_min_ps(_mm512_max_ps(a[0], neg_lim), lim);
    for (int l = 0; l < LV; ++l)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(a1 + l * L.k_pad + i),
                       _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(a[l])));
  }
  for (int l = 0; l < LV; ++l) permute_blocks<BITS>(a1 + l * L.k_pad, L.k_pad);
}

// Unpacks one block of packed weights at p (bytes selected by m) into Blk<BITS>::kVecs vectors
// of u8 values in block lane order. Built once per call: it holds the shuffle constants.
template <int BITS>
struct Unpacker {
  __m512i mask, perm, shifts;
  Unpacker() {
    mask = _mm512_set1_epi8(char((1 << BITS) - 1));
    // 3/5/6 bits: 8 values span BITS bytes. Qword i gathers bytes [BITS*i, BITS*i + 8) and
    // vpmultishiftqb pulls value j of it from bit offset BITS*j.
    perm = make_idx8([](int p) { return (BITS * (p / 8) + p % 8) & 63; });
    shifts = make_idx8([](int p) { return BITS * (p % 8); });
  }
  inline void operator()(const uint8_t* p, __mmask64 m, __m512i* u) const {
    const __m512i v = _mm512_maskz_loadu_epi8(m, p);
    if constexpr (BITS == 8) {
      u[0] = v;
    } else if constexpr (BITS == 4) {
      u[0] = _mm512_and_si512(v, mask);
      u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
    } else if constexpr (BITS == 2) {
      u[0] = _mm512_and_si512(v, mask);
      u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 2), mask);
      u[2] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
      u[3] = _mm512_and_si512(_mm512_srli_epi16(v, 6), mask);
    } else {
      u[0] = _mm512_and_si512(
          _mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(perm, v)), mask);
    }
  }
};

// 16 scales or biases from group g on (lanes past m read as 0); kind 0 f32, 1 bf16, 2 f16.
inline __m512 load_sb(const char* p, int64_t g, __mmask16 m, int kind) {
  if (kind == 0) return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(p) + g);
  const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(p) + g);
  if (kind == 1) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

// 16 group scales of an E2M1 mode from their U8 codes (lanes past m read code 0, whose
// scale multiplies zero-padded x sums): E8M0 2^(c-127), code 0 the subnormal 2^-127; or E4M3.
template <quant::Mode M>
inline __m512 load_fp_scales(const char* p, int64_t g, __mmask16 m) {
  const __m512i c = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p + g));
  if constexpr (M == quant::Mode::kNvfp4) {
    return e4m3_lanes_to_f32(c);
  } else {
    const __m512i bits = _mm512_slli_epi32(c, 23);
    const __mmask16 zero = _mm512_cmpeq_epi32_mask(c, _mm512_setzero_si512());
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(bits, zero, _mm512_set1_epi32(0x00400000)));
  }
}

// 16 groups' weight scales (ws) and what multiplies their x sums (wb) in a ggml block mode,
// from the row's scale blob (quant/format.h): lanes past gm read code 0 (ws = wb = 0). The
// super-block halves are widened once and spread over the lanes of their groups; every
// product is the exact one quant::ggml_group forms, so values equal its scale and bias.
template <quant::Mode M, int BITS, int GS>
inline void load_ggml_scales(const uint8_t* blob, int64_t groups, int64_t supers, int64_t g0,
                             __mmask16 gm, __m512& ws, __m512& wb) {
  const __m512 neg_zero = _mm512_set1_ps(-float(1 << (BITS - 1)));
  if constexpr (M == quant::Mode::kGgmlQ0) {
    ws = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(gm, reinterpret_cast<const uint16_t*>(blob) + g0));
    wb = _mm512_mul_ps(ws, neg_zero);
  } else {
    constexpr int kPerSuper = int(quant::kGgmlSuperBlock / GS);  // 8 or 16 groups
    const int64_t s0 = g0 / kPerSuper;
    const __mmask16 sm = __mmask16(supers - s0 >= 2 ? 3 : 1);  // 16 groups span 1 or 2
    const __m512i spread = _mm512_srli_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), kPerSuper == 8 ? 3 : 4);
    const __m128i codes = _mm_maskz_loadu_epi8(gm, blob + g0);
    if constexpr (M == quant::Mode::kGgmlKMin) {
      const uint16_t* halves = reinterpret_cast<const uint16_t*>(blob + 2 * groups);
      const __m512 d = _mm512_permutexvar_ps(
          spread, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(sm, halves + s0)));
      const __m512 dmin = _mm512_permutexvar_ps(
          spread, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(sm, halves + supers + s0)));
      const __m128i mins = _mm_maskz_loadu_epi8(gm, blob + groups + g0);
      ws = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(codes)), d);
      const __m512 mn = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mins)), dmin);
      wb = _mm512_castsi512_ps(
          _mm512_xor_si512(_mm512_castps_si512(mn), _mm512_set1_epi32(int(0x80000000u))));
    } else {
      const uint16_t* halves = reinterpret_cast<const uint16_t*>(blob + groups);
      const __m512 d = _mm512_permutexvar_ps(
          spread, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(sm, halves + s0)));
      ws = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes)), d);
      wb = _mm512_mul_ps(ws, neg_zero);
    }
  }
}

inline __mmask64 byte_mask(int64_t bytes) {
  return bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
}

// sum over the lane of q * (sum_l 256^(LV-1-l) * a_l) as f32, for the kVecs vectors of one
// block; x[l][t] is level l of vector t. Horner form: vpdpbusd accumulates level l + 1 into
// the shifted sum of levels <= l, so no separate adds. Each lane sums 4*kVecs products q*a
// with |a| <= 128, so the partial sum of level 1 is at most 4*kVecs*(2^BITS - 1)*128: three
// levels fit int32 up to 6 bits (6-bit: 2.12e9 < 2^31), and for 8 bits 256*i1 + i2 fits and
// a3's sum is added in f32; two levels always fit.
template <int BITS, int kV, int LV>
inline __m512 level_dot(const __m512i* u, const __m512i (*x)[Blk<BITS>::kVecs]) {
  __m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int t = 0; t < kV; ++t) acc = _mm512_dpbusd_epi32(acc, u[t], x[0][t]);
  if constexpr (LV >= 2) {
    acc = _mm512_slli_epi32(acc, 8);
#pragma GCC unroll 4
    for (int t = 0; t < kV; ++t) acc = _mm512_dpbusd_epi32(acc, u[t], x[1][t]);
  }
  if constexpr (LV == 3 && BITS > 6) {  // 8 bits: a3's sum in f32
    __m512i i3 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int t = 0; t < kV; ++t) i3 = _mm512_dpbusd_epi32(i3, u[t], x[2][t]);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(256.f), _mm512_cvtepi32_ps(i3));
  }
  if constexpr (LV == 3) {
    acc = _mm512_slli_epi32(acc, 8);
#pragma GCC unroll 4
    for (int t = 0; t < kV; ++t) acc = _mm512_dpbusd_epi32(acc, u[t], x[2][t]);
  }
  return _mm512_cvtepi32_ps(acc);
}

// Rows per block, sharing the x loads. 8 rows ran +6% at 1 thread in kernels_bench, but
// bench-moe at 2 threads on huge pages measured 4 rows ahead (qwen3 27.7-28.1 vs 26.7-27.0
// GB/s, lfm2 27.6-29.1 vs 25.9-27.2, phi equal; 2026-11-29): 8 concurrent row streams read
// DRAM worse than 4 on this machine (a pure read of the same pattern: 14.7 vs 20.4 GB/s).
constexpr int kRows = 4;
// Measured on the 2-core Xeon (1 GB streams, 4-bit k = 768 and 2048): a far distance of one
// 4-row block (2 KB at k = 768) gave 9.6 / 18.5 GB/s at 1 / 2 threads, >= 4-8 KB gave 11.7-12.2
// / 22.8-23.9 (a plain AVX-512 read loop: 13.1 / 24.6); prefetching the far lines into L1
// instead of L2 lost 10-15%.
constexpr int64_t kPrefetchFar = 8192;
constexpr int64_t kPrefetchNear = 512;

// Rows [row_begin, row_end) of `expert` dotted with NX prepared vectors x[j], into out[j].
// Every (row, vector) value goes through the same operations in the same order for any NX,
// so dot_rows (NX = 1) and dot_rows_multi agree bit for bit.
template <int BITS, int GS, quant::Mode M, int LV, int NX>
void qdot_rows_vnni(const QuantWeightsView& w, int64_t expert, int64_t row_begin, int64_t row_end,
                    const void* const* x, float* const* out) {
  constexpr bool kFp = M == quant::Mode::kMxfp4 || M == quant::Mode::kNvfp4;  // E2M1, 4 bits
  constexpr bool kGgml = quant::is_ggml_mode(M);
  constexpr bool kBiases = M == quant::Mode::kAffine;
  constexpr int kB = Blk<BITS>::kElems, kV = Blk<BITS>::kVecs;
  const int64_t k = w.k, groups = k / GS, row_bytes = k * BITS / 8;
  const PreparedLayout L = layout_vnni<BITS, LV>(k, GS);
  const PreparedParts<NX, int8_t> xp(x, L);  // level l of vector j at xp.data[j] + l * L.k_pad
  const int kind = w.sb_dtype == DType::F32 ? 0 : (w.sb_dtype == DType::BF16 ? 1 : 2);
  const int64_t sb_row = w.scale_row_bytes(), supers = k / quant::kGgmlSuperBlock;
  // E2M1 code -> 12 + 2 * value (vpshufb indexes each 128-bit lane's 16 bytes by the code).
  const __m512i e2m1_u = _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
  const __mmask64 block_mask = byte_mask(Blk<BITS>::kBytes);
  const Unpacker<BITS> unpack;
  // Software prefetch (streams of short rows defeat the hardware prefetchers): each row's
  // bytes whole row blocks ahead, at least kPrefetchFar bytes, into L2; kPrefetchNear into L1.
  const int64_t pf_blocks = (kPrefetchFar + kRows * row_bytes - 1) / (kRows * row_bytes);
  const int64_t pf_far = pf_blocks * kRows * row_bytes, sb_pf = pf_blocks * kRows * sb_row;
  // Groups per block when a block spans several (lane l belongs to group l / (16 / G)).
  constexpr int G = kB > GS ? kB / GS : 1;
  const __m512i lane_group =
      _mm512_srli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                        G == 1 ? 31 : (G == 2 ? 3 : (G == 4 ? 2 : (G == 8 ? 1 : 0))));
  // The LV levels of vector j's block at element eb.
  auto load_x = [&](int j, int64_t eb, __m512i (*xl)[kV]) {
#pragma GCC unroll 4
    for (int l = 0; l < LV; ++l)
#pragma GCC unroll 4
      for (int t = 0; t < kV; ++t)
        xl[l][t] = _mm512_load_si512(xp.data[j] + l * L.k_pad + eb + 64 * t);
  };

  for (int64_t r0 = row_begin; r0 < row_end; r0 += kRows) {
    const int nr = int(row_end - r0 < kRows ? row_end - r0 : kRows);
    const uint8_t* wp[kRows];
    const char *sp[kRows], *bp[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {  // a tail block repeats its last row
      const int64_t idx = expert * w.n + r0 + (r < nr ? r : nr - 1);
      wp[r] = w.w + idx * row_bytes;
      sp[r] = static_cast<const char*>(w.scales) + idx * sb_row;
      bp[r] = kBiases ? static_cast<const char*>(w.biases) + idx * sb_row : sp[r];
    }
    __m512 facc[kRows][NX];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) facc[r][j] = _mm512_setzero_ps();
    for (int r = 0; r < kRows; ++r)
      for (int64_t o = 0; o < sb_row; o += 64) {
        _mm_prefetch(sp[r] + o + sb_pf, _MM_HINT_T1);
        if constexpr (kBiases) _mm_prefetch(bp[r] + o + sb_pf, _MM_HINT_T1);
      }

    for (int64_t g0 = 0; g0 < groups; g0 += 16) {
      const int64_t ng = groups - g0 < 16 ? groups - g0 : 16;
      const __mmask16 gm = __mmask16(ng >= 16 ? 0xFFFF : (1u << ng) - 1);
      __m512 xs[NX], xg[NX];
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) {
        xs[j] = _mm512_loadu_ps(xp.xsum[j] + g0);
        xg[j] = _mm512_loadu_ps(xp.scale[j] + g0);
      }
      // Weight scale x activation scale, per row, vector and group.
      alignas(64) float sbuf[kRows][NX][16];
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        __m512 ws, wb;  // the weight scales, and what multiplies the group sums of x
        if constexpr (kFp) {
          const __m512 s = load_fp_scales<M>(sp[r], g0, gm);
          ws = _mm512_mul_ps(s, _mm512_set1_ps(0.5f));
          wb = _mm512_mul_ps(s, _mm512_set1_ps(-6.0f));
        } else if constexpr (kGgml) {
          load_ggml_scales<M, BITS, GS>(reinterpret_cast<const uint8_t*>(sp[r]), groups, supers,
                                        g0, gm, ws, wb);
        } else {
          ws = load_sb(sp[r], g0, gm, kind);
          wb = load_sb(bp[r], g0, gm, kind);
        }
#pragma GCC unroll 4
        for (int j = 0; j < NX; ++j) {
          _mm512_store_ps(sbuf[r][j], _mm512_mul_ps(ws, xg[j]));
          facc[r][j] = _mm512_fmadd_ps(wb, xs[j], facc[r][j]);
        }
      }
      const int64_t e0 = g0 * GS, e1 = e0 + ng * GS;
      for (int64_t eb = e0; eb < e1; eb += kB) {
        const __mmask64 m = k - eb >= kB ? block_mask : byte_mask((k - eb) * BITS / 8);  // row tail
        __m512i xl[LV][kV];
        if constexpr (NX == 1) load_x(0, eb, xl);  // shared by the rows
        const int64_t gi = (eb - e0) / GS;  // first group of the block within the chunk
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
          __m512i u[kV];
          const char* wb = reinterpret_cast<const char*>(wp[r] + eb * BITS / 8);
          _mm_prefetch(wb + pf_far, _MM_HINT_T1);
          _mm_prefetch(wb + kPrefetchNear, _MM_HINT_T0);
          unpack(wp[r] + eb * BITS / 8, m, u);
          if constexpr (kFp) {
#pragma GCC unroll 4
            for (int t = 0; t < kV; ++t) u[t] = _mm512_shuffle_epi8(e2m1_u, u[t]);
          }
#pragma GCC unroll 4
          for (int j = 0; j < NX; ++j) {
            if constexpr (NX > 1) load_x(j, eb, xl);
            const __m512 acc = level_dot<BITS, kV, LV>(u, xl);
            const __m512 s =
                G == 1 ? _mm512_set1_ps(sbuf[r][j][gi])
                       : _mm512_permutexvar_ps(
                             _mm512_add_epi32(lane_group, _mm512_set1_epi32(int(gi))),
                             _mm512_load_ps(sbuf[r][j]));
            facc[r][j] = _mm512_fmadd_ps(acc, s, facc[r][j]);
          }
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NX; ++j) out[j][r0 - row_begin + r] = _mm512_reduce_add_ps(facc[r][j]);
  }
}

// One (bits, group size, mode, levels) variant's entry points: dot_rows is NX = 1;
// dot_rows_multi runs the vectors four, two and one at a time.
template <int BITS, int GS, quant::Mode M, int LV>
struct Vnni {
  static void rows(const QdotRowsArgs& a) {
    qdot_rows_vnni<BITS, GS, M, LV, 1>(*a.w, a.expert, a.row_begin, a.row_end, &a.x, &a.out);
  }
  static void multi(const QdotMultiArgs& a) {
    in_vector_passes(a, [&](auto nx, int j) {
      qdot_rows_vnni<BITS, GS, M, LV, decltype(nx)::value>(*a.w, a.expert, a.row_begin,
                                                          a.row_end, a.x + j, a.out + j);
    });
  }
};

// Affine rows: the group size is chosen at run time.
template <int BITS, int LV>
struct VnniAffineGroups {
  template <int GS>
  using V = Vnni<BITS, GS, quant::Mode::kAffine, LV>;
};
template <int BITS, int LV>
using VnniAffine = ByGroupSize<VnniAffineGroups<BITS, LV>::template V>;

#if MOEX_QDOT_VBMI
#define MOEX_QDOT_SUFFIX "__avx512vnni"
#else
#define MOEX_QDOT_SUFFIX "__avx512vnni_novbmi"
#endif
// The tier's name ends the kernel's: "qdot_rows_q4__avx512vnni_standard".
#define MOEX_QDOT_VNNI(B, LV, TIER)                                                          \
  QdotKernel {                                                                              \
    "qdot_rows_q" #B MOEX_QDOT_SUFFIX "_" #TIER, Isa::kAvx512, B, LV,                       \
        prepared_bytes_vnni<B, LV>, prepare_vnni<B, LV>, VnniAffine<B, LV>::rows,           \
        bool(MOEX_QDOT_VBMI), quant::Mode::kAffine, VnniAffine<B, LV>::multi                \
  }
// mxfp4 (group 32) and nvfp4 (group 16) on the 4-bit body.
#define MOEX_QDOT_VNNI_FP(NAME, GS, M, LV, TIER)                                             \
  QdotKernel {                                                                              \
    "qdot_rows_" #NAME MOEX_QDOT_SUFFIX "_" #TIER, Isa::kAvx512, 4, LV,                     \
        prepared_bytes_vnni<4, LV>, prepare_vnni<4, LV>, Vnni<4, GS, M, LV>::rows,          \
        bool(MOEX_QDOT_VBMI), M, Vnni<4, GS, M, LV>::multi                                  \
  }
#define MOEX_QDOT_FP_TIER(LV, TIER)                            \
  MOEX_QDOT_VNNI_FP(mxfp4, 32, quant::Mode::kMxfp4, LV, TIER), \
      MOEX_QDOT_VNNI_FP(nvfp4, 16, quant::Mode::kNvfp4, LV, TIER)
// The ggml block modes (q4_0 ... q6_k); without VBMI only their 2-, 4- and 8-bit members.
#define MOEX_QDOT_VNNI_GGML(NAME, B, GS, M, LV, TIER)                                        \
  QdotKernel {                                                                              \
    "qdot_rows_" #NAME MOEX_QDOT_SUFFIX "_" #TIER, Isa::kAvx512, B, LV,                     \
        prepared_bytes_vnni<B, LV>, prepare_vnni<B, LV>, Vnni<B, GS, M, LV>::rows,          \
        bool(MOEX_QDOT_VBMI), M, Vnni<B, GS, M, LV>::multi                                  \
  }
#define MOEX_QDOT_GGML_TIER_248(LV, TIER)                                       \
  MOEX_QDOT_VNNI_GGML(q4_0, 4, 32, quant::Mode::kGgmlQ0, LV, TIER),             \
      MOEX_QDOT_VNNI_GGML(q8_0, 8, 32, quant::Mode::kGgmlQ0, LV, TIER),         \
      MOEX_QDOT_VNNI_GGML(q2_k, 2, 16, quant::Mode::kGgmlKMin, LV, TIER),       \
      MOEX_QDOT_VNNI_GGML(q4_k, 4, 32, quant::Mode::kGgmlKMin, LV, TIER),       \
      MOEX_QDOT_VNNI_GGML(iq4_xs, 8, 32, quant::Mode::kGgmlKZero, LV, TIER)
#define MOEX_QDOT_GGML_TIER_356(LV, TIER)                                       \
  MOEX_QDOT_VNNI_GGML(q5_0, 5, 32, quant::Mode::kGgmlQ0, LV, TIER),             \
      MOEX_QDOT_VNNI_GGML(q5_k, 5, 32, quant::Mode::kGgmlKMin, LV, TIER),       \
      MOEX_QDOT_VNNI_GGML(q3_k, 3, 16, quant::Mode::kGgmlKZero, LV, TIER),      \
      MOEX_QDOT_VNNI_GGML(q6_k, 6, 16, quant::Mode::kGgmlKZero, LV, TIER)
#if MOEX_QDOT_VBMI
#define MOEX_QDOT_TIER(LV, TIER)                                                             \
  MOEX_QDOT_VNNI(2, LV, TIER), MOEX_QDOT_VNNI(3, LV, TIER), MOEX_QDOT_VNNI(4, LV, TIER),     \
      MOEX_QDOT_VNNI(5, LV, TIER), MOEX_QDOT_VNNI(6, LV, TIER), MOEX_QDOT_VNNI(8, LV, TIER), \
      MOEX_QDOT_FP_TIER(LV, TIER), MOEX_QDOT_GGML_TIER_248(LV, TIER),                       \
      MOEX_QDOT_GGML_TIER_356(LV, TIER)
#else
#define MOEX_QDOT_TIER(LV, TIER)                                                         \
  MOEX_QDOT_VNNI(2, LV, TIER), MOEX_QDOT_VNNI(4, LV, TIER), MOEX_QDOT_VNNI(8, LV, TIER), \
      MOEX_QDOT_FP_TIER(LV, TIER), MOEX_QDOT_GGML_TIER_248(LV, TIER)
#endif
constexpr QdotKernel kTable[] = {MOEX_QDOT_TIER(3, exact), MOEX_QDOT_TIER(2, standard),
                                 MOEX_QDOT_TIER(1, fast)};
#undef MOEX_QDOT_TIER
#undef MOEX_QDOT_FP_TIER
#undef MOEX_QDOT_GGML_TIER_248
#undef MOEX_QDOT_GGML_TIER_356
#undef MOEX_QDOT_VNNI_GGML
#undef MOEX_QDOT_VNNI
#undef MOEX_QDOT_VNNI_FP
#undef MOEX_QDOT_SUFFIX

}  // namespace

#if MOEX_QDOT_VBMI
const QdotKernel* qdot_kernels_avx512_vbmi(int* count) {
#else
const QdotKernel* qdot_kernels_avx512_novbmi(int* count) {
#endif
  *count = int(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace moex::kernels

#pragma GCC diagnostic pop
