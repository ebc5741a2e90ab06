// Quantized row dot products, the inner loop of every CPU expert kernel:
// out[r] = dot(dequant(W[e][r]), x) for MLX affine rows (bits 2,3,4,5,6,8; group 32/64/128;
// scales/biases f32/f16/bf16) and for the fp modes mxfp4, mxfp8, nvfp4 (docs/quant_formats.md).
// One variant per (format, instruction set), all listed in qdot_kernels().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/isa.h"
#include "kernels/moe_contract.h"
#include "kernels/precision.h"

namespace moex::kernels {

// A group whose largest |x| is below this (2^-96, about 1.3e-29) is quantized to zeros: its
// activation scale would be subnormal. So |x_i - x'_i| <= max(max|x_g| * x_step(),
// max|x_g| if max|x_g| < kTinyGroupMax).
inline constexpr double kTinyGroupMax = 0x1p-96;

// Computes out[r - row_begin] = dot(dequant(row r of expert `expert`), x) for r in [row_begin,
// row_end). `x` must have been prepared by the same kernel's prepare() for w->k and w->group_size.
// Rows are processed in blocks that share x loads; every row's value is independent of the block
// it falls in (tails repeat the last row), so results do not depend on how callers split rows.
struct QdotRowsArgs {
  const QuantWeightsView* w = nullptr;
  int64_t expert = 0;
  int64_t row_begin = 0, row_end = 0;
  const void* x = nullptr;
  float* out = nullptr;
};

// dot_rows for several prepared vectors at once: out[j][r - row_begin] for j < nx, each value
// bit-identical to dot_rows with x = x[j] (the same arithmetic; the weight rows are unpacked
// once for all vectors). nx is 1..kQdotMaxVectors.
inline constexpr int kQdotMaxVectors = 4;
struct QdotMultiArgs {
  const QuantWeightsView* w = nullptr;
  int64_t expert = 0;
  int64_t row_begin = 0, row_end = 0;
  const void* const* x = nullptr;
  float* const* out = nullptr;
  int nx = 0;
};

// One kernel variant. Preconditions (callers validate; kernels never throw): bits == this->bits,
// group size in {32, 64, 128}, k a positive multiple of the group size, sb dtype F32/F16/BF16.
struct QdotKernel {
  const char* name;  // "qdot_rows_q4__avx512vnni_standard": test id, benchmark id, log name
  Isa isa;
  int bits;
  // Int8 levels x is quantized to (kernels/precision.h; qdot_avx512.cc): each x_i is replaced
  // by x'_i with |x_i - x'_i| <= max|x in its group| * x_step(). 0: x is used in f32.
  int x_levels;
  // Bytes of one prepared vector of length k (a multiple of 64, so consecutive vectors stay
  // 64-byte aligned), and the preparation itself (dst 64-byte aligned, prepared_bytes long).
  size_t (*prepared_bytes)(int64_t k, int group_size);
  void (*prepare)(const float* x, int64_t k, int group_size, void* dst);
  void (*dot_rows)(const QdotRowsArgs& args);
  // Built with AVX-512 VBMI: runnable only where avx512_vbmi_active().
  bool needs_vbmi = false;
  quant::Mode mode = quant::Mode::kAffine;  // the format family it reads (with `bits`)
  // Several vectors per weight-row read (QdotMultiArgs); nullptr: callers loop dot_rows.
  void (*dot_rows_multi)(const QdotMultiArgs& args) = nullptr;

  bool quantizes_x() const { return x_levels > 0; }
  double x_step() const { return x_levels > 0 ? quantized_x_step(x_levels) : 0.0; }
};

// Runs a.nx vectors through kernel.dot_rows_multi, or dot_rows per vector where it has none.
void qdot_rows_multi(const QdotKernel& kernel, const QdotMultiArgs& a);

// Every compiled variant, scalar first; check isa_supported(kernel.isa) before running one.
const std::vector<QdotKernel>& qdot_kernels();
// The affine variant the public kernels use for `isa` and `bits` (bits must be valid) at
// `precision` (quantizing variants only; the others serve every tier). For kAvx512 without
// VBMI (avx512_vbmi_active() false) 3/5/6 bits get the AVX2 variant.
const QdotKernel& qdot_kernel(Isa isa, int bits, Precision precision = active_precision());
// The variant for w's format (its mode and bits) on `isa`: what every caller with a view uses.
const QdotKernel& qdot_kernel(Isa isa, const QuantWeightsView& w,
                              Precision precision = active_precision());
// The suffix naming a variant's instruction set: "_scalar", "__avx2", "__avx512vnni".
const char* isa_kernel_suffix(Isa isa);

// nullptr when `w` satisfies the kernels' preconditions, else a static description of the
// first violated one (for callers that turn it into a moex::Error naming the tensor).
const char* qdot_unsupported_reason(const QuantWeightsView& w);

// Prepared vectors for one kernel, in one 64-byte aligned allocation reused between calls.
class PreparedVectors {
 public:
  PreparedVectors() = default;
  PreparedVectors(const PreparedVectors&) = delete;
  PreparedVectors& operator=(const PreparedVectors&) = delete;
  ~PreparedVectors();

  // Prepares vectors i in [0, n): x + i * x_stride, each of length k; threaded when n > 1
  // and `threaded` (pass false inside a parallel region).
  void prepare(const QdotKernel& kernel, const float* x, int64_t n, int64_t x_stride, int64_t k,
               int group_size, bool threaded = true);
  const void* at(int64_t i) const { return buf_ + size_t(i) * stride_; }

 private:
  unsigned char* buf_ = nullptr;
  size_t capacity_ = 0, stride_ = 0;
};

}  // namespace moex::kernels
