// The attention mixer (grouped-query attention with the families' variants: q/k norms before
// or after RoPE, Gemma-4's value norm and keys-as-values, Qwen3-Next's output gate,
// Llama-4's query temperature, sliding windows, chunked attention, sinks) and its scratch.
#include <algorithm>
#include <cmath>

#include "backend/kv_cache_type.h"
#include "model/engine/attention_mixer.h"

namespace moex::model::engine {

void AttentionScratch::ensure(const backend::ModelBackend& be, const ModelConfig& cfg,
                              int64_t n) {
  int64_t q_dim = cfg.q_dim(), kv_dim = cfg.kv_dim();
  bool gated = false;
  for (int64_t i = 0; i < cfg.num_layers; ++i) {
    q_dim = std::max(q_dim, cfg.layer_q_dim(i));
    kv_dim = std::max(kv_dim, cfg.layer_kv_dim(i));
    const LayerPlan& l = cfg.layers[size_t(i)];
    gated |= l.mixer == MixerKind::kAttention && l.attn_output_gate;
  }
  if (gated) {
    grow(be, qg, n * 2 * q_dim);
    grow(be, gate, n * q_dim);
  }
  grow(be, q, n * q_dim);
  grow(be, att, n * q_dim);
  grow(be, k, n * kv_dim);
  grow(be, v, n * kv_dim);
}

AttentionMixer::AttentionMixer(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t layer,
                               const AttentionWeights& w, const ops::Rope& rope,
                               AttentionScratch& s)
    : be_(be), cfg_(cfg), plan_(cfg.layers[size_t(layer)]), layer_(layer), w_(w), rope_(rope),
      s_(s) {}

void AttentionMixer::init_state(Sequence& seq, int64_t context) const {
  seq.kv_cache(layer_) = be_.new_kv_cache(cfg_.layer_kv_heads(layer_),
                                          cfg_.layer_head_dim(layer_), context, true,
                                          backend::kv_cache_type());
}

// q/k RMSNorm: per head or over the full width with weights, before RoPE (Qwen3, OLMoE,
// LFM2); per head after RoPE, without weights (Llama-4) or with them (Hunyuan).
void AttentionMixer::qk_norm(float* q, float* k, int64_t n, bool after_rope) const {
  if (!plan_.qk_norm || cfg_.qk_norm == QkNormKind::kNone) return;
  const bool weighted = cfg_.qk_norm != QkNormKind::kPerHeadNoWeight;
  const bool late = !weighted || cfg_.qk_norm == QkNormKind::kPerHeadAfterRope;
  if (late != after_rope) return;
  const float eps = float(cfg_.qk_norm_eps);
  const bool per_head = cfg_.qk_norm != QkNormKind::kFullWidth;
  const int64_t hd = cfg_.layer_head_dim(layer_), kvh = cfg_.layer_kv_heads(layer_);
  be_.rms_norm({.x = q, .out = q, .weight = weighted ? w_.q_norm.data() : nullptr,
                .rows = per_head ? n * cfg_.heads : n, .dim = per_head ? hd : cfg_.heads * hd,
                .eps = eps});
  be_.rms_norm({.x = k, .out = k, .weight = weighted ? w_.k_norm.data() : nullptr,
                .rows = per_head ? n * kvh : n, .dim = per_head ? hd : kvh * hd, .eps = eps});
}

void AttentionMixer::forward(const MixerStep& step) {
  const int64_t n = step.n;
  const ops::Linear* qkv[] = {&w_.q, &w_.k, &w_.v};
  const bool gated = plan_.attn_output_gate;
  float* qkv_out[] = {gated ? s_.qg.data() : s_.q.data(), s_.k.data(), s_.v.data()};
  const int64_t hd = cfg_.layer_head_dim(layer_), kv_dim = cfg_.layer_kv_dim(layer_);
  const int64_t q_dim = cfg_.layer_q_dim(layer_);
  be_.linear_same_input(qkv, qkv_out, plan_.values_from_keys ? 2 : 3, step.x, n);
  if (gated)  // per head: head_dim query features, then head_dim gate features
    be_.split_halves(s_.qg.data(), s_.q.data(), s_.gate.data(), n * cfg_.heads, hd);
  // Gemma-4's full layers: the values are the raw (un-normed, un-rotated) k_proj output.
  if (plan_.values_from_keys) be_.copy(s_.v.data(), s_.k.data(), n * kv_dim);
  step.clock.lap(DecodeOp::kAttentionProjections);
  if (plan_.value_norm)  // RMSNorm over head_dim without a weight (mlx-lm RMSNormNoScale)
    be_.rms_norm({.x = s_.v.data(), .out = s_.v.data(), .weight = nullptr,
                  .rows = n * cfg_.layer_kv_heads(layer_), .dim = hd,
                  .eps = float(cfg_.qk_norm_eps)});
  qk_norm(s_.q.data(), s_.k.data(), n, false);
  for (const SequenceRows& s : step.segments) attend(s);
  if (gated) be_.sigmoid_gate(s_.att.data(), s_.gate.data(), n * q_dim);  // out * sigmoid(gate)
  step.clock.lap(DecodeOp::kAttentionCore);
  be_.linear({.lin = &w_.o, .x = s_.att.data(), .rows = n, .out = step.out});
  step.clock.lap(DecodeOp::kAttentionProjections);
}

// One sequence's rows: RoPE at their positions, the late q/k norm, Llama-4's temperature,
// then its KV cache and attention.
void AttentionMixer::attend(const SequenceRows& s) {
  const int64_t hd = cfg_.layer_head_dim(layer_), n = s.rows, pos0 = s.seq->position();
  const int64_t q_dim = cfg_.layer_q_dim(layer_), kv_dim = cfg_.layer_kv_dim(layer_);
  float* q = s_.q.data() + s.row0 * q_dim;
  float* k = s_.k.data() + s.row0 * kv_dim;
  const float* v = s_.v.data() + s.row0 * kv_dim;
  if (plan_.use_rope && cfg_.layer_rope(layer_).kind != RopeKind::kNone) {
    be_.rope(rope_, q, n, cfg_.heads, hd, pos0);
    be_.rope(rope_, k, n, cfg_.layer_kv_heads(layer_), hd, pos0);
  }
  qk_norm(q, k, n, true);
  if (plan_.attn_temperature)  // Llama-4 NoPE layers
    be_.query_temperature({.q = q, .rows = n, .width = q_dim, .pos0 = pos0,
                           .floor_scale = float(cfg_.attn_temperature_floor_scale),
                           .attn_scale = float(cfg_.attn_temperature_scale)});
  ops::KvCache& cache = s.seq->kv_cache(layer_);
  be_.kv_append(cache, k, v, n);
  const float scale = cfg_.attn_scale > 0 ? float(cfg_.attn_scale) : 1.f / std::sqrt(float(hd));
  be_.attention({.q = q, .cache = &cache, .rows = n, .pos0 = pos0, .heads = cfg_.heads,
                 .scale = scale, .out = s_.att.data() + s.row0 * q_dim,
                 .chunk = plan_.chunked_attention ? cfg_.attention_chunk_size : 0,
                 .window = plan_.sliding_window,
                 .sinks = w_.sinks.empty() ? nullptr : w_.sinks.data()});
}

}  // namespace moex::model::engine
