// RoPE frequency tables (one per variant, computed once) and the rotation itself.
#include "backend/cpu/rope.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "backend/cpu/parallel_work.h"

namespace moex::ops {

const char* rope_kind_name(RopeKind k) {
  switch (k) {
    case RopeKind::kDefault: return "default";
    case RopeKind::kLinear: return "linear";
    case RopeKind::kLlama3: return "llama3";
    case RopeKind::kLongrope: return "longrope";
    case RopeKind::kYarn: return "yarn";
    case RopeKind::kDynamic: return "dynamic";
    case RopeKind::kProportional: return "proportional";
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

// mlx-lm's YarnRoPE._freqs: base frequencies (extrapolation) and factor times them
// (interpolation), blended by a linear ramp over the dims between the correction range.
std::vector<float> yarn_freqs(const RopeSpec& s) {
  const double dims = double(s.dims);
  auto correction_dim = [&](double rotations) {
    return dims * std::log(double(s.original_max_position) / (rotations * 2.0 * M_PI)) /
           (2.0 * std::log(s.base));
  };
  const double low = std::max(std::floor(correction_dim(s.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(s.beta_slow)), dims - 1.0);
  if (low == high) high += 0.001;  // as mlx-lm: no singular ramp
  std::vector<float> f = base_freqs(s);
  for (size_t i = 0; i < f.size(); ++i) {
    const float ramp = float(std::clamp((double(i) - low) / (high - low), 0.0, 1.0));
    const float mask = 1.f - ramp;
    const float extra = f[i], inter = float(s.factor) * extra;
    f[i] = (inter * extra) / (inter * mask + extra * (1.f - mask));
  }
  return f;
}

double yarn_mscale(double factor, double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; }

// base^(-2i/dims) for a given base, in f32 (default and dynamic kinds).
std::vector<float> plain_inv_freqs(const RopeSpec& s, double base, double pscale) {
  std::vector<float> inv(size_t(s.dims / 2));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = float(pscale * std::pow(base, -double(2 * i) / double(s.dims)));
  return inv;
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
    case RopeKind::kLinear:
    case RopeKind::kDynamic: {
      if (s.kind != RopeKind::kDefault && !(s.factor > 0.0))
        fail("rope: ", rope_kind_name(s.kind), " scaling factor must be positive, got ", s.factor);
      if (s.kind == RopeKind::kDynamic && (s.max_position <= 0 || s.dims <= 2))
        fail("rope: dynamic scaling needs max_position_embeddings > 0 and more than 2 rotated "
             "dims");
      inv_freqs_ = plain_inv_freqs(s, s.base, s.kind == RopeKind::kLinear ? 1.0 / s.factor : 1.0);
      return;
    }
    case RopeKind::kProportional: {
      if (s.rotated_dims < 0 || s.rotated_dims > s.dims || s.rotated_dims % 2 != 0)
        fail("rope: proportional rotated dims must be even and in [0, ", s.dims, "], got ",
             s.rotated_dims);
      if (!(s.factor > 0.0)) fail("rope: proportional factor must be positive, got ", s.factor);
      // mlx-lm: factor * base ** (arange(0, rotated, 2, f32) / dims), all in f32; mx.fast.rope
      // rotates by position / freq, and 1 / inf = 0 leaves the remaining pairs unrotated.
      inv_freqs_.assign(half, 0.f);
      const float fbase = float(s.base), fdims = float(s.dims), ffactor = float(s.factor);
      for (size_t i = 0; i < size_t(s.rotated_dims / 2); ++i) {
        const float freq = ffactor * std::pow(fbase, float(2 * i) / fdims);
        if (!(freq > 0.f) || !std::isfinite(freq))
          fail("rope: proportional frequency ", i, " is not positive and finite");
        inv_freqs_[i] = 1.f / freq;
      }
      return;
    }
    case RopeKind::kYarn:
      if (!(s.factor > 0.0) || s.original_max_position <= 0 || !(s.beta_fast > 0.0) ||
          !(s.beta_slow > 0.0))
        fail("rope: yarn scaling needs factor > 0, original_max_position_embeddings > 0 and "
             "positive beta_fast / beta_slow");
      freqs = yarn_freqs(s);
      input_scale_ = float(yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim));
      break;
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

std::vector<float> Rope::inv_freqs_for(int64_t call_end) const {
  const RopeSpec& s = spec_;
  if (s.kind != RopeKind::kDynamic || call_end <= s.max_position) return inv_freqs_;
  // mlx-lm's DynamicNTKScalingRoPE: base * (factor * len / max_pos - (factor - 1))^(d/(d-2)).
  const double len = double(call_end), maxp = double(s.max_position), d = double(s.dims);
  const double base = s.base * std::pow(s.factor * len / maxp - (s.factor - 1.0), d / (d - 2.0));
  return plain_inv_freqs(s, base, 1.0);
}

void Rope::apply(float* x, int64_t heads, int64_t head_dim, int64_t pos) const {
  apply_rows(x, 1, heads, head_dim, pos);
}

void Rope::rotate(float* x, int64_t heads, int64_t head_dim, int64_t pos, const float* inv) const {
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
    const float theta = float(pos) * inv[i];
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
  const bool scaled = spec_.kind == RopeKind::kDynamic && pos0 + rows > spec_.max_position;
  const std::vector<float> call_inv = scaled ? inv_freqs_for(pos0 + rows) : std::vector<float>();
  const float* inv = scaled ? call_inv.data() : inv_freqs_.data();
  parallel_for_work(rows, heads * head_dim * 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) rotate(x + r * heads * head_dim, heads, head_dim, pos0 + r, inv);
  });
}

}  // namespace moex::ops
