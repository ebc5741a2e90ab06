// MoeFfn: router logits, routing, then the moe library's MoeBlock.
#include "model/engine/moe_ffn.h"

#include <algorithm>

#include "core/error.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/softmax.h"

namespace moex::model::engine {

moe::RouterConfig router_config_for(const ModelConfig& c, const MoeWeights& w) {
  // The family's arch file filled the rule (ModelConfig::moe.router); the tensors it names
  // (a selection bias, a per-expert scale) come from the checkpoint.
  moe::RouterConfig r = c.moe.router;
  r.num_experts = c.moe.num_experts;
  r.top_k = c.moe.top_k;
  r.expert_bias = w.expert_bias;
  if (c.moe.router_expert_scale) {
    if (int64_t(w.expert_scale.size()) != c.moe.num_experts)
      fail(c.source, ": router ", moe::router_summary(r), " needs a per-expert scale of ",
           c.moe.num_experts, " entries, got ", w.expert_scale.size());
    r.expert_scale = w.expert_scale;
  }
  return r;
}

MoeFfn::MoeFfn(const backend::ModelBackend& be, const ModelConfig& cfg, const MoeWeights& w,
               int64_t layer, const moe::MoePolicy& policy, std::optional<ExpertParallelLayer> ep)
    : be_(be),
      cfg_(cfg), w_(w), layer_(layer), router_(router_config_for(cfg, w)), ep_(std::move(ep)) {
  if (ep_ && (int64_t(ep_->owned.size()) != cfg.moe.num_experts ||
              int64_t(ep_->owner.size()) != cfg.moe.num_experts || !ep_->collective))
    fail("MoE layer ", layer, ": expert-parallel share of ", ep_->owned.size(), " experts for a ",
         cfg.moe.num_experts, "-expert layer");
  layer_views_.experts = w.experts;
  layer_views_.experts.gate_bias = w.gate_bias.data();
  layer_views_.experts.up_bias = w.up_bias.data();
  layer_views_.experts.down_bias = w.down_bias.data();
  // Per-expert checkpoints were stacked at load: the kernels always see 3-D stacks.
  layer_views_.stacked = true;
  for (const kernels::QuantWeightsView* q : {&w.experts.gate, &w.experts.up, &w.experts.down})
    if (q->w) bytes_per_expert_ += q->n * q->format().row_bytes_with_scales(q->k);
  if (w.has_shared) {
    // The shared expert runs in the MoeBlock as a 1-expert layer, in whatever format it is
    // stored (the row kernels take every format, unquantized included).
    const MlpWeights& s = w.shared;
    shared_.mlp.gate = ops::as_one_expert(s.gate.w);
    shared_.mlp.up = ops::as_one_expert(s.up.w);
    shared_.mlp.down = ops::as_one_expert(s.down.w);
    shared_.mlp.act = kernel_activation(cfg.moe.shared_activation);  // relu2: no gate
    if (w.shared_gate.w.valid()) {
      shared_gate_ = ops::as_one_expert(w.shared_gate.w);
      shared_.sigmoid_gate = &shared_gate_;
    }
    layer_views_.shared = &shared_;
  }
  set_policy(policy);
}

void MoeFfn::set_policy(const moe::MoePolicy& policy) {
  if (block_)
    block_->set_policy(policy);  // the experts stay where the backend put them
  else
    block_ = std::make_unique<moe::MoeBlock>(layer_views_, policy);
}

std::optional<moe::DispatchDecision> MoeFfn::shared_decision(int64_t tokens) const {
  if (!w_.has_shared) return std::nullopt;
  return block_->shared_decision(tokens);
}

void MoeFfn::forward(const float* x, int64_t n, float* out, moe::PathCounters& counters,
                     MoeFfnScratch& s) {
  const int64_t e = cfg_.moe.num_experts, k = cfg_.moe.top_k;
  // Grow only: resize() never shrinks capacity, so a decode step after a prefill reuses it.
  if (s.logits.size() < size_t(n * e)) s.logits.resize(size_t(n * e));
  if (s.ids.size() < size_t(n * k)) s.ids.resize(size_t(n * k));
  if (s.scores.size() < size_t(n * k)) s.scores.resize(size_t(n * k));
  const int64_t H = cfg_.hidden;
  const float eps = float(cfg_.norm_eps);
  const float* router_x = x;
  if (!w_.router_norm.empty()) {
    if (s.router_in.size() < size_t(n * H)) s.router_in.resize(size_t(n * H));
    be_.rms_norm({.x = x, .out = s.router_in.data(), .weight = w_.router_norm.data(), .rows = n,
                  .dim = H, .eps = eps});
    router_x = s.router_in.data();
  }
  if (input_is_raw()) {
    if (s.experts_in.size() < size_t(n * H)) s.experts_in.resize(size_t(n * H));
    be_.rms_norm({.x = x, .out = s.experts_in.data(),
                  .weight = w_.experts_in_norm.weight.data(), .rows = n, .dim = H, .eps = eps});
    x = s.experts_in.data();
  }
  be_.linear({.lin = &w_.router, .x = router_x, .rows = n, .out = s.logits.data()});
  router_.route(s.logits.data(), n, s.ids.data(), s.scores.data());
  if (tally_) tally_->add(s.logits.data(), s.ids.data(), n, k);
  s.expert_seen.assign(size_t(e), 0);
  int64_t distinct = 0;  // that this process runs
  for (int64_t i = 0; i < n * k; ++i) {
    const int32_t id = s.ids[size_t(i)];
    uint8_t& seen = s.expert_seen[size_t(id)];
    if (!seen && ep_) {
      const size_t r = size_t(ep_->owner[size_t(id)]);
      if (s.rank_experts.size() <= r) s.rank_experts.resize(r + 1);
      ++s.rank_experts[r];
    }
    distinct += !seen && (!ep_ || ep_->owned[size_t(id)]);
    seen = 1;
  }
  counters.record_expert_reads(distinct, distinct * bytes_per_expert_);
  moe::MoeBlockCall call;
  call.x = x;
  call.tokens = n;
  call.expert_ids = s.ids.data();
  call.scores = s.scores.data();
  call.top_k = int(k);
  call.scores_scale_input = !router_.config().scores_scale_output();
  call.out = out;
  if (ep_)
    run_expert_parallel(call, counters, s);
  else
    block_->run(call, s.block, &counters);
  if (!w_.experts_out_norm.weight.empty())
    be_.rms_norm({.x = out, .out = out, .weight = w_.experts_out_norm.weight.data(), .rows = n,
                  .dim = H, .eps = eps});
}

// This rank's pairs (and the shared term on its rank), exchanged in one allgather; then every
// rank puts each pair's output in (token, k) order from its owner's block and combines them.
void MoeFfn::run_expert_parallel(const moe::MoeBlockCall& call, moe::PathCounters& counters,
                                 MoeFfnScratch& s) {
  const int64_t n = call.tokens, k = call.top_k, H = cfg_.hidden;
  const int ranks = ep_->collective->size(), me = ep_->collective->rank();
  const bool shared = w_.has_shared;
  s.ep_counts.assign(size_t(ranks), 0);
  for (int64_t q = 0; q < n * k; ++q) s.ep_counts[size_t(ep_->owner[size_t(call.expert_ids[q])])] += H;
  const int64_t my_pairs = s.ep_counts[size_t(me)] / H;
  if (shared) s.ep_counts[size_t(ep_->shared_rank)] += n * H;
  s.ep_mine.resize(size_t(s.ep_counts[size_t(me)]));
  block_->run_owned_pairs(call, ep_->owned.data(), s.ep_mine.data(), s.block, &counters);
  if (shared && ep_->runs_shared())
    block_->run_shared_term(call, s.ep_mine.data() + my_pairs * H, s.block, &counters);
  ep_->collective->allgather(s.ep_mine.data(), s.ep_counts, s.ep_all);
  s.ep_next.assign(size_t(ranks), 0);
  for (int r = 1; r < ranks; ++r)
    s.ep_next[size_t(r)] = s.ep_next[size_t(r - 1)] + s.ep_counts[size_t(r - 1)];
  s.ep_pairs.resize(size_t(n * k * H));
  for (int64_t q = 0; q < n * k; ++q) {
    int64_t& at = s.ep_next[size_t(ep_->owner[size_t(call.expert_ids[q])])];
    std::copy_n(s.ep_all.data() + at, H, s.ep_pairs.data() + q * H);
    at += H;
  }
  block_->combine_pairs(call, s.ep_pairs.data(), s.block);
  if (shared) {  // what run() adds last: its owner's block ends with it
    const float* term = s.ep_all.data() + s.ep_next[size_t(ep_->shared_rank)];
    be_.add_scaled(call.out, term, n * H, 1.f);
  }
}

}  // namespace moex::model::engine
