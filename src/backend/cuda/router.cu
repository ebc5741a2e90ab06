// CUDA routers (router.h): one warp per token; logits, keys and the taken flags of the
// token's experts live in shared memory, and every top-k round is a warp-wide argmax.
#include <cmath>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/router.h"

namespace moex::cuda {
namespace {

struct Best {
  float v;
  int i;
};

// a beats b: larger value, ties by index as configured; i < 0 means "none".
__device__ inline bool beats(const Best& a, const Best& b, bool higher_index_wins) {
  if (a.i < 0) return false;
  if (b.i < 0) return true;
  if (a.v != b.v) return a.v > b.v;
  return higher_index_wins ? a.i > b.i : a.i < b.i;
}

__device__ inline Best warp_best(Best b, bool higher_index_wins) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Best other{__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.i, o)};
    if (beats(other, b, higher_index_wins)) b = other;
  }
  return b;
}

__device__ inline float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline float warp_add(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The best untaken key (NaN keys count as -inf), or i = -1 when all are taken.
__device__ inline Best best_untaken(const float* key, const unsigned char* taken, int n,
                                    bool higher_index_wins) {
  Best b{-INFINITY, -1};
  for (int i = threadIdx.x; i < n; i += 32) {
    if (taken[i]) continue;
    const float v = isnan(key[i]) ? -INFINITY : key[i];
    const Best c{v, i};
    if (beats(c, b, higher_index_wins)) b = c;
  }
  return warp_best(b, higher_index_wins);
}

// In-place softmax of v[0..n) as MLX's CPU does it: exp(v - max) * (1 / sum).
__device__ inline void warp_softmax(float* v, int n) {
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < n; i += 32) mx = fmaxf(mx, v[i]);
  mx = warp_max(mx);
  float sum = 0.f;
  for (int i = threadIdx.x; i < n; i += 32) {
    v[i] = expf(v[i] - mx);
    sum += v[i];
  }
  __syncwarp();
  const float inv = 1.f / warp_add(sum);
  for (int i = threadIdx.x; i < n; i += 32) v[i] *= inv;
  __syncwarp();
}

__device__ inline float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

__global__ void __launch_bounds__(32) router_kernel(RouterArgs a) {
  extern __shared__ float smem[];
  const int n = a.num_experts, kk = a.top_k;
  float* val = smem;       // probabilities / sigmoid / logits, per rule
  float* key = smem + n;   // what the top-k selects on
  unsigned char* taken = reinterpret_cast<unsigned char*>(smem + 2 * n);
  const int64_t t = blockIdx.x;
  const float* l = a.logits + t * n;
  int32_t* ids = a.ids + t * kk;
  float* scores = a.scores + t * kk;
  const bool hi = a.higher_index_wins;
  for (int i = threadIdx.x; i < n; i += 32) {
    taken[i] = 0;
    val[i] = l[i];
  }
  __syncwarp();

  if (a.rule == RoutingRule::kSparseMixer) {
    // key holds the masked gates; val the band of the current round.
    for (int i = threadIdx.x; i < n; i += 32) key[i] = l[i];
    __syncwarp();
    const float threshold = 2.f * a.jitter_eps;
    for (int r = 0; r < kk; ++r) {
      // argmax over masked (first maximum; -inf entries take part like in the CPU version).
      Best b{-INFINITY, -1};
      for (int i = threadIdx.x; i < n; i += 32) {
        const Best c{key[i], i};
        if (b.i < 0 || c.v > b.v) b = c;  // per lane, increasing i: first maximum
      }
      b = warp_best(b, false);
      const int ind = b.i;
      const float top = key[ind];
      for (int i = threadIdx.x; i < n; i += 32) {
        const float factor = fmaxf(fabsf(l[i]), top);
        val[i] = (top - l[i]) / factor > threshold ? -INFINITY : key[i];
      }
      __syncwarp();
      warp_softmax(val, n);
      if (threadIdx.x == 0) {
        ids[r] = ind;
        scores[r] = val[ind];
        key[ind] = -INFINITY;
      }
      __syncwarp();
    }
    return;
  }

  switch (a.rule) {
    case RoutingRule::kSoftmaxTopK:
      warp_softmax(val, n);
      for (int i = threadIdx.x; i < n; i += 32) key[i] = val[i];
      break;
    case RoutingRule::kSigmoidBiasTopK:
      for (int i = threadIdx.x; i < n; i += 32) {
        val[i] = sigmoid(l[i]);
        key[i] = a.expert_bias ? val[i] + a.expert_bias[i] : val[i];
      }
      break;
    default:  // kTopKSoftmax, kSigmoidTop1ScalesInput: select on the logits
      for (int i = threadIdx.x; i < n; i += 32) key[i] = l[i];
      break;
  }
  __syncwarp();
  for (int r = 0; r < kk; ++r) {
    const Best b = best_untaken(key, taken, n, hi);
    if (threadIdx.x == 0) {
      ids[r] = b.i;
      taken[b.i] = 1;
    }
    __syncwarp();
  }
  if (threadIdx.x != 0) return;
  switch (a.rule) {
    case RoutingRule::kSoftmaxTopK:
    case RoutingRule::kSigmoidBiasTopK: {
      float sum = 0.f;
      for (int r = 0; r < kk; ++r) sum += (scores[r] = val[ids[r]]);
      const bool sig = a.rule == RoutingRule::kSigmoidBiasTopK;
      if (a.renormalize) {
        const float d = sig ? sum + 1e-6f : sum;
        for (int r = 0; r < kk; ++r) scores[r] /= d;
      }
      if (sig)
        for (int r = 0; r < kk; ++r) scores[r] *= a.routed_scaling;
      break;
    }
    case RoutingRule::kTopKSoftmax: {
      float mx = -INFINITY, sum = 0.f;
      for (int r = 0; r < kk; ++r) mx = fmaxf(mx, l[ids[r]]);
      for (int r = 0; r < kk; ++r) sum += (scores[r] = expf(l[ids[r]] - mx));
      const float inv = 1.f / sum;
      for (int r = 0; r < kk; ++r) scores[r] *= inv;
      break;
    }
    case RoutingRule::kSigmoidTop1ScalesInput:
      for (int r = 0; r < kk; ++r) scores[r] = sigmoid(l[ids[r]]);
      break;
    default:
      break;
  }
}

}  // namespace

void route(const RouterArgs& a) {
  const char* what = "cuda::route";
  if (a.num_experts < 1 || a.num_experts > 16384)
    fail(what, ": num_experts = ", a.num_experts, "; expected 1..16384");
  if (a.top_k < 1 || a.top_k > a.num_experts)
    fail(what, ": top_k = ", a.top_k, "; expected 1..num_experts = ", a.num_experts);
  if (a.rule == RoutingRule::kSigmoidTop1ScalesInput && a.top_k != 1)
    fail(what, ": sigmoid_top1_scales_input routing supports top_k = 1 only; got ", a.top_k);
  if (a.expert_bias && a.rule != RoutingRule::kSigmoidBiasTopK)
    fail(what, ": expert_bias is only used by sigmoid_bias_topk routing");
  if (!a.logits || !a.ids || !a.scores) fail(what, ": logits, ids and scores must not be null");
  if (a.tokens < 0 || a.tokens > 0x7fffffff) fail(what, ": tokens = ", a.tokens);
  if (a.tokens == 0) return;
  const size_t smem = size_t(a.num_experts) * 9 + 16;
  detail::allow_dynamic_smem(reinterpret_cast<const void*>(router_kernel), smem, what);
  router_kernel<<<unsigned(a.tokens), 32, smem, a.stream>>>(a);
  MOEX_CUDA_CHECK_LAUNCH("router_kernel");
}

}  // namespace moex::cuda
