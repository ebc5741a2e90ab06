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

int bits_index(int bits) {
  for (int i = 0; i < 6; ++i)
    if (quant::kValidBits[i] == bits) return i;
  return 2;  // precondition violated; 4 bits keeps the access in range
}

const QdotKernel* table_for(Isa isa) {
  int n = 0;
  switch (isa) {
    case Isa::kAvx512:
      return qdot_kernels_avx512(&n);
    case Isa::kAvx2:
      return qdot_kernels_avx2(&n);
    case Isa::kScalar:
      break;
  }
  return qdot_kernels_scalar(&n);
}

}  // namespace

const std::vector<QdotKernel>& qdot_kernels() {
  static const std::vector<QdotKernel> all = [] {
    std::vector<QdotKernel> v;
    for (auto get : {qdot_kernels_scalar, qdot_kernels_avx2, qdot_kernels_avx512}) {
      int n = 0;
      const QdotKernel* t = get(&n);
      v.insert(v.end(), t, t + n);
    }
    return v;
  }();
  return all;
}

const QdotKernel& qdot_kernel(Isa isa, int bits) { return table_for(isa)[bits_index(bits)]; }

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
  if (!quant::is_valid_bits(w.bits)) return "bits must be one of 2, 3, 4, 5, 6, 8";
  if (!quant::is_valid_group_size(w.group_size)) return "group_size must be 32, 64 or 128";
  if (w.k <= 0 || w.k % w.group_size != 0)
    return "the input dimension must be a positive multiple of group_size";
  if (w.n < 0 || w.experts < 0) return "negative expert or row count";
  if (w.sb_dtype != DType::F32 && w.sb_dtype != DType::F16 && w.sb_dtype != DType::BF16)
    return "scales and biases must be F32, F16 or BF16";
  if (w.w == nullptr || w.scales == nullptr || w.biases == nullptr)
    return "weights, scales and biases must all be present";
  return nullptr;
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
