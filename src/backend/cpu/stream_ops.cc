// The residual-stream elementwise ops (see stream_ops.h).
#include "backend/cpu/stream_ops.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/softmax.h"

namespace moex::ops {

void add_scaled(float* x, const float* y, int64_t n, float scale) {
  if (scale == 1.f) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) x[i] += scale * y[i];
}

void scale_in_place(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void sigmoid_gate(float* x, const float* gate, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= 1.f / (1.f + std::exp(-gate[i]));
}

void divide_and_softcap(float* x, int64_t n, float divisor, float cap) {
  if (divisor != 1.f)
    for (int64_t i = 0; i < n; ++i) x[i] /= divisor;
  if (cap > 0)
    for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] / cap) * cap;
}

void query_temperature(const QueryTemperatureArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float t =
        std::log(std::floor(float(a.pos0 + r + 1) / a.floor_scale) + 1.f) * a.attn_scale + 1.f;
    float* qr = a.q + r * a.width;
    for (int64_t i = 0; i < a.width; ++i) qr[i] *= t;
  }
}

void copy_columns(const CopyColumnsArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t b = 0; b < a.blocks; ++b)
      std::copy_n(a.src + r * a.src_stride + b * a.src_block_stride, a.cols,
                  a.dst + r * a.dst_stride + b * a.dst_block_stride);
}

void delta_gates(const DeltaGatesArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t h = 0; h < a.heads; ++h) {
      float& g = a.a[r * a.heads + h];
      float& beta = a.b[r * a.heads + h];
      g = std::exp(a.neg_exp_a_log[h] * softplus(g + a.dt_bias[h]));
      beta = 1.f / (1.f + std::exp(-beta));
    }
}

void dt_softplus(const DtSoftplusArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t h = 0; h < a.heads; ++h)
      a.out[r * a.heads + h] = std::clamp(softplus(a.x[r * a.x_stride + h] + a.bias[h]), a.lo, a.hi);
}

void split_halves(const float* src, float* first, float* second, int64_t rows, int64_t half) {
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(src + r * 2 * half, half, first + r * half);
    std::copy_n(src + r * 2 * half + half, half, second + r * half);
  }
}

}  // namespace moex::ops
