// The residual stream's elementwise ops on the device (backend/cpu/stream_ops.h defines each):
// one thread per value, each value's float operations in the CPU loop's order with explicit
// round-to-nearest (no FMA contraction), so add, scale, divide and split give the CPU's bits;
// sigmoid and tanh use CUDA's expf and tanhf (within 2 ulp of the C library's).
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/device_ops.h"
#include "core/error.h"

namespace moex::cuda::ops {
namespace {

#define MOEX_GRID_LOOP(i, n)                                                   \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

__global__ void add_scaled_kernel(float* x, const float* y, int64_t n, float scale, bool plain) {
  MOEX_GRID_LOOP(i, n) x[i] = plain ? __fadd_rn(x[i], y[i]) : __fadd_rn(x[i], __fmul_rn(scale, y[i]));
}
__global__ void scale_kernel(float* x, int64_t n, float s) {
  MOEX_GRID_LOOP(i, n) x[i] = __fmul_rn(x[i], s);
}
__global__ void sigmoid_gate_kernel(float* x, const float* gate, int64_t n) {
  MOEX_GRID_LOOP(i, n) x[i] = __fmul_rn(x[i], __fdiv_rn(1.f, __fadd_rn(1.f, expf(-gate[i]))));
}
__global__ void divide_and_softcap_kernel(float* x, int64_t n, float divisor, float cap) {
  MOEX_GRID_LOOP(i, n) {
    float v = x[i];
    if (divisor != 1.f) v = __fdiv_rn(v, divisor);
    if (cap > 0) v = __fmul_rn(tanhf(__fdiv_rn(v, cap)), cap);
    x[i] = v;
  }
}
__global__ void query_temperature_kernel(float* q, int64_t rows, int64_t width, int64_t pos0,
                                         float floor_scale, float attn_scale) {
  MOEX_GRID_LOOP(i, rows * width) {
    const int64_t r = i / width;
    const float t = __fadd_rn(
        __fmul_rn(logf(__fadd_rn(floorf(__fdiv_rn(float(pos0 + r + 1), floor_scale)), 1.f)),
                  attn_scale),
        1.f);
    q[i] = __fmul_rn(q[i], t);
  }
}
__global__ void split_halves_kernel(const float* src, float* first, float* second, int64_t rows,
                                    int64_t half) {
  MOEX_GRID_LOOP(i, rows * half) {
    const int64_t r = i / half, j = i % half;
    first[i] = src[r * 2 * half + j];
    second[i] = src[r * 2 * half + half + j];
  }
}

__global__ void copy_columns_kernel(CopyColumnsArgs a) {
  MOEX_GRID_LOOP(i, a.rows * a.blocks * a.cols) {
    const int64_t c = i % a.cols, rb = i / a.cols, b = rb % a.blocks, r = rb / a.blocks;
    a.dst[r * a.dst_stride + b * a.dst_block_stride + c] =
        a.src[r * a.src_stride + b * a.src_block_stride + c];
  }
}
__global__ void delta_gates_kernel(DeltaGatesArgs a) {
  MOEX_GRID_LOOP(i, a.rows * a.heads) {
    const int64_t h = i % a.heads;
    const float v = __fadd_rn(a.a[i], a.dt_bias[h]);
    const float sp = __fadd_rn(fmaxf(v, 0.f), log1pf(expf(-fabsf(v))));
    a.a[i] = expf(__fmul_rn(a.neg_exp_a_log[h], sp));
    a.b[i] = __fdiv_rn(1.f, __fadd_rn(1.f, expf(-a.b[i])));
  }
}
__global__ void dt_softplus_kernel(DtSoftplusArgs a) {
  MOEX_GRID_LOOP(i, a.rows * a.heads) {
    const int64_t r = i / a.heads, h = i % a.heads;
    const float v = __fadd_rn(a.x[r * a.x_stride + h], a.bias[h]);
    const float sp = __fadd_rn(fmaxf(v, 0.f), log1pf(expf(-fabsf(v))));
    a.out[i] = fminf(fmaxf(sp, a.lo), a.hi);
  }
}

#undef MOEX_GRID_LOOP

void check(const char* op, bool ok, int64_t n) {
  if (!ok) fail("cuda ", op, ": a null pointer");
  if (n < 0) fail("cuda ", op, ": n = ", n);
}

}  // namespace

void add_scaled(float* x, const float* y, int64_t n, float scale) {
  check("add_scaled", x && y, n);
  if (n == 0) return;
  add_scaled_kernel<<<detail::elementwise_blocks(n), 256>>>(x, y, n, scale, scale == 1.f);
  MOEX_CUDA_CHECK_LAUNCH("add_scaled");
}

void scale_in_place(float* x, int64_t n, float s) {
  check("scale", x, n);
  if (n == 0) return;
  scale_kernel<<<detail::elementwise_blocks(n), 256>>>(x, n, s);
  MOEX_CUDA_CHECK_LAUNCH("scale");
}

void sigmoid_gate(float* x, const float* gate, int64_t n) {
  check("sigmoid_gate", x && gate, n);
  if (n == 0) return;
  sigmoid_gate_kernel<<<detail::elementwise_blocks(n), 256>>>(x, gate, n);
  MOEX_CUDA_CHECK_LAUNCH("sigmoid_gate");
}

void divide_and_softcap(float* x, int64_t n, float divisor, float cap) {
  check("divide_and_softcap", x, n);
  if (n == 0 || (divisor == 1.f && !(cap > 0))) return;
  divide_and_softcap_kernel<<<detail::elementwise_blocks(n), 256>>>(x, n, divisor, cap);
  MOEX_CUDA_CHECK_LAUNCH("divide_and_softcap");
}

void query_temperature(const QueryTemperatureArgs& a) {
  check("query_temperature", a.q, a.rows * a.width);
  if (a.rows <= 0 || a.width <= 0) return;
  query_temperature_kernel<<<detail::elementwise_blocks(a.rows * a.width), 256>>>(
      a.q, a.rows, a.width, a.pos0, a.floor_scale, a.attn_scale);
  MOEX_CUDA_CHECK_LAUNCH("query_temperature");
}

void split_halves(const float* src, float* first, float* second, int64_t rows, int64_t half) {
  check("split_halves", src && first && second, rows * half);
  if (rows <= 0 || half <= 0) return;
  split_halves_kernel<<<detail::elementwise_blocks(rows * half), 256>>>(src, first, second, rows,
                                                                        half);
  MOEX_CUDA_CHECK_LAUNCH("split_halves");
}

void copy_columns(const CopyColumnsArgs& a) {
  check("copy_columns", a.src && a.dst, a.rows * a.cols * a.blocks);
  if (a.rows <= 0 || a.cols <= 0 || a.blocks <= 0) return;
  copy_columns_kernel<<<detail::elementwise_blocks(a.rows * a.blocks * a.cols), 256>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("copy_columns");
}

void dt_softplus(const DtSoftplusArgs& a) {
  check("dt_softplus", a.x && a.bias && a.out, a.rows * a.heads);
  if (a.rows <= 0 || a.heads <= 0) return;
  dt_softplus_kernel<<<detail::elementwise_blocks(a.rows * a.heads), 256>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("dt_softplus");
}

void delta_gates(const DeltaGatesArgs& a) {
  check("delta_gates", a.a && a.b && a.neg_exp_a_log && a.dt_bias, a.rows * a.heads);
  if (a.rows <= 0 || a.heads <= 0) return;
  delta_gates_kernel<<<detail::elementwise_blocks(a.rows * a.heads), 256>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("delta_gates");
}

}  // namespace moex::cuda::ops
