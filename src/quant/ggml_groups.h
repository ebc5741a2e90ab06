// The per-group arithmetic of the ggml block modes (quant/format.h, docs/quant_formats.md):
// a group's scale and bias in the affine form the kernels use (w = scale * q + bias, each an
// exact f32 value), and a weight's value as ggml's dequantizers compute it (the definition
// quant::dequantize_row follows, bit for bit with gguf::dequantize).
// Internal linkage on purpose: this header is included by files built with different -m flags
// (the qdot kernels), and a merged inline copy could carry instructions of another ISA.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "quant/format.h"

namespace moex::quant {
namespace {

// One group of a ggml-mode row. scale * q is exact (an 11-bit half times an 8-bit code, then
// times a code of at most 8 bits: at most 24 significant bits except kGgmlKZero's 6-bit
// codes, see ggml_value), and so is bias: -z * scale (z a power of two) or -(dmin * m).
struct GgmlGroup {
  float scale = 0.f;  // d (kGgmlQ0) or d * sc
  float bias = 0.f;   // -z * scale, or -(dmin * m) for kGgmlKMin
  float min = 0.f;    // dmin * m (kGgmlKMin), as ggml subtracts it
  int zero = 0;       // z = 2^(bits-1) for the zero-point modes, 0 for kGgmlKMin
};

struct HalfToF32 {
  float operator()(uint16_t h) const { return f16_to_f32(h); }
};

// Group g of a row whose scale blob starts at `blob` (k elements, format f); `half` widens an
// F16 bit pattern (a SIMD file passes its own instruction).
template <typename Half = HalfToF32>
inline GgmlGroup ggml_group(const Format& f, const uint8_t* blob, int64_t k, int64_t g,
                            Half half = {}) {
  auto ggml_half_at = [&](const uint8_t* p, int64_t i) {
    return half(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
  };
  GgmlGroup out;
  const int64_t groups = k / f.group_size;
  const int64_t super = g * f.group_size / kGgmlSuperBlock, supers = k / kGgmlSuperBlock;
  switch (f.mode) {
    case Mode::kGgmlQ0:
      out.zero = 1 << (f.bits - 1);
      out.scale = ggml_half_at(blob, g);
      out.bias = float(-out.zero) * out.scale;
      break;
    case Mode::kGgmlKMin: {
      const uint8_t* halves = blob + 2 * groups;
      out.scale = ggml_half_at(halves, super) * float(blob[g]);
      out.min = ggml_half_at(halves, supers + super) * float(blob[groups + g]);
      // A NaN min keeps its sign, as ggml's `x - min` propagates it (docs/gguf.md).
      out.bias = out.min != out.min ? out.min : -out.min;
      break;
    }
    default:  // kGgmlKZero
      out.zero = 1 << (f.bits - 1);
      out.scale = ggml_half_at(blob + groups, super) * float(int8_t(blob[g]));
      out.bias = float(-out.zero) * out.scale;
      break;
  }
  return out;
}

// The value of code q in group `grp`, as ggml computes it: (d or d * sc) times the signed code,
// one rounding (kGgmlKZero's 6-bit case can exceed 24 bits); kGgmlKMin: d * sc * q - dmin * m.
inline float ggml_value(const GgmlGroup& grp, uint32_t q) {
  if (grp.zero == 0) return grp.scale * float(q) - grp.min;
  return grp.scale * float(int(q) - grp.zero);
}

}  // namespace
}  // namespace moex::quant
