// GQA attention: one (row, head) pair is one unit of work; scores in f32, max-subtracted
// softmax, weighted sum of values.
#include "model/ops/attention.h"

#include <cmath>

#include "core/error.h"
#include "model/ops/parallel_work.h"
#include "model/ops/softmax.h"

namespace moex::model::ops {

KvCache::KvCache(int64_t kv_heads, int64_t head_dim, int64_t capacity)
    : kv_heads_(kv_heads), head_dim_(head_dim), capacity_(capacity) {
  k_.resize(size_t(capacity * kv_heads * head_dim));
  v_.resize(k_.size());
}

void KvCache::append(const float* k, const float* v, int64_t rows) {
  if (length_ + rows > capacity_)
    fail("context length exceeded: ", length_ + rows, " positions needed, the KV cache holds ",
         capacity_);
  const size_t n = size_t(rows * row_stride());
  std::copy(k, k + n, k_.begin() + offset(length_, 0));
  std::copy(v, v + n, v_.begin() + offset(length_, 0));
  length_ += rows;
}

void KvCache::truncate(int64_t length) {
  if (length < length_) length_ = length < 0 ? 0 : length;
}

namespace {

void attend_one(const AttentionArgs& a, int64_t r, int64_t h, float* scores) {
  const KvCache& c = *a.cache;
  const int64_t hd = c.head_dim();
  const int64_t group = a.heads / c.kv_heads();
  const int64_t kvh = h / group;
  const int64_t pos = a.pos0 + r;
  const int64_t first = a.chunk > 0 ? pos - pos % a.chunk : 0;  // keys first..pos
  const int64_t n = pos + 1 - first;
  const float* q = a.q + (r * a.heads + h) * hd;
  for (int64_t t = 0; t < n; ++t) {
    const float* k = c.key(first + t, kvh);
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < hd; ++i) s += q[i] * k[i];
    scores[t] = s * a.scale;
  }
  softmax(scores, n);
  float* o = a.out + (r * a.heads + h) * hd;
  for (int64_t i = 0; i < hd; ++i) o[i] = 0.f;
  for (int64_t t = 0; t < n; ++t) {
    const float* v = c.value(first + t, kvh);
    const float p = scores[t];
#pragma omp simd
    for (int64_t i = 0; i < hd; ++i) o[i] += p * v[i];
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  const KvCache& c = *a.cache;
  // Callers are engine code; shapes were validated at load, so a mismatch is a bug.
  if (a.heads % c.kv_heads() != 0 || a.pos0 + a.rows > c.length())
    fail("attention: ", a.heads, " heads over ", c.kv_heads(), " kv heads, rows up to ",
         a.pos0 + a.rows, " but the cache holds ", c.length());
  const int64_t units = a.rows * a.heads;
  const int64_t max_keys = a.pos0 + a.rows;
  parallel_for_work(units, max_keys * c.head_dim() * 2, [&](int64_t lo, int64_t hi) {
    std::vector<float> scores(static_cast<size_t>(max_keys));
    for (int64_t u = lo; u < hi; ++u) attend_one(a, u / a.heads, u % a.heads, scores.data());
  });
}

}  // namespace moex::model::ops
