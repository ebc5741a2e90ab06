// RoPE frequency tables (one per variant, computed once) and the rotation itself.
#include "model/ops/rope.h"

#include <cmath>

#include "core/error.h"
#include "model/ops/parallel_work.h"

namespace moex::model::ops {

const char* rope_kind_name(RopeKind k) {
  switch (k) {
    case RopeKind::kDefault: return "default";
    case RopeKind::kLinear: return "linear";
    case RopeKind::kLlama3: return "llama3";
    case RopeKind::kLongrope: return "longrope";
  }
  return "?";
}

namespace {

// base^(2i/dims) in f32, as mlx-lm builds its `freqs` arrays.
std::vector<float> base_freqs(const RopeSpec& s) {
  std::vector<float> f(static_cast<size_t>(s.dims / 2));
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = float(std::pow(s.base, double(2 * i) / double(s.dims)));
  return f;
}

std::vector<float> llama3_freqs(const RopeSpec& s) {
  std::vector<float> f = base_freqs(s);
  const double orig = double(s.original_max_position);
  const double low_wavelen = orig / s.low_freq_factor;
  const double high_wavelen = orig / s.high_freq_factor;
  for (float& fr : f) {
    const double wavelen = 2.0 * M_PI * fr;
    double v = wavelen > low_wavelen ? fr * s.factor : fr;
    if (wavelen > high_wavelen && wavelen < low_wavelen) {
      const double smooth = (orig / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      v = fr / ((1.0 - smooth) / s.factor + smooth);
    }
    fr = float(v);
  }
  return f;
}

}  // namespace

Rope::Rope(const RopeSpec& spec) : spec_(spec) {
  const RopeSpec& s = spec_;
  if (s.dims <= 0 || s.dims % 2 != 0)
    fail("rope: rotated dims must be a positive even number, got ", s.dims);
  if (!(s.base > 0.0)) fail("rope: rope_theta must be positive, got ", s.base);
  const size_t half = size_t(s.dims / 2);
  std::vector<float> freqs;  // theta = pos / freqs[i]
  switch (s.kind) {
    case RopeKind::kDefault:
    case RopeKind::kLinear: {
      if (s.kind == RopeKind::kLinear && !(s.factor > 0.0))
        fail("rope: linear scaling factor must be positive, got ", s.factor);
      const double pscale = s.kind == RopeKind::kLinear ? 1.0 / s.factor : 1.0;
      inv_freqs_.resize(half);
      for (size_t i = 0; i < half; ++i)
        inv_freqs_[i] = float(pscale * std::pow(s.base, -double(2 * i) / double(s.dims)));
      return;
    }
    case RopeKind::kLlama3:
      // high == low (Llama-4 Scout) leaves no medium band, as in mlx-lm.
      if (!(s.factor > 0.0) || !(s.high_freq_factor >= s.low_freq_factor) ||
          !(s.low_freq_factor > 0.0) || s.original_max_position <= 0)
        fail("rope: llama3 scaling needs factor > 0, high_freq_factor >= low_freq_factor > 0 "
             "and original_max_position_embeddings > 0");
      freqs = llama3_freqs(s);
      break;
    case RopeKind::kLongrope: {
      if (s.long_factor.size() != half)
        fail("rope: longrope long_factor has ", s.long_factor.size(), " entries, expected ",
             half, " (rotated dims / 2)");
      if (!s.short_factor.empty() && s.short_factor.size() != half)
        fail("rope: longrope short_factor has ", s.short_factor.size(), " entries, expected ",
             half);
      if (s.original_max_position <= 0 || s.max_position <= 0)
        fail("rope: longrope needs positive max_position_embeddings and "
             "original_max_position_embeddings");
      freqs = base_freqs(s);
      for (size_t i = 0; i < half; ++i) freqs[i] = float(s.long_factor[i]) * freqs[i];
      const double f = double(s.max_position) / double(s.original_max_position);
      double scale = 1.0;
      if (s.long_mscale != 0.0)
        scale = s.long_mscale;
      else if (f > 1.0)
        scale = std::sqrt(1.0 + std::log(f) / std::log(double(s.original_max_position)));
      input_scale_ = float(scale);
      break;
    }
  }
  inv_freqs_.resize(half);
  for (size_t i = 0; i < half; ++i) {
    if (!(freqs[i] > 0.f) || !std::isfinite(freqs[i]))
      fail("rope: ", rope_kind_name(s.kind), " frequency ", i, " is not positive and finite");
    inv_freqs_[i] = 1.f / freqs[i];
  }
}

void Rope::apply(float* x, int64_t heads, int64_t head_dim, int64_t pos) const {
  const int64_t half = spec_.dims / 2;
  // Small stack buffers cover every real head_dim; larger ones fall back to the heap.
  float cs_stack[512];
  std::vector<float> cs_heap;
  float* cs = cs_stack;
  if (2 * half > 512) {
    cs_heap.resize(size_t(2 * half));
    cs = cs_heap.data();
  }
  float* cosv = cs;
  float* sinv = cs + half;
  for (int64_t i = 0; i < half; ++i) {
    const float theta = float(pos) * inv_freqs_[size_t(i)];
    cosv[i] = std::cos(theta);
    sinv[i] = std::sin(theta);
  }
  const float sc = input_scale_;
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_dim;
    if (spec_.traditional) {
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[2 * i] * sc, b = v[2 * i + 1] * sc;
        v[2 * i] = a * cosv[i] - b * sinv[i];
        v[2 * i + 1] = a * sinv[i] + b * cosv[i];
      }
    } else {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i] * sc, b = v[i + half] * sc;
        v[i] = a * cosv[i] - b * sinv[i];
        v[i + half] = a * sinv[i] + b * cosv[i];
      }
    }
  }
}

void Rope::apply_rows(float* x, int64_t rows, int64_t heads, int64_t head_dim,
                      int64_t pos0) const {
  parallel_for_work(rows, heads * head_dim * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) apply(x + r * heads * head_dim, heads, head_dim, pos0 + r);
  });
}

}  // namespace moex::model::ops
