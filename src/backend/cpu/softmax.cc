// Row reductions: max-subtracted softmax with f32 sums, argmax, SwiGLU.
#include "backend/cpu/softmax.h"

#include <limits>

namespace moex::ops {

namespace {
float row_max(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}
}  // namespace

namespace {

// softmax over x[0..n) and, when `sink` is given, one more logit that takes mass and has no
// output. Without a sink the sum starts at 0, so the arithmetic is plain softmax's.
void softmax_body(const kernels::VectorF32Ops& vec, float* x, int64_t n, const float* sink) {
  if (n <= 0) return;
  const float m = sink ? std::max(row_max(x, n), *sink) : row_max(x, n);
  if (!std::isfinite(m)) {  // all -inf (fully masked) or +inf present: spread uniformly over maxima
    int64_t cnt = sink && *sink == m;
    for (int64_t i = 0; i < n; ++i) cnt += (x[i] == m);
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] == m && cnt) ? 1.f / float(cnt) : 0.f;
    return;
  }
  const float sum = vec.exp_sum(x, n, m, sink ? std::exp(*sink - m) : 0.f);
  const float inv = 1.f / sum;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

void softmax(float* x, int64_t n) {
  softmax_body(kernels::vector_f32_ops(Isa::kScalar), x, n, nullptr);
}

void softmax_with_sink(float* x, int64_t n, float sink) {
  softmax_body(kernels::vector_f32_ops(Isa::kScalar), x, n, &sink);
}

void softmax(const kernels::VectorF32Ops& vec, float* x, int64_t n, const float* sink) {
  softmax_body(vec, x, n, sink);
}

void log_softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float m = row_max(x, n);
  if (!std::isfinite(m)) return;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(x[i] - m));
  const float lse = m + float(std::log(sum));
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] -= lse;
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  float bv = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > bv || (!found && x[i] == bv)) {
      bv = x[i];
      best = i;
      found = true;
    }
  }
  return best;
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}

}  // namespace moex::ops
