// MoeBlock: validation, the dispatch decision per call, the llama4 input scaling and the
// shared expert's composition; the routed paths run on the policy's MoeBackend.
#include "moe/moe_block.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/elementwise.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"
#include "moe/router.h"

namespace moex::moe {
namespace {

using kernels::MoeExpertsView;
using kernels::QuantWeightsView;

void check_view(const QuantWeightsView& w, const char* what) {
  if (const char* why = kernels::qdot_unsupported_reason(w)) fail("MoE layer: ", what, ": ", why);
}

void check_experts(const MoeExpertsView& ex, const char* what) {
  if (ex.act != kernels::Activation::kSquaredReLU) check_view(ex.gate, what);
  check_view(ex.up, what);
  check_view(ex.down, what);
  if (const char* why = kernels::moe_kernels_unsupported_reason(ex))
    fail("MoE layer: ", what, ": ", why);
}

DispatchInputs inputs_for(const MoeExpertsView& ex, bool stacked, int64_t tokens,
                          const MoePolicy& p, const MoeBackend& backend,
                          const PreparedExperts& prepared) {
  DispatchInputs in;
  in.tokens = tokens;
  in.dff = ex.dff();
  in.din = ex.din();
  in.up = projection_quant_of(ex.up);
  in.down = projection_quant_of(ex.down);
  if (ex.act != kernels::Activation::kSquaredReLU) in.gate = projection_quant_of(ex.gate);
  in.stacked = stacked;
  in.act = ex.act;
  in.backend = backend.kind();
  in.backend_has_fused_kernel = backend.has_fused_kernel(prepared);
  in.settings = p.settings;
  in.calibration = p.calibration;
  return in;
}


}  // namespace

float* MoeWorkspace::floats(int i, int64_t n) {
  if (int64_t(f_[i].size()) < n) f_[i].resize(size_t(n));
  return f_[i].data();
}

int32_t* MoeWorkspace::ints(int i, int64_t n) {
  if (int64_t(i_[i].size()) < n) i_[i].resize(size_t(n));
  return i_[i].data();
}

int64_t MoeWorkspace::bytes() const {
  int64_t total = 0;
  for (const auto& v : f_) total += int64_t(v.capacity() * sizeof(float));
  for (const auto& v : i_) total += int64_t(v.capacity() * sizeof(int32_t));
  return total;
}

MoeBlock::MoeBlock(const MoeLayer& layer, const MoePolicy& policy)
    : layer_(layer), policy_(policy),
      backend_(policy.backend ? *policy.backend : cpu_moe_backend()) {
  check_experts(layer.experts, "routed experts");
  if (const SharedExpert* sh = layer.shared) {
    check_experts(sh->mlp, "shared expert");
    if (sh->mlp.up.experts != 1) fail("MoE layer: shared expert must be a 1-expert stack");
    if (sh->mlp.din() != layer.experts.din())
      fail("MoE layer: shared expert input dim ", sh->mlp.din(), " != routed experts' ",
           layer.experts.din());
    if (const QuantWeightsView* g = sh->sigmoid_gate) {
      check_view(*g, "shared expert sigmoid gate");
      if (g->experts != 1 || g->n != 1 || g->k != layer.experts.din())
        fail("MoE layer: shared expert sigmoid gate must be 1 x 1 x ", layer.experts.din(),
             ", got ", g->experts, " x ", g->n, " x ", g->k);
    }
  }
  routed_ = backend_.prepare(layer.experts, "routed experts");
  if (layer.shared) shared_ = backend_.prepare(layer.shared->mlp, "shared expert");
  set_policy(policy);
}

void MoeBlock::set_policy(const MoePolicy& policy) {
  if (policy.backend && policy.backend != &backend_)
    fail("MoE block: set_policy with another backend (", backend_name(policy.backend->kind()),
         ") than the block was prepared for (", backend_name(backend_.kind()), ")");
  policy_ = policy;
  decode_ = decide(*routed_, layer_.stacked, 1);
  if (shared_) shared_decode_ = decide(*shared_, true, 1);
}

DispatchDecision MoeBlock::decide(const PreparedExperts& ex, bool stacked, int64_t tokens) const {
  return decide_path(inputs_for(ex.host(), stacked, tokens, policy_, backend_, ex));
}

DispatchDecision MoeBlock::decision(int64_t tokens) const {
  if (tokens == 1) return decode_;
  return decide(*routed_, layer_.stacked, tokens);
}

DispatchDecision MoeBlock::shared_decision(int64_t tokens) const {
  if (tokens == 1 || !shared_) return shared_decode_;
  return decide(*shared_, true, tokens);
}

void MoeBlock::run_path(const DispatchDecision& d, const PreparedExperts& ex, const RoutedCall& c,
                        MoeWorkspace& ws) const {
  if (d.path == Path::kFused)
    backend_.fused(ex, c, ws);
  else
    backend_.fallback(ex, c, ws);
}

void MoeBlock::run(const MoeBlockCall& call, MoeWorkspace& ws, PathCounters* counters) const {
  const MoeExpertsView& ex = layer_.experts;
  const int64_t m = call.tokens, k = call.top_k;
  if (m <= 0) return;
  if (k < 1 || k > ex.up.experts)
    fail("MoE block: top_k = ", k, "; expected [1, ", ex.up.experts, "]");
  if (call.scores_scale_input && k != 1)
    fail("MoE block: scores that scale the expert input (llama4) need top_k = 1, got ", k);
  for (int64_t p = 0; p < m * k; ++p)
    if (call.expert_ids[p] < 0 || call.expert_ids[p] >= ex.up.experts)
      fail("MoE block: expert id ", call.expert_ids[p], " at pair ", p, " outside [0, ",
           ex.up.experts, ")");

  RoutedCall c{.x = call.x, .tokens = m, .expert_ids = call.expert_ids, .scores = call.scores,
               .top_k = int(k), .out = call.out};
  run_routed(c, call.scores_scale_input, ws, counters);
  if (layer_.shared) run_shared(call, ws, counters);
}

void MoeBlock::run_routed(const RoutedCall& call, bool scores_scale_input, MoeWorkspace& ws,
                          PathCounters* counters) const {
  const int64_t m = call.tokens, din = layer_.experts.din();
  DispatchDecision prefill;
  if (m != 1) prefill = decision(m);
  const DispatchDecision& d = m == 1 ? decode_ : prefill;
  if (counters) counters->record(d, ExpertSite::kRouted);
  RoutedCall c = call;
  if (scores_scale_input) {  // top_k == 1: expert(x * s), output weight 1
    float* xs = ws.floats(kSlotScaledX, m * din);
    for (int64_t t = 0; t < m; ++t)
      for (int64_t h = 0; h < din; ++h) xs[t * din + h] = call.x[t * din + h] * call.scores[t];
    float* ones = ws.floats(kSlotOnes, m);
    std::fill(ones, ones + m, 1.f);
    c.x = xs;
    c.scores = ones;
  }
  run_path(d, *routed_, c, ws);
}

int64_t MoeBlock::owned_pairs(const MoeBlockCall& call, const uint8_t* owned) {
  int64_t n = 0;
  for (int64_t p = 0; p < call.tokens * call.top_k; ++p) n += owned[call.expert_ids[p]] != 0;
  return n;
}

void MoeBlock::run_owned_pairs(const MoeBlockCall& call, const uint8_t* owned, float* y,
                               MoeWorkspace& ws, PathCounters* counters) const {
  const int64_t m = call.tokens, k = call.top_k, din = layer_.experts.din();
  const int64_t pairs = owned_pairs(call, owned);
  if (pairs == 0) return;
  // Each pair as one row: its token's input (scaled by its score for llama4), weight 1.
  float* x = ws.floats(kSlotOwnedX, pairs * din);
  int32_t* ids = ws.ints(kSlotOwnedIds, pairs);
  float* ones = ws.floats(kSlotOwnedScores, pairs);
  std::fill(ones, ones + pairs, 1.f);
  int64_t p = 0;
  for (int64_t t = 0; t < m; ++t)
    for (int64_t j = 0; j < k; ++j) {
      if (!owned[call.expert_ids[t * k + j]]) continue;
      ids[p] = call.expert_ids[t * k + j];
      const float s = call.scores_scale_input ? call.scores[t * k + j] : 1.f;
      for (int64_t h = 0; h < din; ++h) x[p * din + h] = call.x[t * din + h] * s;
      ++p;
    }
  if (m == 1) {  // decode: the decode path, one pair at a time
    if (counters) counters->record(decode_, ExpertSite::kRouted);
    for (int64_t q = 0; q < pairs; ++q)
      run_path(decode_, *routed_,
               {.x = x + q * din, .tokens = 1, .expert_ids = ids + q, .scores = ones + q,
                .top_k = 1, .out = y + q * din},
               ws);
    return;
  }
  run_routed({.x = x, .tokens = pairs, .expert_ids = ids, .scores = ones, .top_k = 1, .out = y},
             false, ws, counters);
}

void MoeBlock::combine_pairs(const MoeBlockCall& call, const float* y, MoeWorkspace& ws) const {
  kernels::WeightedSumArgs sum;
  sum.y = y;
  sum.tokens = call.tokens;
  sum.top_k = call.top_k;
  sum.n = layer_.experts.din();
  sum.out = call.out;
  sum.scores = call.scores;
  if (call.scores_scale_input) {  // top_k == 1: the score went into the input
    float* ones = ws.floats(kSlotOnes, call.tokens);
    std::fill(ones, ones + call.tokens, 1.f);
    sum.scores = ones;
  }
  kernels::weighted_sum(sum);
}

// out[m] += g_m * shared(x[m]), g_m = sigmoid(gate . x[m]) or 1: the shared expert runs as a
// 1-expert layer on the block's backend with g as its score.
void MoeBlock::run_shared(const MoeBlockCall& call, MoeWorkspace& ws,
                          PathCounters* counters) const {
  const int64_t n = call.tokens * layer_.shared->mlp.din();
  float* y = ws.floats(kSlotSharedOut, n);
  run_shared_term(call, y, ws, counters);
  for (int64_t i = 0; i < n; ++i) call.out[i] += y[i];
}

void MoeBlock::run_shared_term(const MoeBlockCall& call, float* term, MoeWorkspace& ws,
                               PathCounters* counters) const {
  if (!layer_.shared) fail("MoE block: the layer has no shared expert");
  const SharedExpert& sh = *layer_.shared;
  const int64_t m = call.tokens;
  int32_t* zeros = ws.ints(kSlotZeros, m);
  std::fill(zeros, zeros + m, 0);

  float* g = ws.floats(kSlotSharedGate, m);
  if (sh.sigmoid_gate) {
    // One row of Din: computed on the host from the host view (a few microseconds).
    kernels::gather_qmm({.x = call.x, .x_rows = m, .w = sh.sigmoid_gate,
                         .rhs_indices = zeros, .batch = m, .out = g});
    for (int64_t t = 0; t < m; ++t) g[t] = router_sigmoid(g[t]);
  } else {
    std::fill(g, g + m, 1.f);
  }

  DispatchDecision prefill;
  if (m != 1) prefill = shared_decision(m);
  const DispatchDecision& d = m == 1 ? shared_decode_ : prefill;
  if (counters) counters->record(d, ExpertSite::kShared);
  run_path(d, *shared_, {.x = call.x, .tokens = m, .expert_ids = zeros, .scores = g, .top_k = 1,
                         .out = term},
           ws);
}

}  // namespace moex::moe
