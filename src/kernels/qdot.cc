// The qdot kernel list and per-ISA selection, the shared precondition check, and the storage
// of prepared vectors.
#include "kernels/qdot.h"

#include <cstdlib>
#include <new>

#include "core/parallel.h"
#include "kernels/qdot_variants.h"
#include "quant/format.h"

namespace moex::kernels {
namespace {

// The entry for (mode, bits) in a table at `precision` (a variant that keeps x in f32 serves
// every tier), or nullptr.
const QdotKernel* find(const QdotKernel* (*table)(int*), quant::Mode mode, int bits,
                       Precision precision) {
  int n = 0;
  const QdotKernel* t = table(&n);
  for (int i = 0; i < n; ++i)
    if (t[i].mode == mode && t[i].bits == bits &&
        (t[i].x_levels == 0 || t[i].x_levels == static_cast<int>(precision)))
      return &t[i];
  return nullptr;
}
const QdotKernel* find_bits(const QdotKernel* (*table)(int*), int bits, Precision precision) {
  return find(table, quant::Mode::kAffine, bits, precision);
}

}  // namespace

const std::vector<QdotKernel>& qdot_kernels() {
  static const std::vector<QdotKernel> all = [] {
    std::vector<QdotKernel> v;
    for (auto get : {qdot_kernels_scalar, qdot_kernels_avx2, qdot_kernels_avx2_int8,
                     qdot_kernels_avx512_vbmi,
                     qdot_kernels_avx512_novbmi, qdot_fp_kernels_scalar, qdot_fp_kernels_avx2,
                     qdot_fp_kernels_avx512, qdot_float_kernels_scalar, qdot_float_kernels_avx2,
                     qdot_float_kernels_avx512, qdot_ggml_kernels_scalar, qdot_ggml_kernels_avx2,
                     qdot_ggml_kernels_avx2_int8}) {
      int n = 0;
      const QdotKernel* t = get(&n);
      v.insert(v.end(), t, t + n);
    }
    return v;
  }();
  return all;
}

const QdotKernel& qdot_kernel(Isa isa, int bits, Precision precision) {
  if (!quant::is_valid_bits(bits)) bits = 4;  // precondition violated; keep the access in range
  const QdotKernel* k = nullptr;
  switch (isa) {
    case Isa::kAvx512:
      k = avx512_vbmi_active() ? find_bits(qdot_kernels_avx512_vbmi, bits, precision)
                               : find_bits(qdot_kernels_avx512_novbmi, bits, precision);
      if (k) return *k;
      [[fallthrough]];  // a width the no-VBMI build lacks
    case Isa::kAvx2:  // 4 bits on the integer kernels at the tier, the other widths in f32
      if (const QdotKernel* i = find_bits(qdot_kernels_avx2_int8, bits, precision)) return *i;
      return *find_bits(qdot_kernels_avx2, bits, precision);
    case Isa::kScalar:
      break;
  }
  return *find_bits(qdot_kernels_scalar, bits, precision);
}

const QdotKernel& qdot_kernel(Isa isa, const QuantWeightsView& w, Precision precision) {
  if (w.mode == quant::Mode::kFloat) {
    const int bits = w.bits == 32 ? 32 : 16;  // 16: F16 or BF16 elements
    const auto table = isa == Isa::kAvx512 ? qdot_float_kernels_avx512
                       : isa == Isa::kAvx2 ? qdot_float_kernels_avx2
                                           : qdot_float_kernels_scalar;
    return *find(table, quant::Mode::kFloat, bits, precision);
  }
  if (quant::is_ggml_mode(w.mode)) {  // VNNI (2/4/8 bits without VBMI), else AVX2, else scalar
    const QdotKernel* k = nullptr;
    if (isa == Isa::kAvx512)
      k = avx512_vbmi_active() ? find(qdot_kernels_avx512_vbmi, w.mode, w.bits, precision)
                               : find(qdot_kernels_avx512_novbmi, w.mode, w.bits, precision);
    if (!k && isa != Isa::kScalar)  // 4 bits on AVX2's integer kernels, the rest in f32
      k = find(qdot_ggml_kernels_avx2_int8, w.mode, w.bits, precision);
    if (!k && isa != Isa::kScalar) k = find(qdot_ggml_kernels_avx2, w.mode, w.bits, precision);
    if (!k) k = find(qdot_ggml_kernels_scalar, w.mode, w.bits, precision);
    if (k) return *k;
    int n = 0;
    return qdot_ggml_kernels_scalar(&n)[0];  // a precondition violation; stay in range
  }
  if (!quant::is_fp_mode(w.mode)) return qdot_kernel(isa, w.bits, precision);
  const int bits = quant::fp_mode_bits(w.mode);
  if (isa == Isa::kAvx512) {  // E2M1 modes on the VNNI body, E4M3 elements in f32
    const QdotKernel* k =
        avx512_vbmi_active() ? find(qdot_kernels_avx512_vbmi, w.mode, bits, precision)
                             : find(qdot_kernels_avx512_novbmi, w.mode, bits, precision);
    if (!k) k = find(qdot_fp_kernels_avx512, w.mode, bits, precision);
    if (k) return *k;
  }
  const QdotKernel* k = find(isa == Isa::kScalar ? qdot_fp_kernels_scalar : qdot_fp_kernels_avx2,
                             w.mode, bits, precision);
  if (k) return *k;
  int n = 0;
  return qdot_fp_kernels_scalar(&n)[0];  // unknown mode: a precondition violation; stay in range
}

const char* isa_kernel_suffix(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "__avx512vnni";
    case Isa::kAvx2:
      return "__avx2";
    case Isa::kScalar:
      break;
  }
  return "_scalar";
}

const char* qdot_unsupported_reason(const QuantWeightsView& w) {
  if (const char* why = quant::format_unsupported_reason(w.format())) return why;
  if (quant::is_ggml_mode(w.mode))
    if (const char* why = quant::format_unsupported_reason(w.format(), w.k)) return why;
  const bool quantized = w.format().quantized();  // unquantized rows: no groups, no scales
  if (w.k <= 0) return "the input dimension must be positive";
  if (quantized && w.k % w.group_size != 0)
    return "the input dimension must be a multiple of group_size";
  if (w.n < 0 || w.experts < 0) return "negative expert or row count";
  if (w.w == nullptr) return "weights must be present";
  if (quantized && w.scales == nullptr) return "scales must be present";
  if (w.mode == quant::Mode::kAffine && w.biases == nullptr) return "affine biases must be present";
  return nullptr;
}

void qdot_rows_multi(const QdotKernel& kernel, const QdotMultiArgs& a) {
  if (kernel.dot_rows_multi) return kernel.dot_rows_multi(a);
  for (int j = 0; j < a.nx; ++j)
    kernel.dot_rows({a.w, a.expert, a.row_begin, a.row_end, a.x[j], a.out[j]});
}

PreparedVectors::~PreparedVectors() { ::operator delete[](buf_, std::align_val_t(64)); }

void PreparedVectors::prepare(const QdotKernel& kernel, const float* x, int64_t n, int64_t x_stride,
                              int64_t k, int group_size, bool threaded) {
  stride_ = kernel.prepared_bytes(k, group_size);
  const size_t need = stride_ * size_t(n > 0 ? n : 0);
  if (need > capacity_) {
    ::operator delete[](buf_, std::align_val_t(64));
    buf_ = nullptr;
    capacity_ = 0;
    buf_ = static_cast<unsigned char*>(::operator new[](need, std::align_val_t(64)));
    capacity_ = need;
  }
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      kernel.prepare(x + i * x_stride, k, group_size, buf_ + size_t(i) * stride_);
  };
  if (n > 1 && threaded)
    parallel_for(n, run);
  else
    run(0, n);
}

}  // namespace moex::kernels
