// Weight matrices on the device (DeviceMatrix: upload of affine or unquantized rows) and the
// embedding lookup: one thread per output value, op_math's packed_value / affine_value over
// the {scale, bias} pairs as the MoE kernels store them (quant_dot.cuh).
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"
#include "backend/cuda/quant_dot.cuh"

namespace moex::cuda::ops {
namespace {

constexpr int kEmbedThreads = 256;

__global__ void __launch_bounds__(kEmbedThreads)
    embedding_kernel(DeviceMatrixView t, const int32_t* __restrict__ tokens, float* out) {
  const int64_t j = blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
  if (j >= t.k) return;
  const int64_t tok = tokens[blockIdx.x];
  float* o = out + blockIdx.x * t.k;
  if (tok < 0 || tok >= t.n) {
    o[j] = NAN;
    return;
  }
  if (t.q.w != nullptr) {  // affine (DeviceMatrixView::quantized is host code)
    const detail::RowRef r = detail::row_ref(t.q, 0, tok);
    const int unit = int(j / detail::kUnit);
    const float2 sb = detail::decode_scale_bias(detail::load_scale_bias(r, unit), r.sb_kind);
    o[j] = math::affine_value(math::packed_value(r.w, j, t.q.bits), sb.x, sb.y);
    return;
  }
  const int64_t e = tok * t.k + j;
  if (t.dense_dtype == DType::F32)
    o[j] = static_cast<const float*>(t.dense)[e];
  else if (t.dense_dtype == DType::BF16)
    o[j] = math::bf16_value(static_cast<const uint16_t*>(t.dense)[e]);
  else
    o[j] = math::f16_value(static_cast<const uint16_t*>(t.dense)[e]);
}

}  // namespace

DeviceMatrix DeviceMatrix::upload(const quant::QuantMatrixView& m, const std::string& name) {
  return upload_stack(kernels::QuantWeightsView::one_expert(m), name);
}

DeviceMatrix DeviceMatrix::upload_stack(const kernels::QuantWeightsView& v,
                                        const std::string& name) {
  DeviceMatrix d;
  d.view_.n = v.n;
  d.view_.k = v.k;
  d.view_.groups = v.experts;
  if (v.mode == quant::Mode::kAffine) {
    d.affine_ = DeviceProjection::upload(v, name.c_str());  // validates as the MoE upload
    d.view_.q = d.affine_.view();
    return d;
  }
  if (v.mode != quant::Mode::kFloat)
    fail("cuda DeviceMatrix::upload: '", name, "' is ", quant::mode_name(v.mode),
         "; the device ops read MLX affine or unquantized F32/F16/BF16 matrices");
  if (v.sb_dtype != DType::F32 && v.sb_dtype != DType::F16 && v.sb_dtype != DType::BF16)
    fail("cuda DeviceMatrix::upload: '", name, "' has elements of ", dtype_name(v.sb_dtype),
         "; expected F32, F16 or BF16");
  if (!v.w || v.experts < 1 || v.n < 1 || v.k < 1)
    fail("cuda DeviceMatrix::upload: '", name, "' has shape [", v.experts, "][", v.n, "][", v.k,
         "] or a null data pointer");
  const size_t bytes = size_t(v.experts) * size_t(v.n) * size_t(v.k) * dtype_size(v.sb_dtype);
  d.dense_ = DeviceBuffer(bytes);
  d.dense_.upload(v.w, bytes);
  d.view_.dense = d.dense_.data();
  d.view_.dense_dtype = v.sb_dtype;
  return d;
}

void embedding_rows(const DeviceMatrixView& table, const int32_t* tokens, int64_t n, float* out) {
  if (!tokens || !out || (!table.quantized() && !table.dense))
    fail("cuda embedding_rows: null table, tokens or out");
  if (table.groups != 1) fail("cuda embedding_rows: a stack of ", table.groups, " matrices");
  if (n < 0 || n > (int64_t{1} << 31) - 1 || table.k < 1)
    fail("cuda embedding_rows: ", n, " tokens of a table with k = ", table.k);
  if (n == 0) return;
  const dim3 grid(unsigned(n), unsigned((table.k + kEmbedThreads - 1) / kEmbedThreads));
  embedding_kernel<<<grid, kEmbedThreads>>>(table, tokens, out);
  MOEX_CUDA_CHECK_LAUNCH("embedding_rows");
}

}  // namespace moex::cuda::ops
