// MoeBlock: routed experts through the fused decode kernel or the gather_qmm fallback (each
// op writing its intermediate, as MLX runs SwitchGLU), plus the optional shared expert.
#include "moe/moe_block.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"
#include "moe/router.h"

namespace moex::moe {
namespace {

using kernels::MoeExpertsView;
using kernels::QuantWeightsView;

// Workspace buffer slots.
enum FloatSlot {
  kGateOut,
  kUpOut,
  kDownOut,
  kUnsorted,
  kScaledX,
  kOnes,
  kSharedOut,
  kSharedGate,
  kNumFloatSlots
};
enum IntSlot { kLhs, kRhs, kOrder, kCounts, kZeros, kNumIntSlots };
static_assert(kNumFloatSlots == MoeWorkspace::kFloatSlots &&
              kNumIntSlots == MoeWorkspace::kIntSlots);

void check_view(const QuantWeightsView& w, const char* what) {
  if (!w.w || !w.scales || !w.biases)
    fail("MoE layer: ", what, " needs packed weights, scales and biases (affine quantization)");
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
                          const MoePolicy& p) {
  DispatchInputs in;
  in.tokens = tokens;
  in.dff = ex.dff();
  in.din = ex.din();
  in.up = projection_quant_of(ex.up);
  in.down = projection_quant_of(ex.down);
  if (ex.act != kernels::Activation::kSquaredReLU) in.gate = projection_quant_of(ex.gate);
  in.stacked = stacked;
  in.act = ex.act;
  in.backend = p.backend;
  in.backend_has_fused_kernel = p.backend_has_fused_kernel;
  in.settings = p.settings;
  in.calibration = p.calibration;
  return in;
}

void gather(const QuantWeightsView& w, const float* x, int64_t x_rows, const int32_t* lhs,
            const int32_t* rhs, int64_t batch, float* out) {
  kernels::GatherQmmArgs a;
  a.x = x;
  a.x_rows = x_rows;
  a.w = &w;
  a.lhs_indices = lhs;
  a.rhs_indices = rhs;
  a.batch = batch;
  a.out = out;
  kernels::gather_qmm(a);
}

// out[i][:] += bias[rhs[i]][:] (mlx-lm SwitchLinear: the bias of each pair's expert), when the
// layer has that bias.
void add_expert_bias(float* out, const float* bias, const int32_t* rhs, int64_t pairs, int64_t n) {
  if (!bias) return;
  for (int64_t i = 0; i < pairs; ++i) {
    const float* b = bias + int64_t(rhs[i]) * n;
    float* o = out + i * n;
    for (int64_t j = 0; j < n; ++j) o[j] += b[j];
  }
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
    : layer_(layer), policy_(policy) {
  check_experts(layer.experts, "routed experts");
  decode_ = decide_path(inputs_for(layer.experts, layer.stacked, 1, policy));
  if (const SharedExpert* sh = layer.shared) {
    check_experts(sh->mlp, "shared expert");
    if (sh->mlp.up.experts != 1) fail("MoE layer: shared expert must be a 1-expert stack");
    if (sh->mlp.din() != layer.experts.din())
      fail("MoE layer: shared expert input dim ", sh->mlp.din(), " != routed experts' ",
           layer.experts.din());
    if (sh->sigmoid_gate && sh->sigmoid_gate_quant)
      fail("MoE layer: shared expert gate given both as f32 weights and quantized");
    if (const QuantWeightsView* g = sh->sigmoid_gate_quant) {
      check_view(*g, "shared expert sigmoid gate");
      if (g->experts != 1 || g->n != 1 || g->k != layer.experts.din())
        fail("MoE layer: shared expert sigmoid gate must be 1 x 1 x ", layer.experts.din(),
             ", got ", g->experts, " x ", g->n, " x ", g->k);
    }
    shared_decode_ = decide_path(inputs_for(sh->mlp, true, 1, policy));
  }
}

DispatchDecision MoeBlock::decision(int64_t tokens) const {
  if (tokens == 1) return decode_;
  return decide_path(inputs_for(layer_.experts, layer_.stacked, tokens, policy_));
}

DispatchDecision MoeBlock::shared_decision(int64_t tokens) const {
  if (tokens == 1 || !layer_.shared) return shared_decode_;
  return decide_path(inputs_for(layer_.shared->mlp, true, tokens, policy_));
}

void MoeBlock::run(const MoeBlockCall& call, MoeWorkspace& ws, PathCounters* counters) const {
  const MoeExpertsView& ex = layer_.experts;
  const int64_t m = call.tokens, k = call.top_k, din = ex.din();
  if (m <= 0) return;
  if (k < 1 || k > ex.up.experts)
    fail("MoE block: top_k = ", k, "; expected [1, ", ex.up.experts, "]");
  if (call.scores_scale_input && k != 1)
    fail("MoE block: scores that scale the expert input (llama4) need top_k = 1, got ", k);
  for (int64_t p = 0; p < m * k; ++p)
    if (call.expert_ids[p] < 0 || call.expert_ids[p] >= ex.up.experts)
      fail("MoE block: expert id ", call.expert_ids[p], " at pair ", p, " outside [0, ",
           ex.up.experts, ")");

  DispatchDecision prefill;
  if (m != 1) prefill = decision(m);
  const DispatchDecision& d = m == 1 ? decode_ : prefill;
  if (counters) counters->record(d, ExpertSite::kRouted);
  if (d.path == Path::kFused) {
    const float* x = call.x;
    const float* scores = call.scores;
    if (call.scores_scale_input) {  // top_k == 1: expert(x * s), output weight 1
      float* xs = ws.floats(kScaledX, din);
      for (int64_t h = 0; h < din; ++h) xs[h] = call.x[h] * call.scores[0];
      float* one = ws.floats(kOnes, 1);
      one[0] = 1.f;
      x = xs;
      scores = one;
    }
    run_fused(ex, x, call.expert_ids, scores, int(k), ws, call.out);
  } else {
    run_fallback(ex, call, call.expert_ids, call.scores, ws, call.out);
  }
  if (layer_.shared) run_shared(call, ws, counters);
}

void MoeBlock::run_fused(const MoeExpertsView& ex, const float* x, const int32_t* ids,
                         const float* scores, int top_k, MoeWorkspace& ws, float* out) const {
  kernels::FusedDecodeArgs a;
  a.experts = &ex;
  a.x = x;
  a.expert_ids = ids;
  a.scores = scores;
  a.top_k = top_k;
  a.act = ws.floats(kGateOut, top_k * ex.dff());
  a.partials = ws.floats(kUpOut, top_k * ex.din());
  a.out = out;
  kernels::moe_decode_fused(a);
}

// mlx-lm SwitchGLU: (sort pairs by expert) -> gather_qmm up, gate -> activation ->
// gather_qmm down -> (unsort) -> score-weighted sum over k.
void MoeBlock::run_fallback(const MoeExpertsView& ex, const MoeBlockCall& call, const int32_t* ids,
                            const float* scores, MoeWorkspace& ws, float* out) const {
  const int64_t m = call.tokens, k = call.top_k, pairs = m * k;
  const int64_t din = ex.din(), dff = ex.dff(), experts = ex.up.experts;
  const bool sorted = pairs >= kSortPairsThreshold;
  int32_t* lhs = ws.ints(kLhs, pairs);
  const int32_t* rhs = ids;
  int32_t* order = nullptr;
  if (sorted) {
    // Stable counting sort of the pairs by expert: the order of MLX's argsort (stable, ties by
    // position). order[i] = the pair at sorted position i.
    int32_t* counts = ws.ints(kCounts, experts + 1);
    std::fill(counts, counts + experts + 1, 0);
    for (int64_t p = 0; p < pairs; ++p) ++counts[ids[p] + 1];
    for (int64_t e = 0; e < experts; ++e) counts[e + 1] += counts[e];
    order = ws.ints(kOrder, pairs);
    for (int64_t p = 0; p < pairs; ++p) order[counts[ids[p]]++] = int32_t(p);
    int32_t* rhs_sorted = ws.ints(kRhs, pairs);
    for (int64_t i = 0; i < pairs; ++i) {
      rhs_sorted[i] = ids[order[i]];
      lhs[i] = int32_t(order[i] / k);
    }
    rhs = rhs_sorted;
  } else {
    for (int64_t p = 0; p < pairs; ++p) lhs[p] = int32_t(p / k);
  }

  // The gathered input: x rows by token, or (llama4) one scaled copy per pair.
  const float* x = call.x;
  int64_t x_rows = m;
  const int32_t* x_index = lhs;
  const float* sum_scores = scores;
  if (call.scores_scale_input) {
    float* xs = ws.floats(kScaledX, pairs * din);
    for (int64_t i = 0; i < pairs; ++i) {
      const int64_t p = sorted ? order[i] : i;
      const float s = scores[p];
      const float* xr = call.x + (p / k) * din;
      for (int64_t h = 0; h < din; ++h) xs[i * din + h] = xr[h] * s;
    }
    x = xs;
    x_rows = pairs;
    x_index = nullptr;
    float* ones = ws.floats(kOnes, pairs);
    std::fill(ones, ones + pairs, 1.f);
    sum_scores = ones;
  }

  float* up_out = ws.floats(kUpOut, pairs * dff);
  gather(ex.up, x, x_rows, x_index, rhs, pairs, up_out);
  add_expert_bias(up_out, ex.up_bias, rhs, pairs, dff);
  float* gate_out = nullptr;
  if (ex.act != kernels::Activation::kSquaredReLU) {
    gate_out = ws.floats(kGateOut, pairs * dff);
    gather(ex.gate, x, x_rows, x_index, rhs, pairs, gate_out);
    add_expert_bias(gate_out, ex.gate_bias, rhs, pairs, dff);
  }
  kernels::ActivationArgs act;
  act.act = ex.act;
  act.gate = gate_out;
  act.up = up_out;
  act.rows = pairs;
  act.n = dff;
  act.out = up_out;
  kernels::apply_activation(act);

  float* y = ws.floats(kDownOut, pairs * din);
  gather(ex.down, up_out, pairs, nullptr, rhs, pairs, y);
  add_expert_bias(y, ex.down_bias, rhs, pairs, din);
  if (sorted) {  // scatter back to (token, k) order
    float* unsorted = ws.floats(kUnsorted, pairs * din);
    parallel_for(pairs, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        std::memcpy(unsorted + int64_t(order[i]) * din, y + i * din, size_t(din) * sizeof(float));
    });
    y = unsorted;
  }
  kernels::WeightedSumArgs ws_args;
  ws_args.y = y;
  ws_args.scores = sum_scores;
  ws_args.tokens = m;
  ws_args.top_k = int(k);
  ws_args.n = din;
  ws_args.out = out;
  kernels::weighted_sum(ws_args);
}

// out[m] += g_m * shared(x[m]), g_m = sigmoid(gate . x[m]) or 1.
void MoeBlock::run_shared(const MoeBlockCall& call, MoeWorkspace& ws,
                          PathCounters* counters) const {
  const SharedExpert& sh = *layer_.shared;
  const MoeExpertsView& mlp = sh.mlp;
  const int64_t m = call.tokens, din = mlp.din(), dff = mlp.dff();
  int32_t* zeros = ws.ints(kZeros, m);
  std::fill(zeros, zeros + m, 0);

  float* g = ws.floats(kSharedGate, m);
  if (sh.sigmoid_gate) {
    for (int64_t t = 0; t < m; ++t) {
      float dot = 0.f;
      for (int64_t h = 0; h < din; ++h) dot += sh.sigmoid_gate[h] * call.x[t * din + h];
      g[t] = router_sigmoid(dot);
    }
  } else if (sh.sigmoid_gate_quant) {
    gather(*sh.sigmoid_gate_quant, call.x, m, nullptr, zeros, m, g);
    for (int64_t t = 0; t < m; ++t) g[t] = router_sigmoid(g[t]);
  } else {
    std::fill(g, g + m, 1.f);
  }

  DispatchDecision prefill;
  if (m != 1) prefill = shared_decision(m);
  const DispatchDecision& d = m == 1 ? shared_decode_ : prefill;
  if (counters) counters->record(d, ExpertSite::kShared);
  float* y = ws.floats(kSharedOut, m * din);
  if (d.path == Path::kFused) {
    run_fused(mlp, call.x, zeros, g, 1, ws, y);
    for (int64_t h = 0; h < din; ++h) call.out[h] += y[h];
    return;
  }
  float* up_out = ws.floats(kUpOut, m * dff);
  gather(mlp.up, call.x, m, nullptr, zeros, m, up_out);
  float* gate_out = nullptr;
  if (mlp.act != kernels::Activation::kSquaredReLU) {
    gate_out = ws.floats(kGateOut, m * dff);
    gather(mlp.gate, call.x, m, nullptr, zeros, m, gate_out);
  }
  kernels::ActivationArgs act;
  act.act = mlp.act;
  act.gate = gate_out;
  act.up = up_out;
  act.rows = m;
  act.n = dff;
  act.out = up_out;
  kernels::apply_activation(act);
  gather(mlp.down, up_out, m, nullptr, zeros, m, y);
  for (int64_t t = 0; t < m; ++t)
    for (int64_t h = 0; h < din; ++h) call.out[t * din + h] += g[t] * y[t * din + h];
}

}  // namespace moex::moe
