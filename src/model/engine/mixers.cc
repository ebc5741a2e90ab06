// The mixers other than attention, as the Mixer interface: the recurrent ones (LFM2's short
// conv, Gated DeltaNet, Mamba-2: one call per sequence over its rows and state) and
// multi-head latent attention; make_mixer, the factory from the layer plan.
#include <memory>
#include <utility>

#include "model/engine/attention_mixer.h"
#include "model/engine/mixer.h"

namespace moex::model::engine {
namespace {

// A mixer whose layer runs each sequence's rows over that sequence's recurrent state:
// Layer::forward(x, rows, out, state, scratch) and Layer::state_size().
template <class Layer, class Scratch>
class RecurrentMixer final : public Mixer {
 public:
  RecurrentMixer(const backend::ModelBackend& be, std::unique_ptr<Layer> layer, int64_t index,
                 int64_t hidden, Scratch& scratch, DecodeOp op)
      : be_(be), layer_(std::move(layer)), index_(index), hidden_(hidden), scratch_(scratch),
        op_(op) {}

  void forward(const MixerStep& step) override {
    const int64_t H = hidden_;
    for (const SequenceRows& s : step.segments)
      layer_->forward(step.x + s.row0 * H, s.rows, step.out + s.row0 * H,
                      s.seq->recurrent_state(index_).data(), scratch_);
    step.clock.lap(op_);
  }
  void init_state(Sequence& seq, int64_t) const override {
    ActivationBuffer& state = seq.recurrent_state(index_);
    state = ActivationBuffer();
    state.grow(be_, layer_->state_size());  // zero-filled
  }

 private:
  const backend::ModelBackend& be_;
  std::unique_ptr<Layer> layer_;
  int64_t index_, hidden_;
  Scratch& scratch_;
  DecodeOp op_;
};

// Multi-head latent attention: projections over all rows, the cache and attention per
// sequence, the output projections over all rows.
class MlaMixer final : public Mixer {
 public:
  MlaMixer(std::unique_ptr<Mla> mla, int64_t index, MlaScratch& scratch)
      : mla_(std::move(mla)), index_(index), scratch_(scratch) {}

  void forward(const MixerStep& step) override {
    mla_->project(step.x, step.n, scratch_);
    step.clock.lap(DecodeOp::kAttentionProjections);
    for (const SequenceRows& s : step.segments)
      mla_->attend(s.row0, s.rows, s.seq->position(), s.seq->kv_cache(index_), scratch_);
    step.clock.lap(DecodeOp::kAttentionCore);
    mla_->output(step.n, step.out, scratch_);
    step.clock.lap(DecodeOp::kAttentionProjections);
  }
  void init_state(Sequence& seq, int64_t context) const override {
    seq.kv_cache(index_) = mla_->new_cache(context);
  }

 private:
  std::unique_ptr<Mla> mla_;
  int64_t index_;
  MlaScratch& scratch_;
};

}  // namespace

std::unique_ptr<Mixer> make_mixer(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t layer,
                                  const LayerWeights& w, const ops::Rope& rope,
                                  MixerScratch& s) {
  const int64_t H = cfg.hidden;
  switch (cfg.layers[size_t(layer)].mixer) {
    case MixerKind::kAttention:
      return std::make_unique<AttentionMixer>(be, cfg, layer, w.attn, rope, s.attention);
    case MixerKind::kShortConv:
      return std::make_unique<RecurrentMixer<ShortConv, ShortConvScratch>>(
          be, std::make_unique<ShortConv>(be, w.conv, H, cfg.conv_kernel), layer, H, s.conv,
          DecodeOp::kShortConv);
    case MixerKind::kGatedDeltaNet:
      return std::make_unique<RecurrentMixer<GatedDeltaNet, GatedDeltaNetScratch>>(
          be, std::make_unique<GatedDeltaNet>(be, w.gdn, cfg.gdn, H, cfg.norm_eps), layer, H, s.gdn,
          DecodeOp::kLinearAttention);
    case MixerKind::kMamba2:
      return std::make_unique<RecurrentMixer<Mamba2Mixer, Mamba2Scratch>>(
          be, std::make_unique<Mamba2Mixer>(be, w.mamba, cfg.mamba, cfg.norm_eps), layer, H,
          s.mamba, DecodeOp::kStateSpace);
    case MixerKind::kMla:
      return std::make_unique<MlaMixer>(
          std::make_unique<Mla>(be, w.mla, cfg.mla, cfg.heads, float(cfg.attn_scale), rope),
          layer, s.mla);
    case MixerKind::kNone:
      return nullptr;
  }
  return nullptr;
}

int64_t MixerScratch::bytes() const {
  int64_t total = 0;
  auto add = [&](const ActivationBuffer& v) { total += int64_t(v.capacity() * sizeof(float)); };
  for (const auto* v :
       {&attention.q, &attention.k, &attention.v, &attention.att, &attention.qg, &attention.gate,
        &conv.bcx, &conv.padded, &conv.y, &gdn.proj, &gdn.proj_ba, &gdn.padded, &gdn.q, &gdn.k,
        &gdn.v, &gdn.z, &gdn.b, &gdn.a, &gdn.y, &mamba.proj, &mamba.padded, &mamba.x, &mamba.b,
        &mamba.c, &mamba.dt, &mamba.y, &mla.qa, &mla.q, &mla.kv, &mla.nope, &mla.qabs, &mla.pe,
        &mla.kpe, &mla.qcat, &mla.cache_rows, &mla.latent_out, &mla.heads_out})
    add(*v);
  return total;
}

}  // namespace moex::model::engine
