// The process-wide activation precision tier of the quantizing kernels.
#include "kernels/precision.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/isa.h"

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

}  // namespace moex::kernels
