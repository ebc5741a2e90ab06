// Test and benchmark helpers for the kernels: random quantized experts (random packed bytes
// are valid rows), dequantization, a dense f32 reference of the MoE FFN, the fallback path
// composed from the separate ops, error bounds derived from the data, and norms.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/isa.h"
#include "core/parallel.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"

namespace moex::kernels::testing {

// One stacked projection with owned storage; view() points into it.
struct RandomQuant {
  std::vector<uint8_t> w, scales, biases;
  QuantWeightsView view;
};
// scales ~ N(0, 0.02), biases ~ N(0, 0.05), stored (rounded) in `sb`.
RandomQuant make_random_quant(int64_t experts, int64_t n, int64_t k, int bits, int group_size,
                              DType sb, uint64_t seed);
// Any format: affine as above; fp modes with random element codes (E4M3 NaN codes replaced by
// 448) and random scale codes of magnitude 2^-8..2^-3 (E8M0) or 0.002..0.03 (E4M3);
// kFloat with elements ~ N(0, 0.05) stored in the format's dtype; the ggml modes as
// make_random_ggml.
RandomQuant make_random_quant(int64_t experts, int64_t n, int64_t k, const quant::Format& f,
                              uint64_t seed);
// A ggml block mode (k a multiple of 256 for the K modes): random codes, scale codes over
// their whole range, F16 d (and dmin) drawn so that weights are about 0.02-0.05 in size.
RandomQuant make_random_ggml(int64_t experts, int64_t n, int64_t k, const quant::Format& f,
                             uint64_t seed);

struct RandomExperts {
  RandomQuant gate, up, down;
  MoeExpertsView view;
};
struct ExpertsSpec {
  int64_t experts = 8, din = 256, dff = 128;
  int gate_up_bits = 4, down_bits = 4, group_size = 64;
  DType sb = DType::BF16;
  Activation act = Activation::kSwiGLU;
  quant::Mode mode = quant::Mode::kAffine;  // an fp mode overrides bits, group size and sb;
                                            // kFloat: unquantized experts stored in sb
};
RandomExperts make_random_experts(const ExpertsSpec& spec, uint64_t seed);

std::vector<float> random_normal(int64_t n, float sigma, uint64_t seed);

// w = scale * q + bias (affine) or element * scale (fp modes) in f32 for row r of expert e.
std::vector<float> dequant_row(const QuantWeightsView& w, int64_t e, int64_t r);

// Bound on |kernel(row, x) - scalar reference(row, x)| for this kernel: f32 rounding of the
// factored sum, 1e-6 * sum (|s q_i| + |b|) |x_i|, plus, for kernels that quantize x, the
// activation quantization term sum_g |s_g| * sum_{i in g} q_i * max|x_g| * kern.x_step().
double qdot_error_bound(const QdotKernel& kern, const QuantWeightsView& w, int64_t e, int64_t r,
                        const float* x);

// Dense reference of one decode step: every weight dequantized to f32, dots and activation in
// double, the weighted sum in double.
std::vector<float> dense_moe_reference(const MoeExpertsView& ex, const float* x, const int32_t* ids,
                                       const float* scores, int top_k);

// Per-output bound on |kernel path - dense_moe_reference| for the row kernels and activation of
// the active ISA, propagated through the computation from the data (no fitted constant):
// gate/up rows err_u, err_g = qdot_error_bound (the kernels' own bound against the same f32
// dequantized dots); act moves by at most twice the largest change over the corners of
// [g +- err_g] x [u +- err_u] (first order: the corners carry the largest linear change; 2
// covers the curvature over a box of relative size ~1e-6) plus activation_error_bound; a down
// row then errs by sum_f |w_hf| * err_a_f + qdot_error_bound(down row, act); the score products
// and the ordered f32 K-sum add K * 2^-24 * sum_k |s_k y_kh| (Higham's gamma_K), and the
// reference's own rounding to f32 2^-24 |out_h|.
std::vector<double> dense_moe_error_bound(const MoeExpertsView& ex, const float* x,
                                          const int32_t* ids, const float* scores, int top_k);

// Bound on |act kernel(g, u) - activation_reference(g, u)| (elementwise_test's measured form: a
// few f32 roundings in exp, the division and the products, ~8 ulp, plus GeGLU's argument z
// rounded in f32, which moves sigmoid(z) by ~|z| ulp).
double activation_error_bound(Activation act, double g, double u);

// Where two float arrays differ bit for bit: how many values, the first index, the largest
// |a - b| (0 / -1 / 0 when identical).
struct BitDiff {
  int64_t count = 0, first = -1;
  double max_abs = 0;
};
BitDiff bit_diff(const float* a, const float* b, int64_t n);

// The instruction-set levels this CPU runs: each of supported_isas(), and AVX-512 once more
// with VBMI switched off where the CPU has it (the Cascade Lake kernels). set() makes it active.
struct IsaLevel {
  Isa isa;
  bool vbmi;
  std::string name() const;  // "scalar", "avx2", "avx512", "avx512_novbmi"
  void set() const;
};
std::vector<IsaLevel> isa_levels();

// The fallback path as MLX runs it: gather_qmm(gate), gather_qmm(up), apply_activation,
// gather_qmm(down), weighted_sum, each writing its intermediate (buffers reused across calls).
struct FallbackBuffers {
  std::vector<float> g, u, a, y;
  std::vector<int32_t> zeros;
};
void fallback_moe(const MoeExpertsView& ex, const float* x, const int32_t* ids, const float* scores,
                  int top_k, FallbackBuffers& buf, float* out);

// ||a - b|| / ||b||
double nrms(const float* a, const float* b, int64_t n);

// act(gate, up) in double from the textbook formulas (GeGLU with tanh, not the kernels'
// sigmoid form): the oracle of the activation kernels and of dense_moe_reference.
double activation_reference(Activation act, double g, double u);

// Restores the active instruction set, VBMI switch and thread count when a test scope ends.
struct IsaGuard {
  Isa saved = active_isa();
  bool vbmi = avx512_vbmi_active();
  int threads = num_threads();
  ~IsaGuard() {
    set_active_isa(saved);
    set_avx512_vbmi_enabled(vbmi);
    set_num_threads(threads);
  }
};

}  // namespace moex::kernels::testing
