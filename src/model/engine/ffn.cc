// The dense and MoE feed-forward halves behind the Ffn interface (ffn.h).
#include "model/engine/ffn.h"

#include <algorithm>

#include "core/sysinfo.h"
#include "model/engine/policy_control.h"
#include "model/engine/scratch_grow.h"

namespace moex::model::engine {

void FfnScratch::ensure(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t n) {
  int64_t dff = cfg.dense_dff;
  bool parallel_dense = false;
  for (const LayerPlan& l : cfg.layers) {
    dff = std::max({dff, l.ffn_dff, l.parallel_dense_dff});
    parallel_dense |= l.parallel_dense_dff > 0;
  }
  grow(be, gate, n * dff);
  grow(be, up, n * dff);
  if (parallel_dense) grow(be, branch, n * cfg.hidden);
}

int64_t FfnScratch::bytes() const {
  int64_t total = moe.block.bytes();
  auto add = [&](const auto& v) { total += int64_t(v.capacity() * sizeof(*v.data())); };
  for (const auto* v : {&gate, &up, &branch}) add(*v);
  for (const auto* v : {&moe.logits, &moe.scores, &moe.router_in, &moe.experts_in, &moe_host_in,
                        &moe_host_out})
    add(*v);
  add(moe.ids);
  return total;
}

void apply_norm(const backend::ModelBackend& be, const ModelConfig& cfg, const NormWeights& w,
                const float* x, float* out, int64_t rows) {
  if (cfg.norm == NormKind::kLayerNorm) {
    be.layer_norm({.x = x, .out = out, .weight = w.weight.data(), .bias = w.bias.data(),
                   .rows = rows, .dim = cfg.hidden, .eps = float(cfg.norm_eps)});
  } else {
    be.rms_norm({.x = x, .out = out, .weight = w.weight.data(), .rows = rows, .dim = cfg.hidden,
                 .eps = float(cfg.norm_eps)});
  }
}

namespace {

// down(act(gate(x), up(x))); relu2 (Nemotron-H): down(relu(up(x))^2), no gate projection.
void dense_mlp(const backend::ModelBackend& be, const MlpWeights& m, kernels::Activation act,
               const float* x, int64_t n, float* out, FfnScratch& s) {
  if (!m.gate.w.valid()) {
    const int64_t dff = m.up.w.n();
    be.linear({.lin = &m.up, .x = x, .rows = n, .out = s.up.data()});
    be.gated_activation(kernels::Activation::kSquaredReLU, nullptr, s.up.data(), s.up.data(),
                        n * dff);
    be.linear({.lin = &m.down, .x = s.up.data(), .rows = n, .out = out});
    return;
  }
  const int64_t dff = m.gate.w.n();
  const ops::Linear* gate_up[] = {&m.gate, &m.up};
  float* gate_up_out[] = {s.gate.data(), s.up.data()};
  be.linear_same_input(gate_up, gate_up_out, 2, x, n);
  be.gated_activation(act, s.gate.data(), s.up.data(), s.gate.data(), n * dff);
  be.linear({.lin = &m.down, .x = s.gate.data(), .rows = n, .out = out});
}

class DenseFfn final : public Ffn {
 public:
  DenseFfn(const backend::ModelBackend& be, const MlpWeights& w, kernels::Activation act,
           FfnScratch& s)
      : be_(be), w_(w), act_(act), s_(s) {}
  void forward(const FfnCall& c) override { dense_mlp(be_, w_, act_, c.normed, c.n, c.out, s_); }
  DecodeOp op() const override { return DecodeOp::kDenseMlp; }

 private:
  const backend::ModelBackend& be_;
  const MlpWeights& w_;
  kernels::Activation act_;
  FfnScratch& s_;
};

// The backend the MoE block's own ops run on: the model's when its memory is the host's, else
// the CPU backend (the MoE backends take host activations, moe/moe_backend.h): the block then
// runs on host copies of its input and output.
const backend::ModelBackend& moe_host_backend(const backend::ModelBackend& be) {
  return be.memory() == backend::Memory::kHost ? be : backend::cpu_backend();
}

class MoeLayerFfn final : public Ffn {
 public:
  MoeLayerFfn(const FfnParts& p, std::optional<ExpertParallelLayer> ep)
      : be_(p.be), cfg_(p.cfg), layer_(p.layer), w_(p.weights), policy_(p.policy), s_(p.scratch),
        moe_(moe_host_backend(p.be), p.cfg, p.weights.moe, p.layer,
             p.policy.policy_for(p.experts), std::move(ep)),
        on_host_(&moe_host_backend(p.be) != &p.be),
        parallel_dense_(p.cfg.layers[size_t(p.layer)].parallel_dense_dff > 0),
        dense_act_(kernel_activation(p.cfg.dense_activation)) {}

  // Gemma-4: a dense MLP on the normed input beside the experts, its output normed, the two
  // branches added; the experts' block then normalizes the raw residual itself.
  void forward(const FfnCall& c) override {
    float* moe_out = c.out;
    if (parallel_dense_) {
      dense_mlp(be_, w_.dense, dense_act_, c.normed, c.n, c.out, s_);
      if (!w_.dense_out_norm.weight.empty())
        apply_norm(be_, cfg_, w_.dense_out_norm, c.out, c.out, c.n);
      moe_out = s_.branch.data();
    }
    const float* in = moe_.input_is_raw() ? c.raw : c.normed;
    const int64_t bytes = c.n * cfg_.hidden * int64_t(sizeof(float));
    float* out = moe_out;
    if (on_host_) {  // the block's input and output through host copies
      s_.moe_host_in.resize(size_t(c.n * cfg_.hidden));
      s_.moe_host_out.resize(size_t(c.n * cfg_.hidden));
      be_.download(s_.moe_host_in.data(), in, bytes);
      in = s_.moe_host_in.data();
      out = s_.moe_host_out.data();
    }
    const bool timed = policy_.timing(c.n);
    const double t0 = timed ? now_seconds() : 0;
    moe_.forward(in, c.n, out, *c.counters, s_.moe);
    if (timed) policy_.record(layer_, now_seconds() - t0);
    if (on_host_) be_.upload(moe_out, out, bytes);
    if (moe_out != c.out) be_.add_scaled(c.out, moe_out, c.n * cfg_.hidden, 1.f);
  }
  DecodeOp op() const override { return DecodeOp::kMoe; }
  MoeFfn* moe() override { return &moe_; }

 private:
  const backend::ModelBackend& be_;
  const ModelConfig& cfg_;
  int64_t layer_;
  const LayerWeights& w_;
  PolicyControl& policy_;
  FfnScratch& s_;
  MoeFfn moe_;
  bool on_host_;  // the model's backend keeps activations off the host
  bool parallel_dense_;
  kernels::Activation dense_act_;  // of the parallel dense MLP
};

}  // namespace

std::unique_ptr<Ffn> make_ffn(const FfnParts& p, std::optional<ExpertParallelLayer> ep) {
  switch (p.cfg.layers[size_t(p.layer)].ffn) {
    case FfnKind::kNone:
      return nullptr;
    case FfnKind::kDense:
      return std::make_unique<DenseFfn>(p.be, p.weights.dense,
                                        kernel_activation(p.cfg.dense_activation), p.scratch);
    case FfnKind::kMoe:
      return std::make_unique<MoeLayerFfn>(p, std::move(ep));
  }
  return nullptr;
}

}  // namespace moex::model::engine
