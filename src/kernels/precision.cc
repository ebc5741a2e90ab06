// The process-wide activation precision tier of the quantizing kernels.
#include "kernels/precision.h"

#include <algorithm>
#include <atomic>
#include <cmath>
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
  return active_isa() == Isa::kAvx512 ? precision_name(active_precision()) : "f32";
}

void round_to_levels(const float* x, int64_t k, int group_size, int levels, float* out) {
  for (int64_t g0 = 0; g0 < k; g0 += group_size) {
    float m = 0.f;
    for (int64_t i = g0; i < g0 + group_size; ++i) m = std::max(m, std::fabs(x[i]));
    const float c = m >= float(kTinyGroupMax) ? m * float(quantized_x_step(levels)) : 0.f;
    const float inv_c = c > 0.f ? 1.f / c : 0.f;
    for (int64_t i = g0; i < g0 + group_size; ++i) {
      float a[3] = {0.f, 0.f, 0.f}, rem = x[i];
      for (int l = 0; l < levels; ++l) {
        const float mult = float(1 << (8 * (levels - 1 - l)));
        a[l] = std::nearbyint(rem * (inv_c * (1.f / mult)));  // ties to even, as vroundps
        rem = std::fma(-a[l], c * mult, rem);                 // vfnmadd: one rounding
      }
      for (int l = levels - 1; l > 0; --l) {
        if (a[l] > 127.f) a[l] -= 256.f, a[l - 1] += 1.f;
        if (a[l] < -128.f) a[l] += 256.f, a[l - 1] -= 1.f;
      }
      a[0] = std::clamp(a[0], -128.f, 127.f);
      double q = 0.0;  // an integer below 2^24: exact in double and in the f32 result's scale
      for (int l = 0; l < levels; ++l) q = q * 256.0 + a[l];
      out[i] = c > 0.f ? float(q * double(c)) : 0.f;
    }
  }
}

}  // namespace moex::kernels
