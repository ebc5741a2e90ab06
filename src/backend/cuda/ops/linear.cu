// Linear layers on the device. Affine rows: the MoE kernels' warp loop (warp_rows.cuh, one
// warp per pair of rows, the input row staged in shared memory; blockIdx.x is the input row),
// the bias added to the finished dot product as ops::linear adds it. Unquantized F32 / F16 /
// BF16 rows: one warp per output row, each lane an FMA chain over elements lane, lane + 32, ...
// of the widened weights, then a butterfly sum.
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/bits_dispatch.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"
#include "backend/cuda/warp_rows.cuh"

namespace moex::cuda::ops {
namespace {

using detail::RowRef;

// The fallback gather_qmm's tiling (moe_decode.h kFallbackTiling): 4 warps of 2 items.
constexpr RowTiling kLinearTiling = kFallbackTiling;
constexpr int kDenseWarps = 8;

struct AffineParams {
  DeviceQuantWeights w;
  const float* bias;
  const float* x;
  float* out;
  int items, items_per_warp;
};

template <int B, int D>
__global__ void __launch_bounds__(detail::kMaxThreads, detail::kMinBlocks)
    linear_affine_kernel(AffineParams p) {
  extern __shared__ float4 smem4[];
  float* xs = reinterpret_cast<float*>(smem4);
  const int64_t xr = blockIdx.x, expert = xr % p.w.experts;  // multi_linear: x row (r, g)
  const int k = int(p.w.k), n = int(p.w.n);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int base = blockIdx.y * warps * p.items_per_warp;
  float* out = p.out + xr * n;
  // Item i is rows 2i and 2i+1; for odd n the last item repeats row n-1 and writes it once.
  auto row0 = [&](int i) { return 2 * (base + i * warps + warp); };
  detail::warp_rows<B, B, D>(
      detail::warp_item_count(base, warp, warps, p.items_per_warp, p.items), k / detail::kUnit,
      [&](int i, RowRef& r0, RowRef& r1) {
        r0 = detail::row_ref(p.w, expert, row0(i));
        r1 = detail::row_ref(p.w, expert, min(row0(i) + 1, n - 1));
      },
      [&] { detail::stage_vector(p.x + xr * k, k, xs); }, xs,
      [&](int i, float d0, float d1) {
        if (lane == 0) {
          const int r = row0(i);
          out[r] = p.bias ? math::add_rn(d0, p.bias[r]) : d0;
          if (r + 1 < n) out[r + 1] = p.bias ? math::add_rn(d1, p.bias[r + 1]) : d1;
        }
      });
}

struct DenseParams {
  const void* w;
  DType dtype;
  const float* bias;
  const float* x;
  float* out;
  int64_t n, k, groups;
};

__device__ inline float dense_element(const DenseParams& p, int64_t e) {
  if (p.dtype == DType::F32) return static_cast<const float*>(p.w)[e];
  const uint16_t h = static_cast<const uint16_t*>(p.w)[e];
  return p.dtype == DType::BF16 ? math::bf16_value(h) : math::f16_value(h);
}

__global__ void __launch_bounds__(kDenseWarps * 32) linear_dense_kernel(DenseParams p) {
  const int lane = threadIdx.x & 31;
  const int64_t row = blockIdx.x * int64_t(kDenseWarps) + (threadIdx.x >> 5);
  if (row >= p.n) return;  // no barriers below
  const float* x = p.x + blockIdx.y * p.k;
  const int64_t w0 = (blockIdx.y % p.groups * p.n + row) * p.k;  // matrix g = x row % groups
  float acc = 0.f;
  for (int64_t i = lane; i < p.k; i += 32) acc = __fmaf_rn(dense_element(p, w0 + i), x[i], acc);
  acc = detail::warp_sum(acc);
  if (lane == 0) p.out[blockIdx.y * p.n + row] = p.bias ? math::add_rn(acc, p.bias[row]) : acc;
}

using AffineKernel = void (*)(AffineParams);

// Both take x rows [a.rows][k] (multi_linear: a.rows = rows x groups, row b using matrix
// b % groups).
void linear_affine(const LinearArgs& a) {
  const DeviceQuantWeights& w = a.w->q;
  AffineParams p;
  p.w = w;
  p.bias = a.bias;
  p.x = a.x;
  p.out = a.out;
  p.items = int((w.n + 1) / 2);
  p.items_per_warp = kLinearTiling.items_per_warp;
  AffineKernel kernel = nullptr;
  detail::with_bits(w.bits, [&](auto b) {
    constexpr int kB = decltype(b)::value;
    detail::with_depth<kB, kB>(kLinearTiling.stages, [&](auto d) {
      kernel = linear_affine_kernel<kB, decltype(d)::value>;
    });
  });
  if (!kernel) fail("cuda linear: no kernel for bits ", w.bits);
  const size_t smem = size_t(detail::staged_floats(w.k)) * sizeof(float);
  detail::allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem,
                             "cuda linear (input row of k)");
  const int per_block = kLinearTiling.rows_per_block();
  const dim3 grid(unsigned(a.rows), unsigned((p.items + per_block - 1) / per_block));
  kernel<<<grid, kLinearTiling.warps_per_block * 32, smem>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("linear (affine)");
}

void linear_dense(const LinearArgs& a) {
  DenseParams p;
  p.w = a.w->dense;
  p.dtype = a.w->dense_dtype;
  p.bias = a.bias;
  p.x = a.x;
  p.out = a.out;
  p.n = a.w->n;
  p.k = a.w->k;
  p.groups = a.w->groups;
  const dim3 grid(unsigned((p.n + kDenseWarps - 1) / kDenseWarps), unsigned(a.rows));
  linear_dense_kernel<<<grid, kDenseWarps * 32>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("linear (dense)");
}

// x rows for the weights' groups: the kernels' grid (a block row per x row) allows 65535.
void check_and_run(const char* op, const LinearArgs& a) {
  if (!a.w || !a.x || !a.out || (!a.w->quantized() && !a.w->dense))
    fail("cuda ", op, ": null weights, x or out");
  if (a.rows < 0 || a.rows > 65535 || a.w->n < 1 || a.w->k < 1 || a.w->groups < 1 ||
      (a.w->quantized() && a.w->q.experts != a.w->groups))
    fail("cuda ", op, ": ", a.rows, " x rows (at most 65535) of ", a.w->groups, " matrices [",
         a.w->n, "][", a.w->k, "]");
  if (a.w->quantized() && reinterpret_cast<uintptr_t>(a.x) % 16 != 0)
    fail("cuda ", op, ": x must be 16-byte aligned for affine weights");
  if (a.rows == 0) return;
  if (a.w->quantized())
    linear_affine(a);
  else
    linear_dense(a);
}

}  // namespace

void linear(const LinearArgs& a) {
  if (a.w && a.w->groups != 1)
    fail("cuda linear: a stack of ", a.w->groups, " matrices; multi_linear runs stacks");
  check_and_run("linear", a);
}

void linear_same_input(const LinearArgs* parts, int count) {
  if (count > 0 && !parts) fail("cuda linear_same_input: null parts");
  for (int i = 1; i < count; ++i)
    if (parts[i].x != parts[0].x || parts[i].rows != parts[0].rows)
      fail("cuda linear_same_input: part ", i, " reads other rows than part 0");
  for (int i = 0; i < count; ++i) linear(parts[i]);
}

void multi_linear(const MultiLinearArgs& a) {
  if (!a.w || !a.x || !a.out) fail("cuda multi_linear: null weights, x or out");
  const int64_t groups = a.w->groups;
  if (a.rows < 0 || groups < 1 || groups > 65535)
    fail("cuda multi_linear: ", a.rows, " rows of ", groups, " groups (at most 65535)");
  // Launches of at most 65535 (row, group) pairs (a 512-row prefill of 128 heads has 65536).
  const int64_t per_call = 65535 / groups;
  for (int64_t r0 = 0; r0 < a.rows; r0 += per_call) {
    const int64_t rows = a.rows - r0 < per_call ? a.rows - r0 : per_call;
    LinearArgs part;  // no bias
    part.w = a.w;
    part.x = a.x + r0 * groups * a.w->k;
    part.rows = rows * groups;
    part.out = a.out + r0 * groups * a.w->n;
    check_and_run("multi_linear", part);
  }
}

}  // namespace moex::cuda::ops
