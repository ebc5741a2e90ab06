// Shared by the device ops' tests (ops_math_test.cc on the CPU, cuda_ops_test.cc on the GPU):
// random data, test matrices in every format the device ops read, exact-sum inputs, and the
// unit of the derived tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "quant/quantize.h"
#include "quant/view.h"

namespace moex::cuda::ops::testing {

// Unit roundoff of f32 round-to-nearest: every rounded operation has relative error <= kU.
inline constexpr double kU = 1.0 / 16777216.0;  // 2^-24

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

inline std::vector<float> random_floats(int64_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(g);
  return v;
}

// Rows whose sums and sums of squares are exact in f32 in any order: multiples of 1/4 in
// [-2, 2] (squares are multiples of 1/16 below 4; with dim < 2^18 every partial sum fits 24
// bits), and each row's values come in +-pairs so its mean is exactly 0.
inline std::vector<float> exact_sum_rows(int64_t rows, int64_t dim, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<float> v(size_t(rows * dim), 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i + 1 < dim; i += 2) {
      const float x = float(d(g)) * 0.25f;
      v[size_t(r * dim + i)] = x;
      v[size_t(r * dim + i + 1)] = -x;
    }
  return v;
}

// A matrix [n][k] with its backing storage: affine (bits, group_size, scales of sb) or
// unquantized (bits == 0: elements of sb).
struct TestMatrix {
  quant::QuantizedMatrix q;
  std::vector<uint8_t> dense;
  quant::QuantMatrixView view;
};

inline std::vector<uint8_t> to_dtype(const std::vector<float>& f, DType t) {
  std::vector<uint8_t> out(f.size() * dtype_size(t));
  for (size_t i = 0; i < f.size(); ++i) {
    if (t == DType::F32) {
      __builtin_memcpy(out.data() + 4 * i, &f[i], 4);
    } else {
      const uint16_t h = t == DType::BF16 ? f32_to_bf16(f[i]) : f32_to_f16(f[i]);
      __builtin_memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

inline void make_matrix(TestMatrix& m, int64_t n, int64_t k, int bits, int group_size, DType sb,
                        uint64_t seed) {
  const std::vector<float> w = random_floats(n * k, seed, -0.1f, 0.1f);
  const std::vector<uint8_t> raw = to_dtype(w, sb);
  if (bits == 0) {
    m.dense = raw;
    m.view = quant::QuantMatrixView::dense(m.dense.data(), sb, n, k);
    return;
  }
  quant::QuantizeArgs a;
  a.data = raw.data();
  a.dtype = sb;
  a.rows = n;
  a.k = k;
  a.bits = bits;
  a.group_size = group_size;
  m.q = quant::quantize(a);
  m.view = m.q.view();
}

}  // namespace moex::cuda::ops::testing
