// Dispatch and threading of the elementwise ops: one ISA choice per call, contiguous chunks
// per thread (small inputs stay on the calling thread; the values are the same either way).
#include "kernels/elementwise.h"

#include "core/parallel.h"
#include "kernels/elementwise_variants.h"

namespace moex::kernels {
namespace {

constexpr int64_t kChunk = 4096;           // elements per unit of parallel work
constexpr int64_t kMinParallel = 1 << 15;  // below this, threads cost more than they save

WeightedSumSpanFn weighted_sum_span_fn(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return weighted_sum_span__avx512;
    case Isa::kAvx2:
      return weighted_sum_span__avx2;
    case Isa::kScalar:
      break;
  }
  return weighted_sum_span_scalar;
}

template <typename Fn>
void for_chunks(int64_t total, int64_t work, Fn&& fn) {
  const int64_t units = (total + kChunk - 1) / kChunk;
  auto body = [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; ++u)
      fn(u * kChunk, u * kChunk + kChunk < total ? u * kChunk + kChunk : total);
  };
  if (work < kMinParallel)
    body(0, units);
  else
    parallel_for(units, body);
}

}  // namespace

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kSwiGLU:
      return "swiglu";
    case Activation::kGeGLU:
      return "geglu";
    case Activation::kSquaredReLU:
      return "squared_relu";
    case Activation::kSwiGLUOai:
      return "swiglu_oai";
  }
  return "?";
}

ActSpanFn act_span_fn(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return act_span__avx512;
    case Isa::kAvx2:
      return act_span__avx2;
    case Isa::kScalar:
      break;
  }
  return act_span_scalar;
}

void apply_activation(const ActivationArgs& a) {
  const ActSpanFn fn = act_span_fn(active_isa());
  const int64_t total = a.rows * a.n;
  const bool has_gate = a.act != Activation::kSquaredReLU;
  for_chunks(total, total, [&](int64_t lo, int64_t hi) {
    fn(a.act, has_gate ? a.gate + lo : nullptr, a.up + lo, a.out + lo, hi - lo);
  });
}

void weighted_sum(const WeightedSumArgs& a) {
  const WeightedSumSpanFn fn = weighted_sum_span_fn(active_isa());
  const int64_t per_token = (a.n + kChunk - 1) / kChunk * kChunk;  // chunks never span tokens
  for_chunks(a.tokens * per_token, a.tokens * a.n * a.top_k, [&](int64_t lo, int64_t hi) {
    const int64_t t = lo / per_token, h0 = lo % per_token;
    const int64_t h1 = hi - t * per_token < a.n ? hi - t * per_token : a.n;
    if (h1 > h0)
      fn(a.y + t * a.top_k * a.n + h0, a.n, a.scores + t * a.top_k, a.top_k, a.out + t * a.n + h0,
         h1 - h0);
  });
}

}  // namespace moex::kernels
