// The engine's multi-token-prediction module (mtp_module.h): loading it beside the main model,
// its sequences, its forward pass over rows of (next token, main hidden state), and the capture
// of the main model's final hidden states that feed it.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "model/engine/engine.h"

namespace moex::model::engine {

void Engine::open_mtp() {
  if (ep_) fail("--spec mtp: the multi-token-prediction module does not run with expert "
                "parallelism");
  if (be_->memory() != backend::Memory::kHost)
    fail("--spec mtp: the multi-token-prediction module runs on the CPU backend only");
  auto m = std::make_unique<MtpModule>();
  m->plan = mtp_module_plan(dir_, cfg_,
                            [&](const std::string& t) { return binder_->has(t); });
  const ModelConfig& mc = m->plan.cfg;
  // Whether the module's norms are stored zero-centred is the main model's layout's call
  // (a module whose layer is dense has no experts to tell).
  ModelConfig bind_cfg = mc;
  bind_cfg.hf_layout_norms_plus_one = false;
  m->w = bind_model_weights(bind_cfg, *binder_);
  const int64_t H = cfg_.hidden;
  m->enorm.weight = binder_->vector(m->plan.enorm + ".weight", H);
  m->hnorm.weight = binder_->vector(m->plan.hnorm + ".weight", H);
  if (norms_stored_zero_centred(cfg_, w_)) {
    add_one_to_decoder_norms(mc, *binder_, m->w);
    add_one_to_norm(m->enorm.weight, *binder_, m->plan.enorm);
    add_one_to_norm(m->hnorm.weight, *binder_, m->plan.hnorm);
  }
  m->eh_proj = binder_->linear(m->plan.eh_proj, H, 2 * H, BiasMode::kNone);
  place_small_weights(*be_, m->w);
  m->rope = layer_rope(mc, 0);
  m->policy = std::make_unique<PolicyControl>(policy_->policy());
  m->mixer = make_mixer(*be_, mc, 0, m->w.layers[0], m->rope, mixer_scratch_);
  if (!m->mixer) fail("--spec mtp: ", dir_, ": the module's layer has no attention");
  m->ffn = make_ffn({.be = *be_, .cfg = mc, .layer = 0, .weights = m->w.layers[0],
                     .policy = *m->policy, .experts = moe::moe_backend(moe::Backend::kCpu),
                     .scratch = ffn_scratch_},
                    std::nullopt);
  mtp_ = std::move(m);
}

std::unique_ptr<Sequence> Engine::new_mtp_sequence() const {
  if (!mtp_) fail("new_mtp_sequence: ", dir_, " was opened without its MTP module");
  auto seq = std::make_unique<Sequence>();
  seq->owner_ = mtp_.get();  // the main forward passes refuse it
  seq->id_ = next_sequence_id_++;
  seq->context_ = context_;
  seq->be_ = be_;
  seq->caches_.resize(1);
  seq->conv_state_.resize(1);
  mtp_->mixer->init_state(*seq, context_);
  return seq;
}

void Engine::capture_rows(int64_t n) {
  const int64_t H = cfg_.hidden;
  const size_t at = hidden_capture_->size();
  hidden_capture_->resize(at + size_t(n * H));
  norm(w_.final_norm, h_.data(), hidden_capture_->data() + at, n);
}

const float* Engine::mtp_forward(Sequence& mseq, const int32_t* next_tokens, const float* hidden,
                                 int64_t n, float* hidden_out) {
  if (!mtp_) fail("mtp_forward: ", dir_, " was opened without its MTP module");
  if (mseq.owner_ != mtp_.get()) fail("mtp_forward: the sequence is not an MTP sequence");
  if (n <= 0) fail("mtp_forward: no rows to run");
  if (mseq.pos_ + n > context_)
    fail("context length exceeded: MTP position ", mseq.pos_, " + ", n, " rows > context ",
         context_, " (model ", dir_, ")");
  check_tokens(next_tokens, n);
  MtpModule& m = *mtp_;
  const int64_t H = cfg_.hidden, V = cfg_.vocab;
  DecodeOpClock clock(nullptr);
  int64_t rows = 0;
  for (int64_t done = 0; done < n; done += rows) {
    rows = std::min(prefill_chunk_, n - done);
    ensure_rows(rows);
    mtp_cat_.resize(size_t(rows * 2 * H));
    // [enorm(embedding of the next token) | hnorm(main hidden state)] per row; the embedding of
    // the row at position 0 is zeros where vLLM's module masks it (DeepSeek, GLM).
    be_->embedding_rows(m.w.embed, next_tokens + done, rows, xn_.data());
    if (cfg_.embedding_scale != 1.0) be_->scale(xn_.data(), rows * H, float(cfg_.embedding_scale));
    if (mseq.pos_ == 0 && m.plan.zero_first_embedding) std::fill(xn_.data(), xn_.data() + H, 0.f);
    norm(m.enorm, xn_.data(), xn_.data(), rows);
    norm(m.hnorm, hidden + done * H, mix_.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      float* cat = mtp_cat_.data() + r * 2 * H;
      std::memcpy(cat, xn_.data() + r * H, size_t(H) * sizeof(float));
      std::memcpy(cat + H, mix_.data() + r * H, size_t(H) * sizeof(float));
    }
    be_->linear({.lin = &m.eh_proj, .x = mtp_cat_.data(), .rows = rows, .out = h_.data()});
    segments_.assign(1, SequenceRows{&mseq, 0, rows});
    run_layer(m.mixer.get(), m.ffn.get(), m.w.layers[0], rows, clock, &m.counters);
    mseq.pos_ += rows;
    if (hidden_out)
      std::memcpy(hidden_out + done * H, h_.data(), size_t(rows * H) * sizeof(float));
  }
  norm(m.w.final_norm, h_.data() + (rows - 1) * H, xn_.data(), 1);
  // A buffer of its own: the main model's last logits stay valid (prefill's, a pass's rows).
  mtp_logits_.grow(*be_, V);
  be_->linear({.lin = &m.w.lm_head, .x = xn_.data(), .rows = 1, .out = mtp_logits_.data()});
  scale_logits(mtp_logits_.data(), 1);
  return mtp_logits_.data();
}

}  // namespace moex::model::engine
