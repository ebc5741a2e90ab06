// Names and validity of the quantization formats (format.h).
#include "quant/format.h"

namespace moex::quant {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kAffine: return "affine";
    case Mode::kMxfp4: return "mxfp4";
    case Mode::kMxfp8: return "mxfp8";
    case Mode::kNvfp4: return "nvfp4";
    case Mode::kFloat: return "float";
  }
  return "?";
}

std::optional<Mode> mode_from_name(std::string_view name) {
  for (Mode m : {Mode::kAffine, Mode::kMxfp4, Mode::kMxfp8, Mode::kNvfp4})
    if (name == mode_name(m)) return m;
  return std::nullopt;
}

const char* format_unsupported_reason(const Format& f) {
  if (f.mode == Mode::kFloat) {
    if (!is_float_dtype(f.scale_dtype)) return "unquantized weights must be F32, F16 or BF16";
    if (f.bits != int(dtype_size(f.scale_dtype)) * 8) return "unquantized bits must be the dtype's width";
    if (f.group_size != 0) return "unquantized weights have no groups (group_size 0)";
    return nullptr;
  }
  if (f.mode == Mode::kAffine) {
    if (!is_valid_bits(f.bits)) return "affine bits must be one of 2, 3, 4, 5, 6, 8";
    if (!is_valid_group_size(f.group_size)) return "affine group_size must be 32, 64 or 128";
    if (!is_float_dtype(f.scale_dtype)) return "affine scales and biases must be F32, F16 or BF16";
    return nullptr;
  }
  if (f.mode != Mode::kMxfp4 && f.mode != Mode::kMxfp8 && f.mode != Mode::kNvfp4)
    return "unknown quantization mode";
  if (f.bits != fp_mode_bits(f.mode))
    return f.mode == Mode::kMxfp8 ? "mxfp8 needs bits 8" : "mxfp4 and nvfp4 need bits 4";
  if (f.group_size != fp_mode_group_size(f.mode))
    return f.mode == Mode::kNvfp4 ? "nvfp4 needs group_size 16" : "mxfp4 and mxfp8 need group_size 32";
  if (f.scale_dtype != DType::U8) return "mxfp4, mxfp8 and nvfp4 scales must be U8 codes";
  return nullptr;
}

}  // namespace moex::quant
