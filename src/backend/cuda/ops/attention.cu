// The device KV cache (layout [kv_heads][capacity][head_dim], as the CPU KvCache; keys-only
// for MLA), GQA attention and MLA attention (the same kernel; MLA's values are the first
// latent_dim features of the key rows): one block per (query row, query head). Scores: a warp
// per key, lanes over the head dims; softmax with the max subtracted (sink included), f32 sums
// in block_reduce's order; out[d] = sum over keys in order of p_t * v_t[d], one thread per d
// (ops::attention's axpy order, so given the same weights the outputs are the CPU scalar
// op's bits).
#include <cuda_runtime.h>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/ops/block_reduce.cuh"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/op_math.cuh"

namespace moex::cuda::ops {
namespace {

constexpr int kAttnThreads = 128;

__global__ void kv_append_kernel(float* __restrict__ ck, float* cv,
                                 const float* __restrict__ k, const float* __restrict__ v,
                                 int64_t rows, int64_t kv_heads, int64_t head_dim,
                                 int64_t capacity, int64_t length) {
  const int64_t total = rows * kv_heads * head_dim;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = e % head_dim, h = (e / head_dim) % kv_heads, r = e / (head_dim * kv_heads);
    const int64_t to = (h * capacity + length + r) * head_dim + d;
    ck[to] = k[e];
    if (cv) cv[to] = v[e];  // null: a keys-only cache
  }
}

struct AttnParams {
  const float* q;
  const float* keys;
  const float* values;
  const float* sinks;
  float* out;
  float* scores;  // [rows][heads][max_keys]
  int64_t heads, group, head_dim, capacity, pos0, chunk, window, max_keys;
  int64_t v_dim;     // value features read and written per head (head_dim; MLA: latent_dim)
  int64_t v_stride;  // floats between consecutive value rows (head_dim; MLA: the key width)
  float scale;
};

__global__ void __launch_bounds__(kAttnThreads) attention_kernel(AttnParams p) {
  __shared__ float scratch[detail::kReduceScratch];
  const int64_t r = blockIdx.x / p.heads, h = blockIdx.x % p.heads, kvh = h / p.group;
  const int64_t pos = p.pos0 + r;
  const int64_t first = math::attention_first_key(pos, p.chunk, p.window);
  const int64_t n = pos + 1 - first;
  const int64_t hd = p.head_dim;
  const float* q = p.q + (r * p.heads + h) * hd;
  const float* keys = p.keys + (kvh * p.capacity + first) * hd;
  const float* values = p.values + (kvh * p.capacity + first) * p.v_stride;
  float* s = p.scores + blockIdx.x * p.max_keys;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;

  // Scores, and each thread's largest.
  float local_max = -INFINITY;
  for (int64_t t = warp; t < n; t += warps) {
    const float* k = keys + t * hd;
    float dot = 0.f;
    for (int64_t d = lane; d < hd; d += 32) dot = __fmaf_rn(q[d], k[d], dot);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) dot = __fadd_rn(dot, __shfl_xor_sync(0xffffffffu, dot, o));
    const float sc = math::mul_rn(dot, p.scale);
    if (lane == 0) s[t] = sc;
    local_max = fmaxf(local_max, sc);
  }
  const float sink = p.sinks ? p.sinks[h] : -INFINITY;
  const float m = fmaxf(detail::block_max(local_max, scratch), sink);  // barrier: s complete

  if (!isfinite(m)) {  // all -inf or +inf present: uniform over the maxima (softmax.cc)
    float cnt = 0.f;
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) cnt += s[t] == m ? 1.f : 0.f;
    cnt = detail::block_sum(cnt, scratch) + (p.sinks && sink == m ? 1.f : 0.f);
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x)
      s[t] = (s[t] == m && cnt > 0.f) ? math::div_rn(1.f, cnt) : 0.f;
  } else {
    float sum = 0.f;
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      const float e = math::softmax_term(s[t], m);
      s[t] = e;
      sum = math::add_rn(sum, e);
    }
    sum = detail::block_sum(sum, scratch);
    if (p.sinks) sum = math::add_rn(math::softmax_term(sink, m), sum);
    const float inv = math::div_rn(1.f, sum);
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) s[t] = math::mul_rn(s[t], inv);
  }
  __syncthreads();

  float* o = p.out + (r * p.heads + h) * p.v_dim;
  for (int64_t d = threadIdx.x; d < p.v_dim; d += blockDim.x) {
    float acc = 0.f;
    for (int64_t t = 0; t < n; ++t)
      acc = math::add_rn(acc, math::mul_rn(s[t], values[t * p.v_stride + d]));
    o[d] = acc;
  }
}

}  // namespace

void kv_append(KvCache& cache, const float* k, const float* v, int64_t rows) {
  if (!k || (!v && cache.has_values()) || !cache.keys())
    fail("cuda kv_append: null k, v or cache");
  if (rows < 0) fail("cuda kv_append: rows = ", rows);
  if (cache.memory() != backend::Memory::kCuda) fail("cuda kv_append: a cache in host memory");
  cache.check_room(rows);
  if (rows == 0) return;
  const int64_t total = rows * cache.kv_heads() * cache.head_dim();
  kv_append_kernel<<<detail::elementwise_blocks(total), 256>>>(
      cache.keys(), cache.has_values() ? cache.values() : nullptr, k, v, rows, cache.kv_heads(),
      cache.head_dim(),
      cache.capacity(), cache.length());
  MOEX_CUDA_CHECK_LAUNCH("kv_append");
  cache.grow(rows);
}

int64_t attention_scratch_floats(int64_t rows, int64_t heads, int64_t pos0) {
  return rows * heads * (pos0 + rows);
}

void attention(const AttentionArgs& a, float* scores) {
  if (!a.q || !a.cache || !a.out || !scores || !a.cache->keys() ||
      a.cache->memory() != backend::Memory::kCuda)
    fail("cuda attention: null q, cache, out or scores, or a cache in host memory");
  if (!a.cache->has_values()) fail("cuda attention: a keys-only cache (MLA's: mla_attention)");
  const KvCache& c = *a.cache;
  if (a.heads < 1 || a.heads % c.kv_heads() != 0 || a.rows < 0 || a.pos0 < 0 ||
      a.pos0 + a.rows > c.length() || a.rows * a.heads > (int64_t{1} << 31) - 1)
    fail("cuda attention: ", a.heads, " heads over ", c.kv_heads(), " kv heads, rows up to ",
         a.pos0 + a.rows, " but the cache holds ", c.length());
  if (a.rows == 0) return;
  AttnParams p;
  p.q = a.q;
  p.keys = c.keys();
  p.values = c.values();
  p.sinks = a.sinks;
  p.out = a.out;
  p.scores = scores;
  p.heads = a.heads;
  p.group = a.heads / c.kv_heads();
  p.head_dim = c.head_dim();
  p.capacity = c.capacity();
  p.pos0 = a.pos0;
  p.chunk = a.chunk;
  p.window = a.window;
  p.max_keys = a.pos0 + a.rows;
  p.v_dim = c.head_dim();
  p.v_stride = c.head_dim();
  p.scale = a.scale;
  attention_kernel<<<unsigned(a.rows * a.heads), kAttnThreads>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("attention");
}

void mla_attention(const MlaAttentionArgs& a, float* scores) {
  if (!a.q || !a.cache || !a.out || !scores || !a.cache->keys() ||
      a.cache->memory() != backend::Memory::kCuda)
    fail("cuda mla_attention: null q, cache, out or scores, or a cache in host memory");
  const KvCache& c = *a.cache;
  if (c.kv_heads() != 1 || c.has_values() || a.latent_dim < 1 || a.latent_dim > c.head_dim() ||
      a.heads < 1 || a.rows < 0 || a.pos0 < 0 || a.pos0 + a.rows > c.length() ||
      a.rows * a.heads > (int64_t{1} << 31) - 1)
    fail("cuda mla_attention: the cache must be keys-only with one head wider than the latent (",
         a.latent_dim, ") and hold ", a.pos0 + a.rows, " positions; it has ", c.kv_heads(),
         " heads of ", c.head_dim(), ", ", c.length(), " positions (", a.heads, " query heads)");
  if (a.rows == 0) return;
  AttnParams p;
  p.q = a.q;
  p.keys = c.keys();
  p.values = c.keys();  // the latent: each row's first latent_dim features
  p.sinks = nullptr;
  p.out = a.out;
  p.scores = scores;
  p.heads = a.heads;
  p.group = a.heads;  // every query head reads kv head 0
  p.head_dim = c.head_dim();
  p.capacity = c.capacity();
  p.pos0 = a.pos0;
  p.chunk = 0;
  p.window = 0;
  p.max_keys = a.pos0 + a.rows;
  p.v_dim = a.latent_dim;
  p.v_stride = c.head_dim();
  p.scale = a.scale;
  attention_kernel<<<unsigned(a.rows * a.heads), kAttnThreads>>>(p);
  MOEX_CUDA_CHECK_LAUNCH("mla_attention");
}

}  // namespace moex::cuda::ops
