// linear() over float (F32, BF16, F16) and MLX-quantized weights, with and without bias,
// against double references on the (de)quantized values; embedding_row() exactness.
#include "backend/cpu/linear.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/isa.h"
#include "core/parallel.h"
#include "kernels/qdot.h"
#include "backend/cpu/test_util.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace moex::ops {
namespace {
using namespace optest;

// out_ref[t][r] = sum_i w[r][i] x[t][i] + b[r] in double; returns also sum |w||x| per output
// for the tolerance (f32 accumulation error <= k eps sum|w x|).
void reference(const std::vector<float>& w, const std::vector<float>& x, const float* bias,
               int64_t n, int64_t k, int64_t rows, std::vector<double>& out,
               std::vector<double>& mag) {
  out.assign(size_t(rows * n), 0.0);
  mag.assign(out.size(), 0.0);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t r = 0; r < n; ++r) {
      double s = bias ? bias[r] : 0.0, m = bias ? std::fabs(bias[r]) : 0.0;
      for (int64_t i = 0; i < k; ++i) {
        s += double(w[r * k + i]) * x[t * k + i];
        m += std::fabs(double(w[r * k + i]) * x[t * k + i]);
      }
      out[t * n + r] = s;
      mag[t * n + r] = m;
    }
}

// extra[i]: an additional absolute allowance (activation quantization of the kernel).
void expect_close(const std::vector<float>& got, const std::vector<double>& ref,
                  const std::vector<double>& mag, int64_t k, const std::vector<double>* extra = nullptr) {
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], ref[i], 2.0 * k * kEps * mag[i] + (extra ? (*extra)[i] : 0.0) + 1e-30)
        << "output " << i;
}

TEST(Linear, FloatWeightsInEachDtype) {
  const int64_t n = 37, k = 96, rows = 3;
  auto w = random_vec(n * k, 50);
  auto x = random_vec(rows * k, 51);
  auto b = random_vec(n, 52);
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    std::vector<uint8_t> raw(size_t(n * k) * dtype_size(dt));
    std::vector<float> wq(w.size());  // the values the op sees
    for (size_t i = 0; i < w.size(); ++i) {
      store_from_f32(raw.data(), dt, i, w[i]);
      wq[i] = load_as_f32(raw.data(), dt, i);
    }
    Linear lin{dense_matrix(raw.data(), dt, n, k), FloatVec(b.data(), DType::F32, n), "t"};
    std::vector<float> out(static_cast<size_t>(rows * n));
    linear({.lin = &lin, .x = x.data(), .rows = rows, .out = out.data()});
    std::vector<double> ref, mag;
    reference(wq, x, b.data(), n, k, rows, ref, mag);
    expect_close(out, ref, mag, k);
  }
}

TEST(Linear, QuantizedWeightsMatchTheirDequantizedValuesOnEveryIsa) {
  const int64_t n = 40, k = 256, rows = 2;
  auto w = random_vec(n * k, 53);
  auto x = random_vec(rows * k, 54);
  const Isa saved = active_isa();
  for (Isa isa : supported_isas())
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int gs : {32, 64, 128})
      for (DType sb : {DType::F32, DType::BF16}) {
        set_active_isa(isa);
        std::vector<uint8_t> src(size_t(n * k) * dtype_size(sb));
        for (size_t i = 0; i < w.size(); ++i) store_from_f32(src.data(), sb, i, w[i]);
        auto qm = quant::quantize({.data = src.data(), .dtype = sb, .rows = n, .k = k,
                                   .bits = bits, .group_size = gs});
        // The kernels' arithmetic: w = scale * q + bias unrounded (mx.dequantize rounds to the
        // scales' dtype, which only for F32 scales is the same value).
        std::vector<float> deq(size_t(n * k));
        std::vector<double> deq_mag(deq.size());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t i = 0; i < k; ++i) {
            const double q = quant::extract_q(qm.view().row(r), i, bits);
            const double sc = qm.scale(r, i / gs), bi = qm.bias(r, i / gs);
            deq[size_t(r * k + i)] = float(q * sc + bi);
            deq_mag[size_t(r * k + i)] = std::fabs(q * sc) + std::fabs(bi);
          }
        if (sb == DType::F32) {
          const auto mlx = quant::dequantize_f32(qm.view());
          for (size_t i = 0; i < deq.size(); ++i) ASSERT_NEAR(deq[i], mlx[i], 2 * kEps * deq_mag[i]);
        }
        auto bias = random_vec(n, 56);
        Linear lin{quantized_matrix(qm.view()), FloatVec(bias.data(), DType::F32, n), "q"};
        ASSERT_EQ(linear_unsupported_reason(lin.w), nullptr);
        std::vector<float> out(static_cast<size_t>(rows * n));
        linear({.lin = &lin, .x = x.data(), .rows = rows, .out = out.data()});
        std::vector<double> ref, mag;
        reference(deq, x, bias.data(), n, k, rows, ref, mag);
        // A kernel that quantizes x moves each x_i by at most max|x in its group| * x_step()
        // (kernels/qdot.h): the output moves by at most sum_i |w_i| * that.
        std::vector<double> extra(ref.size(), 0.0);
        const double x_step = kernels::qdot_kernel(isa, bits).x_step();
        if (x_step > 0)
          for (int64_t t = 0; t < rows; ++t)
            for (int64_t r = 0; r < n; ++r)
              for (int64_t i = 0; i < k; ++i) {
                double xmax = 0;
                for (int64_t j = i / gs * gs; j < (i / gs + 1) * gs; ++j)
                  xmax = std::max(xmax, double(std::fabs(x[t * k + j])));
                extra[t * n + r] += std::fabs(deq[r * k + i]) * xmax * x_step;
              }
        SCOPED_TRACE(::testing::Message() << isa_name(isa) << " bits " << bits << " gs " << gs
                                          << " sb " << dtype_name(sb));
        expect_close(out, ref, mag, k, &extra);
        // Embedding rows: scale * q + bias in f32 (two roundings at most).
        std::vector<float> row(static_cast<size_t>(k));
        embedding_row(lin.w, 7, row.data());
        for (int64_t i = 0; i < k; ++i)
          ASSERT_NEAR(row[i], deq[size_t(7 * k + i)], 2 * kEps * deq_mag[size_t(7 * k + i)]);
      }
  set_active_isa(saved);
}

// linear_same_input gives the same bits as one linear() per matrix: the fused single-row
// path (x prepared once per format; here two formats and a bias) at 1 and 2 threads, and the
// batch path, on every instruction set.
TEST(Linear, SameInputMatchesSeparateCallsBitForBit) {
  const int64_t k = 256;
  const Isa saved = active_isa();
  const int saved_threads = num_threads();
  struct Spec { int64_t n; int bits, gs; };
  const Spec specs[] = {{72, 4, 64}, {24, 4, 64}, {40, 6, 32}};
  std::vector<quant::QuantizedMatrix> qms;
  std::vector<Linear> lins;
  std::vector<std::vector<float>> biases;
  for (const Spec& s : specs) {
    auto w = random_vec(s.n * k, 60 + uint64_t(s.n));
    qms.push_back(quant::quantize({.data = w.data(), .dtype = DType::F32, .rows = s.n, .k = k,
                                   .bits = s.bits, .group_size = s.gs}));
    biases.push_back(random_vec(s.n, 70 + uint64_t(s.n)));
  }
  for (size_t i = 0; i < qms.size(); ++i)
    lins.push_back({quantized_matrix(qms[i].view()),
                    i == 2 ? FloatVec(biases[i].data(), DType::F32, specs[i].n) : FloatVec(),
                    "m" + std::to_string(i)});
  const Linear* ptrs[] = {&lins[0], &lins[1], &lins[2]};
  for (Isa isa : supported_isas())
    for (int threads : {1, 2})
      for (int64_t rows : {int64_t{1}, int64_t{3}}) {
        set_active_isa(isa);
        set_num_threads(threads);
        SCOPED_TRACE(std::string(isa_name(isa)) + " threads " + std::to_string(threads) +
                     " rows " + std::to_string(rows));
        const auto x = random_vec(rows * k, 80);
        std::vector<std::vector<float>> want(3), got(3);
        float* outs[3];
        for (int i = 0; i < 3; ++i) {
          want[size_t(i)].assign(size_t(rows * specs[i].n), 0.f);
          got[size_t(i)].assign(size_t(rows * specs[i].n), -1.f);
          linear({.lin = ptrs[i], .x = x.data(), .rows = rows, .out = want[size_t(i)].data()});
          outs[i] = got[size_t(i)].data();
        }
        linear_same_input(ptrs, outs, 3, x.data(), rows);
        for (int i = 0; i < 3; ++i)
          EXPECT_EQ(0, std::memcmp(want[size_t(i)].data(), got[size_t(i)].data(),
                                   want[size_t(i)].size() * 4))
              << "matrix " << i;
      }
  set_active_isa(saved);
  set_num_threads(saved_threads);
}

TEST(Linear, WeightBytesCountsScalesAndBiases) {
  auto w = random_vec(4 * 64, 55);
  auto qm = quant::quantize({.data = w.data(), .dtype = DType::F32, .rows = 4, .k = 64,
                             .bits = 4, .group_size = 32});
  // 4 rows x (32 packed bytes + 2 groups x 2 x 4 bytes)
  EXPECT_EQ(quantized_matrix(qm.view()).weight_bytes(), 4 * (32 + 16));
  EXPECT_EQ(dense_matrix(w.data(), DType::BF16, 4, 64).weight_bytes(), 4 * 64 * 2);
}

}  // namespace
}  // namespace moex::ops
