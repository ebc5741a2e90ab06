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
    case Mode::kGgmlQ0: return "ggml_q0";
    case Mode::kGgmlKMin: return "ggml_k_min";
    case Mode::kGgmlKZero: return "ggml_k_zero";
  }
  return "?";
}

std::optional<Mode> mode_from_name(std::string_view name, bool ggml) {
  for (Mode m : {Mode::kAffine, Mode::kMxfp4, Mode::kMxfp8, Mode::kNvfp4})
    if (name == mode_name(m)) return m;
  if (ggml)
    for (Mode m : {Mode::kGgmlQ0, Mode::kGgmlKMin, Mode::kGgmlKZero})
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
  if (is_ggml_mode(f.mode)) {
    if (f.mode == Mode::kGgmlQ0) {
      if (f.bits != 4 && f.bits != 5 && f.bits != 8) return "ggml_q0 bits must be 4, 5 or 8";
      if (f.group_size != 32) return "ggml_q0 needs group_size 32";
      if (f.scale_dtype != DType::F16) return "ggml_q0 scales must be F16";
      return nullptr;
    }
    if (f.mode == Mode::kGgmlKMin) {
      if (f.bits == 2 ? f.group_size != 16 : (f.bits != 4 && f.bits != 5) || f.group_size != 32)
        return "ggml_k_min needs bits 2 with group_size 16, or bits 4 or 5 with group_size 32";
    } else if (f.bits == 8 ? f.group_size != 32 : (f.bits != 3 && f.bits != 6) || f.group_size != 16) {
      return "ggml_k_zero needs bits 3 or 6 with group_size 16, or bits 8 with group_size 32";
    }
    if (f.scale_dtype != DType::U8) return "ggml K-mode scales must be U8 bytes";
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

const char* ggml_type_name(const Format& f) {
  static const char* const kQ0[] = {"q4_0", "q5_0", "q8_0"};
  static const char* const kK[] = {"q2_k", "q3_k", "q4_k", "q5_k", "q6_k"};
  if (format_unsupported_reason(f) != nullptr || !is_ggml_mode(f.mode)) return "?";
  if (f.mode == Mode::kGgmlQ0) return kQ0[f.bits == 4 ? 0 : f.bits == 5 ? 1 : 2];
  if (f.bits == 8) return "iq4_xs";  // kGgmlKZero's 8-bit member
  return kK[f.bits - 2];
}

const char* format_unsupported_reason(const Format& f, int64_t k) {
  if (const char* why = format_unsupported_reason(f)) return why;
  if (!f.quantized()) return k > 0 ? nullptr : "the row length must be positive";
  if (k <= 0 || k % f.group_size != 0)
    return "the row length must be a positive multiple of group_size";
  if ((f.mode == Mode::kGgmlKMin || f.mode == Mode::kGgmlKZero) && k % kGgmlSuperBlock != 0)
    return "ggml K-mode rows must be whole super-blocks of 256";
  return nullptr;
}

}  // namespace moex::quant
