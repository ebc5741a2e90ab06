// mx.quantize (affine) re-implemented bit for bit: per-group edge-anchored scale/bias in f32,
// half-to-even rounding, LSB-first packing, scales/biases rounded to the input dtype.
// Built with -ffp-contract=off: the order and rounding of every f32 operation matters.
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "quant/mlx_round.h"

namespace moex::quant {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 40;

struct GroupParams {
  float scale, bias;
};

// The scale/bias of one group, in the exact sequence of f32 operations MLX's CPU quantizer
// uses (std::max/std::min argument order included: it decides how NaN inputs propagate).
GroupParams group_params(const float* x, int n, float n_bins) {
  const float eps = static_cast<float>(1e-7);
  float w_min = std::numeric_limits<float>::infinity();
  float w_max = -w_min;
  for (int j = 0; j < n; ++j) {
    w_max = std::max(w_max, x[j]);
    w_min = std::min(w_min, x[j]);
  }
  const bool mask = std::abs(w_min) > std::abs(w_max);
  float scale = std::max((w_max - w_min) / n_bins, eps);
  scale = mask ? scale : -scale;
  const float edge = mask ? w_min : w_max;
  const float q0 = std::rint(edge / scale);
  float bias = 0.f;
  if (q0 != 0.f) {
    scale = edge / q0;
    bias = edge;
  }
  return {scale, bias};
}

inline uint32_t quantize_one(float x, GroupParams p, float n_bins) {
  float v = std::rint((x - p.bias) / p.scale);
  v = std::min(std::max(v, 0.0f), n_bins);
  // NaN input: v stays NaN through max/min; MLX's cast of NaN is undefined, moex stores 0.
  return v == v ? static_cast<uint32_t>(v) : 0u;
}

void widen_row(const void* data, DType t, int64_t offset, int64_t k, float* out) {
  switch (t) {
    case DType::F32:
      std::memcpy(out, static_cast<const float*>(data) + offset, size_t(k) * sizeof(float));
      break;
    case DType::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(data) + offset;
      for (int64_t i = 0; i < k; ++i) out[i] = bf16_to_f32(p[i]);
      break;
    }
    default: {
      const uint16_t* p = static_cast<const uint16_t*>(data) + offset;
      for (int64_t i = 0; i < k; ++i) out[i] = f16_to_f32(p[i]);
      break;
    }
  }
}

// Appends `bits`-wide values to a little-endian LSB-first bit stream held in 32-bit words.
struct BitWriter {
  uint32_t* out;
  uint64_t acc = 0;
  int nbits = 0;
  void put(uint32_t q, int bits) {
    acc |= uint64_t(q) << nbits;
    nbits += bits;
    if (nbits >= 32) {
      *out++ = uint32_t(acc);
      acc >>= 32;
      nbits -= 32;
    }
  }
};

}  // namespace

void check_quantize_args(const QuantizeArgs& a) {
  if (is_fp_mode(a.mode)) {
    if (a.bits != fp_mode_bits(a.mode) || a.group_size != fp_mode_group_size(a.mode))
      fail("quantize: mode ", mode_name(a.mode), " needs bits=", fp_mode_bits(a.mode),
           " and group_size=", fp_mode_group_size(a.mode), ", got bits=", a.bits,
           " group_size=", a.group_size);
  } else if (!is_valid_bits(a.bits)) {
    fail("quantize: bits=", a.bits, " is not supported (expected 2, 3, 4, 5, 6 or 8)");
  } else if (!is_valid_group_size(a.group_size)) {
    fail("quantize: group_size=", a.group_size, " is not supported (expected 32, 64 or 128)");
  }
  if (a.k <= 0 || a.k % a.group_size != 0)
    fail("quantize: k=", a.k, " must be a positive multiple of group_size=", a.group_size);
  if (a.rows < 0) fail("quantize: rows=", a.rows, " must be >= 0");
  if (a.rows > 0 && a.k > kMaxElements / a.rows)
    fail("quantize: rows*k=", a.rows, "*", a.k, " is too large");
  if (!is_float_dtype(a.dtype))
    fail("quantize: dtype=", dtype_name(a.dtype), " is not supported (expected F32, F16 or BF16)");
  if (a.rows > 0 && a.data == nullptr) fail("quantize: data is null");
}

void quantize_into(const QuantizeArgs& a, uint32_t* packed, void* scales, void* biases) {
  check_quantize_args(a);
  if (is_fp_mode(a.mode)) {
    detail::fp_quantize_into(a, packed, static_cast<uint8_t*>(scales));
    return;
  }
  const int64_t groups = a.k / a.group_size;
  const int64_t words = packed_row_words(a.k, a.bits);
  const float n_bins = float((1 << a.bits) - 1);
  parallel_for(a.rows, [&](int64_t lo, int64_t hi) {
    std::vector<float> row(size_t(a.k));
    for (int64_t r = lo; r < hi; ++r) {
      widen_row(a.data, a.dtype, r * a.k, a.k, row.data());
      BitWriter bw{packed + r * words};
      for (int64_t g = 0; g < groups; ++g) {
        const float* x = row.data() + g * a.group_size;
        const GroupParams p = group_params(x, a.group_size, n_bins);
        for (int j = 0; j < a.group_size; ++j) bw.put(quantize_one(x[j], p, n_bins), a.bits);
        detail::mlx_store(scales, a.dtype, size_t(r * groups + g), p.scale);
        detail::mlx_store(biases, a.dtype, size_t(r * groups + g), p.bias);
      }
    }
  });
}

QuantizedMatrix quantize(const QuantizeArgs& a) {
  check_quantize_args(a);
  QuantizedMatrix m;
  m.sb_dtype = a.dtype;
  m.rows = a.rows;
  m.k = a.k;
  m.bits = a.bits;
  m.group_size = a.group_size;
  m.mode = a.mode;
  const size_t n_sb = size_t(a.rows * (a.k / a.group_size));
  m.packed.assign(size_t(a.rows * packed_row_words(a.k, a.bits)), 0u);
  if (is_fp_mode(a.mode)) {
    m.sb_dtype = DType::U8;
    m.scales.assign(n_sb, 0);
  } else {
    m.scales.assign(n_sb * dtype_size(a.dtype), 0);
    m.biases.assign(n_sb * dtype_size(a.dtype), 0);
  }
  quantize_into(a, m.packed.data(), m.scales.data(), m.biases.data());
  return m;
}

}  // namespace moex::quant
