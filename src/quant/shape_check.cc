// check_quant_shape: validation and inference of (bits, group_size) for one quantized
// checkpoint tensor; the rules are documented in shape_check.h.
#include "quant/shape_check.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "quant/format.h"

namespace moex::quant {
namespace {

constexpr int64_t kMaxDim = int64_t(1) << 40;
constexpr int64_t kMaxRows = int64_t(1) << 48;

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

void check_dims(std::string_view tensor, const char* part, const std::vector<int64_t>& s) {
  if (s.size() < 2)
    fail(tensor, ".", part, ": shape ", shape_str(s), " has rank ", s.size(),
         ", expected at least 2 (quantized matrices are [..., rows, cols])");
  for (int64_t d : s)
    if (d <= 0 || d > kMaxDim)
      fail(tensor, ".", part, ": shape ", shape_str(s), " has a dimension outside [1, 2^40]");
}

// (bits, group_size) pairs that satisfy words*32 == groups*group_size*bits with k % 32 == 0.
std::vector<std::pair<int, int>> candidates(int64_t words, int64_t groups) {
  std::vector<std::pair<int, int>> out;
  for (int b : kValidBits)
    for (int g : kValidGroupSizes)
      if (words * 32 == groups * g * b) out.emplace_back(b, g);
  return out;
}

bool fits(int64_t words, int64_t groups, int bits, int gs) {
  return words * 32 % bits == 0 && words * 32 / bits == groups * gs;
}

}  // namespace

namespace {

// The leading-dimension checks shared by every mode; fills words, groups, leading and rows.
QuantShape common_shape(const QuantShapeArgs& a) {
  const std::string_view t = a.tensor;
  check_dims(t, "weight", a.weight_shape);
  check_dims(t, "scales", a.scales_shape);
  const size_t nd = a.weight_shape.size();
  bool same_lead = a.scales_shape.size() == nd;
  for (size_t i = 0; same_lead && i + 1 < nd; ++i)
    same_lead = a.weight_shape[i] == a.scales_shape[i];
  if (!same_lead)
    fail(t, ": .weight shape ", shape_str(a.weight_shape), " and .scales shape ",
         shape_str(a.scales_shape), " differ outside the last dimension");
  QuantShape s;
  s.words = a.weight_shape.back();
  s.groups = a.scales_shape.back();
  s.leading.assign(a.weight_shape.begin(), a.weight_shape.end() - 1);
  s.rows = 1;
  for (int64_t d : s.leading) {
    if (s.rows > kMaxRows / d) fail(t, ".weight: shape ", shape_str(a.weight_shape), " is too large");
    s.rows *= d;
  }
  return s;
}

// mxfp4 / mxfp8 / nvfp4: U8 scale codes, no biases, the mode's own bits and group size.
QuantShape check_fp_shape(const QuantShapeArgs& a, Mode mode) {
  const std::string_view t = a.tensor;
  const char* name = mode_name(mode);
  const int bits = fp_mode_bits(mode), gs = fp_mode_group_size(mode);
  if (a.weight_dtype && *a.weight_dtype != DType::U32)
    fail(t, ".weight: dtype ", dtype_name(*a.weight_dtype), ", expected U32 (packed)");
  if (a.scales_dtype && *a.scales_dtype != DType::U8)
    fail(t, ".scales: dtype ", dtype_name(*a.scales_dtype), ", expected U8 (", name, " scale codes)");
  if (!a.biases_shape.empty() || a.biases_dtype)
    fail(t, ".biases: present, but ", name, " quantization has no biases");
  if (a.bits && *a.bits != bits)
    fail(t, ": bits=", *a.bits, " does not fit mode ", name, " (which has bits=", bits, ")");
  if (a.group_size && *a.group_size != gs)
    fail(t, ": group_size=", *a.group_size, " does not fit mode ", name,
         " (which has group_size=", gs, ")");
  QuantShape s = common_shape(a);
  if (!fits(s.words, s.groups, bits, gs))
    fail(t, ": .weight ", shape_str(a.weight_shape), " and .scales ", shape_str(a.scales_shape),
         " do not match ", name, " (expected words*32/", bits, " == groups*", gs, ")");
  s.mode = mode;
  s.bits = bits;
  s.group_size = gs;
  s.k = s.groups * gs;
  s.inferred = !(a.bits && a.group_size);
  if (a.k && *a.k != s.k)
    fail(t, ": .weight ", shape_str(a.weight_shape), " in ", name, " gives k=", s.k,
         ", but the model expects k=", *a.k);
  return s;
}

// The ggml block modes (GGUF weights in moex's layout, quant/format.h): bits and group size
// given, U32 codes, one scale blob per row (F16 d for ggml_q0, bytes for the K modes), no
// biases; k follows from the codes and must fit the mode.
QuantShape check_ggml_shape(const QuantShapeArgs& a, Mode mode) {
  const std::string_view t = a.tensor;
  const char* name = mode_name(mode);
  if (!a.bits || !a.group_size)
    fail(t, ": mode ", name, " needs bits and group_size in the quantization section");
  const Format f = Format::ggml(mode, *a.bits, *a.group_size);
  if (const char* why = format_unsupported_reason(f))
    fail(t, ": ", why, " (got bits=", *a.bits, ", group_size=", *a.group_size, ")");
  if (a.weight_dtype && *a.weight_dtype != DType::U32)
    fail(t, ".weight: dtype ", dtype_name(*a.weight_dtype), ", expected U32 (packed)");
  if (a.scales_dtype && *a.scales_dtype != f.scale_dtype)
    fail(t, ".scales: dtype ", dtype_name(*a.scales_dtype), ", expected ",
         dtype_name(f.scale_dtype), " (", name, " scales)");
  if (!a.biases_shape.empty() || a.biases_dtype)
    fail(t, ".biases: present, but ", name, " quantization has no biases");
  QuantShape s = common_shape(a);
  if (s.words * 32 % f.bits != 0)
    fail(t, ": .weight ", shape_str(a.weight_shape), " is not a whole number of ", f.bits,
         "-bit codes");
  const int64_t k = s.words * 32 / f.bits;
  if (const char* why = format_unsupported_reason(f, k)) fail(t, ": k=", k, ": ", why);
  const int64_t cols = f.scale_row_bytes(k) / int64_t(dtype_size(f.scale_dtype));
  if (s.groups != cols)
    fail(t, ": .scales ", shape_str(a.scales_shape), " has ", s.groups, " columns, but ", name,
         " rows of k=", k, " need ", cols);
  if (a.k && *a.k != k)
    fail(t, ": .weight ", shape_str(a.weight_shape), " in ", name, " gives k=", k,
         ", but the model expects k=", *a.k);
  s.mode = mode;
  s.bits = f.bits;
  s.group_size = f.group_size;
  s.k = k;
  s.inferred = false;
  return s;
}

}  // namespace

QuantShape check_quant_shape(const QuantShapeArgs& a) {
  const std::string_view t = a.tensor;
  if (a.mode) {
    const std::optional<Mode> m = mode_from_name(*a.mode, true);
    if (!m)
      fail(t, ": quantization mode \"", *a.mode,
           "\" is not supported (expected affine, mxfp4, mxfp8 or nvfp4)");
    if (is_fp_mode(*m)) return check_fp_shape(a, *m);
    if (is_ggml_mode(*m)) return check_ggml_shape(a, *m);
  }
  if (a.weight_dtype && *a.weight_dtype != DType::U32)
    fail(t, ".weight: dtype ", dtype_name(*a.weight_dtype), ", expected U32 (packed)");
  if (a.scales_dtype && !is_float_dtype(*a.scales_dtype))
    fail(t, ".scales: dtype ", dtype_name(*a.scales_dtype), ", expected F32, F16 or BF16");
  if (a.biases_dtype && a.scales_dtype && *a.biases_dtype != *a.scales_dtype)
    fail(t, ".biases: dtype ", dtype_name(*a.biases_dtype), " differs from .scales dtype ",
         dtype_name(*a.scales_dtype));
  if (a.bits && !is_valid_bits(*a.bits))
    fail(t, ": bits=", *a.bits, " is not supported (expected 2, 3, 4, 5, 6 or 8)");
  if (a.group_size && !is_valid_group_size(*a.group_size))
    fail(t, ": group_size=", *a.group_size, " is not supported (expected 32, 64 or 128)");
  if (a.biases_shape.empty())
    fail(t, ".biases: missing (affine quantization needs scales and biases)");

  QuantShape s = common_shape(a);
  check_dims(t, "biases", a.biases_shape);
  if (a.biases_shape != a.scales_shape)
    fail(t, ".biases: shape ", shape_str(a.biases_shape), " differs from .scales shape ",
         shape_str(a.scales_shape));
  const std::string pair_desc = str_cat(".weight ", shape_str(a.weight_shape), " (", s.words,
                                        " words/row) and .scales ", shape_str(a.scales_shape),
                                        " (", s.groups, " groups/row)");
  if (a.k && (*a.k <= 0 || *a.k % 32 != 0))
    fail(t, ": k=", *a.k, " must be a positive multiple of 32");

  int bits = a.bits.value_or(0), gs = a.group_size.value_or(0);
  if (a.bits && a.group_size) {
    // both given: only validate
  } else if (a.bits) {
    if (s.words * 32 % bits != 0 || (s.words * 32 / bits) % s.groups != 0)
      fail(t, ": ", pair_desc, " do not fit bits=", bits, " with any group size");
    gs = int(std::min<int64_t>(s.words * 32 / bits / s.groups, 1 << 20));
    if (!is_valid_group_size(gs))
      fail(t, ": ", pair_desc, " with bits=", bits, " imply group_size=",
           s.words * 32 / bits / s.groups, ", expected 32, 64 or 128");
  } else if (a.group_size) {
    const int64_t k = s.groups * gs;
    if (s.words * 32 % k != 0 || !is_valid_bits(int(s.words * 32 / k)))
      fail(t, ": ", pair_desc, " with group_size=", gs, " imply k=", k,
           " and bits=", double(s.words) * 32 / double(k), ", expected 2, 3, 4, 5, 6 or 8");
    bits = int(s.words * 32 / k);
  } else if (a.k) {
    const int64_t k = *a.k;
    if (s.words * 32 % k != 0 || !is_valid_bits(int(std::min<int64_t>(s.words * 32 / k, 64))))
      fail(t, ": ", pair_desc, " with k=", k, " imply bits=", double(s.words) * 32 / double(k),
           ", expected 2, 3, 4, 5, 6 or 8");
    if (k % s.groups != 0 || !is_valid_group_size(int(std::min<int64_t>(k / s.groups, 1 << 20))))
      fail(t, ": ", pair_desc, " with k=", k, " imply group_size=",
           double(k) / double(s.groups), ", expected 32, 64 or 128");
    bits = int(s.words * 32 / k);
    gs = int(k / s.groups);
  } else if (fits(s.words, s.groups, 4, 64)) {
    bits = 4;
    gs = 64;
  } else {
    const auto c = candidates(s.words, s.groups);
    if (c.empty())
      fail(t, ": ", pair_desc, " fit no bits in {2,3,4,5,6,8} with group_size in {32,64,128}");
    if (c.size() > 1) {
      std::string list;
      for (auto [b, g] : c) list += str_cat(list.empty() ? "" : ", ", "bits=", b, "/group_size=", g);
      fail(t, ": ", pair_desc, " are ambiguous (", list,
           "); set bits and group_size in config.json \"quantization\"");
    }
    bits = c[0].first;
    gs = c[0].second;
  }
  s.inferred = !(a.bits && a.group_size);

  if (!fits(s.words, s.groups, bits, gs))
    fail(t, ": ", pair_desc, " do not match bits=", bits, " and group_size=", gs,
         " (expected words*32/bits == groups*group_size)");
  s.bits = bits;
  s.group_size = gs;
  s.k = s.groups * gs;
  if (a.k && *a.k != s.k)
    fail(t, ": ", pair_desc, " with bits=", bits, ", group_size=", gs, " give k=", s.k,
         ", but the model expects k=", *a.k);
  return s;
}

std::optional<Format> infer_packed_format(const std::vector<int64_t>& weight_shape,
                                          const std::vector<int64_t>& scales_shape,
                                          DType scales_dtype, int64_t k) {
  if (weight_shape.empty() || scales_shape.empty() || k <= 0) return std::nullopt;
  const int64_t words = weight_shape.back(), groups = scales_shape.back();
  if (groups <= 0 || k % groups != 0 || words <= 0 || words > k || (words * 32) % k != 0)
    return std::nullopt;
  const int bits = int(words * 32 / k), group_size = int(k / groups);
  Format f = Format::affine(bits, group_size, scales_dtype);
  if (scales_dtype == DType::U8) {
    const std::optional<Mode> fp = fp_mode_for(bits, group_size);
    if (!fp) return std::nullopt;
    f = Format::fp(*fp);
  }
  if (format_unsupported_reason(f)) return std::nullopt;
  return f;
}

}  // namespace moex::quant
