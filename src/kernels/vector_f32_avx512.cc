// AVX-512 f32 vector primitives: two 16-lane accumulators, masked tails; attention's
// register-blocked loops with the same bits as loops of dot and axpy.
// GCC 12 reports false -W(maybe-)uninitialized inside its own AVX-512 headers (GCC bug 105593,
// here from _mm512_reduce_add_ps); the pragma covers those headers only.
#pragma GCC diagnostic push
#ifndef __clang__  // clang has no such warning group (the fuzzing build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <vector>

#include "kernels/exp_avx512.h"
#include "kernels/vector_f32_variants.h"

namespace moex::kernels {

float dot_f32__avx512(const float* a, const float* b, int64_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  if (i + 16 <= n) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    i += 16;
  }
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// Full vectors use plain loads and stores: a masked store does not forward to the next call's
// load of y (attention calls this once per key on the same y), which cost ~3x here.
void axpy_f32__avx512(float a, const float* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

namespace {

constexpr __mmask16 kAll = 0xFFFF;

// The loops over a block's rows, keys and vectors are unrolled so that the accumulator arrays
// live in registers (without it GCC 12 kept them in memory: a store per FMA).
#define MOEX_UNROLL _Pragma("GCC unroll 16")

// Keys whose sums are finished together by reduce16 (one per lane).
constexpr int kKeysPerGroup = 16;

// J query rows by T keys, each sum in dot_f32__avx512's order (two accumulators over
// 32-float blocks, a last full vector into the first, the masked tail into the second), then
// times scale. The rows and keys share their loads; each sum's arithmetic is dot's. With
// `partial`, the two accumulators' sum is stored there for reduce16 instead of reduced here.
template <int J, int T>
void dots_block(const float* q, const float* k, int64_t w, float scale, float* scores,
                int64_t stride, float* partial) {
  __m512 s0[J][T], s1[J][T];
  MOEX_UNROLL
  for (int j = 0; j < J; ++j)
    MOEX_UNROLL
    for (int t = 0; t < T; ++t) s0[j][t] = s1[j][t] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= w; i += 32)
    MOEX_UNROLL
    for (int j = 0; j < J; ++j) {
      const __m512 a0 = _mm512_loadu_ps(q + j * w + i), a1 = _mm512_loadu_ps(q + j * w + i + 16);
      MOEX_UNROLL
      for (int t = 0; t < T; ++t) {
        s0[j][t] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(k + t * w + i), s0[j][t]);
        s1[j][t] = _mm512_fmadd_ps(a1, _mm512_loadu_ps(k + t * w + i + 16), s1[j][t]);
      }
    }
  if (i + 16 <= w) {
    MOEX_UNROLL
    for (int j = 0; j < J; ++j) {
      const __m512 a0 = _mm512_loadu_ps(q + j * w + i);
      MOEX_UNROLL
      for (int t = 0; t < T; ++t)
        s0[j][t] = _mm512_fmadd_ps(a0, _mm512_loadu_ps(k + t * w + i), s0[j][t]);
    }
    i += 16;
  }
  if (i < w) {
    const __mmask16 m = __mmask16((1u << (w - i)) - 1);
    MOEX_UNROLL
    for (int j = 0; j < J; ++j) {
      const __m512 a1 = _mm512_maskz_loadu_ps(m, q + j * w + i);
      MOEX_UNROLL
      for (int t = 0; t < T; ++t)
        s1[j][t] = _mm512_fmadd_ps(a1, _mm512_maskz_loadu_ps(m, k + t * w + i), s1[j][t]);
    }
  }
  MOEX_UNROLL
  for (int j = 0; j < J; ++j)
    MOEX_UNROLL
    for (int t = 0; t < T; ++t) {
      const __m512 s = _mm512_add_ps(s0[j][t], s1[j][t]);
      if (partial)  // left for reduce16 (j's 16 vectors kKeysPerGroup * 16 floats apart)
        _mm512_store_ps(partial + (j * kKeysPerGroup + t) * 16, s);
      else
        scores[j * stride + t] = _mm512_reduce_add_ps(s) * scale;
    }
}

// The order of _mm512_reduce_add_ps's tree (GCC's avx512fintrin.h) over lanes x0..x15:
// a_i = x_i + x_(i+8) (i < 8), b_i = a_i + a_(i+4) (i < 4), c_0 = b_0 + b_2, c_1 = b_1 + b_3,
// sum = c_0 + c_1. reduce16 runs that tree for 16 vectors at once, each level adding lanes of
// two vectors brought side by side by shuffles, and so gives each vector's sum bit for bit.
// Vector m of the tree's input is key key_of(m): the shuffles leave key 4 * (m % 4) + m / 4 in
// lane m, so that order puts key t in lane t.
constexpr int key_of(int m) { return 4 * (m % 4) + m / 4; }

// scores[t] = (the sum of the 16 lanes of part[t * 16 ...]) * scale for t < 16, each sum in
// _mm512_reduce_add_ps's order.
void reduce16(const float* part, float scale, float* scores) {
  __m512 a[8], b[4], c[2];
  MOEX_UNROLL
  for (int k = 0; k < 8; ++k) {
    const __m512 x = _mm512_load_ps(part + key_of(2 * k) * 16);
    const __m512 y = _mm512_load_ps(part + key_of(2 * k + 1) * 16);
    a[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  MOEX_UNROLL
  for (int k = 0; k < 4; ++k)
    b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  MOEX_UNROLL
  for (int k = 0; k < 2; ++k)
    c[k] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * k], b[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(b[2 * k], b[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 sum = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
  _mm512_storeu_ps(scores, _mm512_mul_ps(sum, _mm512_set1_ps(scale)));
}

// J rows of the weighted sums over C vectors of 16 columns starting at column c (the last
// vector under mask m): accumulators from zero (`first`) or from the sums so far in out, one
// FMA per key in key order, as axpy's chain on the same lanes.
template <int J, int C>
void sums_block(const float* p, int64_t stride, const float* v, int64_t pitch, int64_t n,
                int64_t w, int64_t c, __mmask16 m, bool first, float* out) {
  __m512 acc[J][C];
  MOEX_UNROLL
  for (int j = 0; j < J; ++j)
    MOEX_UNROLL
    for (int x = 0; x < C; ++x)
      acc[j][x] = first ? _mm512_setzero_ps()
                        : _mm512_maskz_loadu_ps(x == C - 1 ? m : kAll, out + j * w + c + 16 * x);
  for (int64_t t = 0; t < n; ++t) {
    __m512 vv[C];
    MOEX_UNROLL
    for (int x = 0; x < C; ++x)
      vv[x] = _mm512_maskz_loadu_ps(x == C - 1 ? m : kAll, v + t * pitch + c + 16 * x);
    MOEX_UNROLL
    for (int j = 0; j < J; ++j) {
      const __m512 pj = _mm512_set1_ps(p[j * stride + t]);
      MOEX_UNROLL
      for (int x = 0; x < C; ++x) acc[j][x] = _mm512_fmadd_ps(pj, vv[x], acc[j][x]);
    }
  }
  MOEX_UNROLL
  for (int j = 0; j < J; ++j)
    MOEX_UNROLL
    for (int x = 0; x < C; ++x)
      _mm512_mask_storeu_ps(out + j * w + c + 16 * x, x == C - 1 ? m : kAll, acc[j][x]);
}

// Whole groups of 16 keys leave their vectors in `partial` and are reduced 16 at a time
// (a horizontal sum per key cost about as much as the key's FMAs); the keys after the last
// whole group are reduced one by one. The same bits either way.
template <int J>
void dots_rows(const float* q, const float* keys, int64_t n, int64_t w, float scale,
               float* scores, int64_t stride) {
  alignas(64) float partial[J * kKeysPerGroup * 16];
  int64_t t = 0;
  for (; t + kKeysPerGroup <= n; t += kKeysPerGroup) {
    MOEX_UNROLL
    for (int u = 0; u < kKeysPerGroup; u += 2)
      dots_block<J, 2>(q, keys + (t + u) * w, w, scale, nullptr, stride, partial + u * 16);
    MOEX_UNROLL
    for (int j = 0; j < J; ++j)
      reduce16(partial + j * kKeysPerGroup * 16, scale, scores + j * stride + t);
  }
  for (; t + 2 <= n; t += 2)
    dots_block<J, 2>(q, keys + t * w, w, scale, scores + t, stride, nullptr);
  if (t < n) dots_block<J, 1>(q, keys + t * w, w, scale, scores + t, stride, nullptr);
}

template <int J>
void sums_rows(const float* p, int64_t stride, const float* v, int64_t pitch, int64_t n,
               int64_t w, bool first, float* out) {
  int64_t c = 0;
  for (; c + 64 <= w; c += 64) sums_block<J, 4>(p, stride, v, pitch, n, w, c, kAll, first, out);
  for (; c < w; c += 16) {
    const int64_t left = w - c;
    const __mmask16 m = left >= 16 ? kAll : __mmask16((1u << left) - 1);
    sums_block<J, 1>(p, stride, v, pitch, n, w, c, m, first, out);
  }
}

// Keys per pass over all query rows: a chunk of key (value) rows is read from memory once
// and stays in L1 while every block of 4 rows uses it (a group of 8 heads over a 2048-key
// cache otherwise read each kv head's 1 MB of keys and of values twice per decode step).
constexpr int64_t kKeysPerChunk = 32;

void scaled_dots_chunk(const float* q, int64_t nq, const float* keys, int64_t n, int64_t width,
                       float scale, float* scores, int64_t stride) {
  int64_t j = 0;
  for (; j + 4 <= nq; j += 4)
    dots_rows<4>(q + j * width, keys, n, width, scale, scores + j * stride, stride);
  const float* qj = q + j * width;
  float* sj = scores + j * stride;
  switch (nq - j) {
    case 3: dots_rows<3>(qj, keys, n, width, scale, sj, stride); break;
    case 2: dots_rows<2>(qj, keys, n, width, scale, sj, stride); break;
    case 1: dots_rows<1>(qj, keys, n, width, scale, sj, stride); break;
    default: break;
  }
}

void weighted_sums_chunk(const float* p, int64_t nq, int64_t stride, const float* values,
                         int64_t pitch, int64_t n, int64_t width, bool first, float* out) {
  int64_t j = 0;
  for (; j + 4 <= nq; j += 4)
    sums_rows<4>(p + j * stride, stride, values, pitch, n, width, first, out + j * width);
  const float* pj = p + j * stride;
  float* oj = out + j * width;
  switch (nq - j) {
    case 3: sums_rows<3>(pj, stride, values, pitch, n, width, first, oj); break;
    case 2: sums_rows<2>(pj, stride, values, pitch, n, width, first, oj); break;
    case 1: sums_rows<1>(pj, stride, values, pitch, n, width, first, oj); break;
    default: break;
  }
}

// The passes of scaled_dots and weighted_sums over chunks of kKeysPerChunk rows, each chunk's
// rows given as f32 by rows(t, m) (rows [t, t + m), `pitch` floats apart): the plane itself,
// or an f16 plane's rows converted. Both element types run these same loops.
template <typename Rows>
void scaled_dots_chunks(const float* q, int64_t nq, int64_t n, int64_t width, float scale,
                        float* scores, int64_t stride, Rows rows) {
  for (int64_t t = 0; t < n; t += kKeysPerChunk) {
    const int64_t m = std::min(kKeysPerChunk, n - t);
    scaled_dots_chunk(q, nq, rows(t, m), m, width, scale, scores + t, stride);
  }
}

template <typename Rows>
void weighted_sums_chunks(const float* p, int64_t nq, int64_t stride, int64_t pitch, int64_t n,
                          int64_t width, float* out, Rows rows) {
  if (n == 0)
    for (int64_t i = 0; i < nq * width; ++i) out[i] = 0.f;
  for (int64_t t = 0; t < n; t += kKeysPerChunk) {
    const int64_t m = std::min(kKeysPerChunk, n - t);
    weighted_sums_chunk(p + t, nq, stride, rows(t, m), pitch, m, width, t == 0, out);
  }
}

// Rows [t, t + m) of an f16 plane (rows `width` apart) as f32, in a scratch of the calling
// thread.
const float* f16_rows(const uint16_t* plane, int64_t t, int64_t m, int64_t width) {
  thread_local std::vector<float> scratch;
  const uint16_t* rows = plane + t * width;
  const int64_t count = m * width;
  if (int64_t(scratch.size()) < count) scratch.resize(size_t(count));
  float* d = scratch.data();
  int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                reinterpret_cast<const __m256i*>(rows + i))));
  if (i < count) {
    const __mmask16 k = __mmask16((1u << (count - i)) - 1);
    _mm512_mask_storeu_ps(d + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, rows + i)));
  }
  return d;
}

}  // namespace

void scaled_dots_f32__avx512(const float* q, int64_t nq, const float* keys, int64_t n,
                             int64_t width, float scale, float* scores, int64_t stride) {
  scaled_dots_chunks(q, nq, n, width, scale, scores, stride,
                     [&](int64_t t, int64_t) { return keys + t * width; });
}

void weighted_sums_f32__avx512(const float* p, int64_t nq, int64_t stride, const float* values,
                               int64_t pitch, int64_t n, int64_t width, float* out) {
  weighted_sums_chunks(p, nq, stride, pitch, n, width, out,
                       [&](int64_t t, int64_t) { return values + t * pitch; });
}

void scaled_dots_f16__avx512(const float* q, int64_t nq, const uint16_t* keys, int64_t n,
                             int64_t width, float scale, float* scores, int64_t stride) {
  scaled_dots_chunks(q, nq, n, width, scale, scores, stride,
                     [&](int64_t t, int64_t m) { return f16_rows(keys, t, m, width); });
}

void weighted_sums_f16__avx512(const float* p, int64_t nq, int64_t stride, const uint16_t* values,
                               int64_t n, int64_t width, float* out) {
  weighted_sums_chunks(p, nq, stride, width, n, width, out,
                       [&](int64_t t, int64_t m) { return f16_rows(values, t, m, width); });
}

float exp_sum_f32__avx512(float* x, int64_t n, float m, float sum0) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(x + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {
    const __mmask16 k = __mmask16((1u << (n - i)) - 1);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(vm, k, x + i), vm));
    _mm512_mask_storeu_ps(x + i, k, e);
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  return sum0 + _mm512_reduce_add_ps(acc);
}

}  // namespace moex::kernels
