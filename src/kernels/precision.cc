// The process-wide activation precision tier of the quantizing kernels.
#include "kernels/precision.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/isa.h"
#include "kernels/qdot.h"

namespace moex::kernels {
namespace {

std::atomic<int> g_precision{0};  // 0: not chosen yet

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFast:
      return "fast";
    case Precision::kStandard:
      return "standard";
    case Precision::kExact:
      break;
  }
  return "exact";
}

Precision parse_precision(std::string_view s, std::string_view what) {
  for (Precision p : {Precision::kFast, Precision::kStandard, Precision::kExact})
    if (s == precision_name(p)) return p;
  fail(what, ": '", std::string(s), "' is not a precision tier (expected fast, standard or exact)");
}

Precision active_precision() {
  const int v = g_precision.load(std::memory_order_relaxed);
  if (v > 0) return static_cast<Precision>(v);
  Precision p = kDefaultPrecision;
  if (const char* env = std::getenv("MOEX_PRECISION"))
    p = parse_precision(env, "environment variable MOEX_PRECISION");
  g_precision.store(static_cast<int>(p), std::memory_order_relaxed);
  return p;
}

void set_active_precision(Precision p) {
  g_precision.store(static_cast<int>(p), std::memory_order_relaxed);
}

const char* active_precision_label() {
  return active_isa() != Isa::kScalar ? precision_name(active_precision()) : "f32";
}

float quantize_group_levels(const float* x, int group_size, int levels, int8_t* const* a) {
  float m = 0.f;
  for (int i = 0; i < group_size; ++i) m = std::max(m, std::fabs(x[i]));
  const float c = m >= float(kTinyGroupMax) ? m * float(quantized_x_step(levels)) : 0.f;
  const float inv_c = c > 0.f ? 1.f / c : 0.f;
  for (int i = 0; i < group_size; ++i) {
    float v[3] = {0.f, 0.f, 0.f}, rem = x[i];
    for (int l = 0; l < levels; ++l) {
      const float mult = float(1 << (8 * (levels - 1 - l)));
      v[l] = std::nearbyint(rem * (inv_c * (1.f / mult)));  // ties to even, as vroundps
      rem = std::fma(-v[l], c * mult, rem);                 // vfnmadd: one rounding
    }
    for (int l = levels - 1; l > 0; --l) {
      if (v[l] > 127.f) v[l] -= 256.f, v[l - 1] += 1.f;
      if (v[l] < -128.f) v[l] += 256.f, v[l - 1] -= 1.f;
    }
    v[0] = std::clamp(v[0], -128.f, 127.f);
    // A NaN level (x NaN or infinite) becomes -128, as vcvtps2dq and the saturating narrowing
    // of the VNNI prepare make it.
    for (int l = 0; l < levels; ++l)
      a[l][i] = c > 0.f ? (std::isnan(v[l]) ? int8_t(-128) : int8_t(v[l])) : int8_t(0);
  }
  return c;
}

void round_to_levels(const float* x, int64_t k, int group_size, int levels, float* out) {
  std::vector<int8_t> lev(size_t(3 * group_size));
  int8_t* a[3] = {lev.data(), lev.data() + group_size, lev.data() + 2 * group_size};
  for (int64_t g0 = 0; g0 < k; g0 += group_size) {
    const float c = quantize_group_levels(x + g0, group_size, levels, a);
    for (int i = 0; i < group_size; ++i) {
      double q = 0.0;  // an integer below 2^24: exact in double and in the f32 result's scale
      for (int l = 0; l < levels; ++l) q = q * 256.0 + a[l][i];
      out[g0 + i] = c > 0.f ? float(q * double(c)) : 0.f;
    }
  }
}

}  // namespace moex::kernels
