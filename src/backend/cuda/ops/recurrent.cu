// The linear-recurrence state rows on the device: the gated delta rule and the Mamba-2 scan.
// One thread per state row, 32 rows (one warp) per block: the block copies its rows into shared
// memory (coalesced; rows at an odd pitch, so the 32 threads' element j lie in 32 banks), each
// thread runs its row through every step with mixer_math's step function (the CPU scalar
// reference's operations in its order, sums left to right), and the rows are copied back.
// The state crosses memory once per call whatever `steps` is. A step's inputs (k, q or B, C)
// are read by all the warp's threads of a head at the same index: one broadcast load.
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/ops/mixer_math.cuh"
#include "backend/cuda/ops/mixer_ops.h"

namespace moex::cuda::ops {
namespace {

constexpr int kRowsPerBlock = 32;

// Floats between consecutive staged rows of n floats: odd.
__host__ __device__ inline int64_t row_pitch(int64_t n) { return n | 1; }

// count rows of n floats: global (contiguous) to shared (pitched) and back, all threads.
__device__ inline void stage_rows(float* smem, const float* rows, int64_t count, int64_t n) {
  const int64_t pitch = row_pitch(n);
  for (int64_t e = threadIdx.x; e < count * n; e += blockDim.x)
    smem[(e / n) * pitch + e % n] = rows[e];
}
__device__ inline void unstage_rows(float* rows, const float* smem, int64_t count, int64_t n) {
  const int64_t pitch = row_pitch(n);
  for (int64_t e = threadIdx.x; e < count * n; e += blockDim.x)
    rows[e] = smem[(e / n) * pitch + e % n];
}

__device__ inline int64_t block_rows(int64_t total) {
  const int64_t left = total - blockIdx.x * int64_t(kRowsPerBlock);
  return left < kRowsPerBlock ? left : kRowsPerBlock;
}

__global__ void __launch_bounds__(kRowsPerBlock) gated_delta_kernel(GatedDeltaArgs a) {
  extern __shared__ float staged[];
  const int64_t n = a.k_dim, row0 = blockIdx.x * int64_t(kRowsPerBlock);
  const int64_t count = block_rows(a.v_heads * a.v_dim);
  float* state = a.state + row0 * n;
  stage_rows(staged, state, count, n);
  __syncthreads();
  if (threadIdx.x < count) {
    const int64_t r = row0 + threadIdx.x, h = r / a.v_dim, i = r % a.v_dim;
    const int64_t hk = h / (a.v_heads / a.k_heads);
    float* s = staged + threadIdx.x * row_pitch(n);
    for (int64_t t = 0; t < a.steps; ++t) {
      const int64_t th = t * a.v_heads + h, tk = (t * a.k_heads + hk) * n;
      a.out[th * a.v_dim + i] = math::delta_rule_step(s, a.k + tk, a.q + tk, a.g[th], a.beta[th],
                                                      a.v[th * a.v_dim + i], n);
    }
  }
  __syncthreads();
  unstage_rows(state, staged, count, n);
}

__global__ void __launch_bounds__(kRowsPerBlock) ssm_scan_kernel(SsmScanArgs a) {
  extern __shared__ float staged[];
  const int64_t n = a.state_dim, row0 = blockIdx.x * int64_t(kRowsPerBlock);
  const int64_t count = block_rows(a.heads * a.head_dim);
  float* state = a.state + row0 * n;
  stage_rows(staged, state, count, n);
  __syncthreads();
  if (threadIdx.x < count) {
    const int64_t r = row0 + threadIdx.x, h = r / a.head_dim, i = r % a.head_dim;
    const int64_t g = h / (a.heads / a.groups);
    float* s = staged + threadIdx.x * row_pitch(n);
    for (int64_t t = 0; t < a.steps; ++t) {
      const float dt = a.dt[t * a.heads + h];
      const float x = a.x[(t * a.heads + h) * a.head_dim + i];
      const int64_t bc = (t * a.groups + g) * n;
      const float sc = math::ssm_step(s, a.b + bc, a.c + bc, math::ssm_decay(dt, a.a[h]),
                                      math::ssm_bx(dt, x), n);
      a.out[(t * a.heads + h) * a.head_dim + i] = math::ssm_out(sc, a.d[h], x);
    }
  }
  __syncthreads();
  unstage_rows(state, staged, count, n);
}

// Launches `kernel` over `rows` state rows of n floats (rows > 0); the caller checks the launch.
template <typename Args>
void launch_rows(void (*kernel)(Args), const Args& a, int64_t rows, int64_t n, const char* what) {
  const size_t smem = size_t(kRowsPerBlock) * size_t(row_pitch(n)) * sizeof(float);
  detail::allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem, what);
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  kernel<<<unsigned(blocks), kRowsPerBlock, smem>>>(a);
}

constexpr int64_t kMaxRows = int64_t{1} << 36;  // blocks of 32 within the grid's 2^31 - 1

}  // namespace

void gated_delta(const GatedDeltaArgs& a) {
  if (!a.q || !a.k || !a.v || !a.g || !a.beta || !a.state || !a.out)
    fail("cuda gated_delta: null q, k, v, g, beta, state or out");
  if (a.steps < 0 || a.k_heads < 1 || a.v_heads < 1 || a.v_heads % a.k_heads != 0 ||
      a.k_dim < 1 || a.v_dim < 1 || a.v_heads * a.v_dim > kMaxRows)
    fail("cuda gated_delta: steps = ", a.steps, ", ", a.v_heads, " value heads of ", a.v_dim,
         " over ", a.k_heads, " key heads of ", a.k_dim,
         "; expected value heads a multiple of key heads and positive sizes");
  if (a.steps == 0) return;
  launch_rows(gated_delta_kernel, a, a.v_heads * a.v_dim, a.k_dim,
              "cuda gated_delta (32 state rows of k_dim)");
  MOEX_CUDA_CHECK_LAUNCH("gated_delta");
}

void ssm_scan(const SsmScanArgs& a) {
  if (!a.x || !a.dt || !a.a || !a.b || !a.c || !a.d || !a.state || !a.out)
    fail("cuda ssm_scan: null x, dt, a, b, c, d, state or out");
  if (a.steps < 0 || a.heads < 1 || a.groups < 1 || a.heads % a.groups != 0 ||
      a.head_dim < 1 || a.state_dim < 1 || a.heads * a.head_dim > kMaxRows)
    fail("cuda ssm_scan: steps = ", a.steps, ", ", a.heads, " heads of ", a.head_dim, " in ",
         a.groups, " groups, state_dim = ", a.state_dim,
         "; expected heads a multiple of groups and positive sizes");
  if (a.steps == 0) return;
  launch_rows(ssm_scan_kernel, a, a.heads * a.head_dim, a.state_dim,
              "cuda ssm_scan (32 state rows of state_dim)");
  MOEX_CUDA_CHECK_LAUNCH("ssm_scan");
}

}  // namespace moex::cuda::ops
