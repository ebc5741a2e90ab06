// Engine: loading (config -> plan -> bound weights) and the forward pass shared by prefill
// and decode: embed -> per layer [norm, attention, residual, norm, FFN, residual] -> final
// norm -> head, for the last row only.
#include "model/engine/engine.h"
#include "model/engine/decode_op_bytes.h"
#include "model/engine/expert_parallel.h"
#include "model/engine/ffn.h"
#include "model/engine/small_weights.h"
#include "model/weight_bytes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/huge_pages.h"
#include "core/sysinfo.h"
#include "io/safetensors.h"
#include "model/family_registry.h"
#include "model/model_checkpoint.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/softmax.h"
#include "moe/calibration.h"
#include "moe/moe_backend.h"
#include "moe/moe_tune.h"

namespace moex::model::engine {

namespace {

ops::RopeSpec rope_spec(const RopeParams& r, int64_t head_dim, int64_t max_position) {
  ops::RopeSpec s;
  s.dims = r.dims > 0 ? r.dims : head_dim;
  s.base = r.theta;
  s.traditional = r.traditional;
  s.factor = r.factor;
  s.low_freq_factor = r.low_freq_factor;
  s.high_freq_factor = r.high_freq_factor;
  s.original_max_position = r.original_max_position;
  s.short_factor = r.short_factor;
  s.long_factor = r.long_factor;
  s.max_position = max_position;
  s.short_mscale = r.short_mscale;
  s.long_mscale = r.long_mscale;
  s.beta_fast = r.beta_fast;
  s.beta_slow = r.beta_slow;
  s.mscale = r.mscale;
  s.mscale_all_dim = r.mscale_all_dim;
  s.rotated_dims = r.rotated_dims;
  switch (r.kind) {
    case RopeKind::kDefault: s.kind = ops::RopeKind::kDefault; break;
    case RopeKind::kLinear: s.kind = ops::RopeKind::kLinear; break;
    case RopeKind::kLlama3: s.kind = ops::RopeKind::kLlama3; break;
    case RopeKind::kLongRope: s.kind = ops::RopeKind::kLongrope; break;
    case RopeKind::kYarn: s.kind = ops::RopeKind::kYarn; break;
    case RopeKind::kDynamic: s.kind = ops::RopeKind::kDynamic; break;
    case RopeKind::kProportional: s.kind = ops::RopeKind::kProportional; break;
    case RopeKind::kNone: break;  // NoPE layers skip rotation; the table is unused
  }
  return s;
}

}  // namespace

ops::Rope layer_rope(const ModelConfig& cfg, int64_t layer) {
  const MixerKind mixer = cfg.layers[size_t(layer)].mixer;
  if (mixer == MixerKind::kAttention)
    return ops::Rope(rope_spec(cfg.layer_rope(layer), cfg.layer_head_dim(layer), cfg.max_position));
  if (mixer == MixerKind::kMla)  // the decoupled key's rope_dim features
    return ops::Rope(rope_spec(cfg.layer_rope(layer), cfg.mla.rope_dim, cfg.max_position));
  return ops::Rope();
}

int64_t Engine::resident_weight_bytes() const {
  int64_t total = 0;
  for (const auto& f : ckpt_.files())
    total += std::max<int64_t>(0, resident_bytes_in(f->mapping(), f->file_size()));
  return total;
}

std::optional<ExpertParallelStats> Engine::expert_parallel_stats() const {
  if (!ep_) return std::nullopt;
  return ep_->stats();
}

void Engine::reset_expert_parallel_stats() {
  if (ep_) ep_->reset_stats();
}

void Engine::lead_followers() {
  if (!ep_) fail("lead_followers: not an expert-parallel engine");
  ep_->lead();
}

void Engine::follow_leader() {
  if (!ep_) fail("follow_leader: only ranks other than 0 follow");
  ep_->follow(*this);
}

void Engine::release_followers() {
  if (ep_) ep_->release();
}

double Engine::weights_pmd_mapped_fraction() const {
  const int64_t pmd = smaps_rollup_bytes(
      io::weight_residency() == io::WeightResidency::kCopy ? "AnonHugePages" : "FilePmdMapped");
  if (pmd < 0 || file_bytes_ == 0) return 0.0;
  return std::min(1.0, double(pmd) / double(file_bytes_));
}

std::unique_ptr<Engine> Engine::open(const std::string& dir, const EngineOptions& opt) {
  // The model library checks every tensor of the family's table (names, dtypes, shapes,
  // quantization) and reports all problems at once; per-expert layouts are stacked here.
  CheckOptions check;
  check.allow_per_expert_layout = true;
  check.mtp_module = opt.mtp;  // a GGUF file's module is bound only when asked for
  ModelCheckpoint mc = open_model_checkpoint(dir, check);
  // Said once per load (by the first rank of an expert-parallel run).
  const std::string note = inferred_quant_warning(mc, dir);
  if (!note.empty() && (!opt.collective || opt.collective->rank() == 0))
    std::fprintf(stderr, "moex: %s\n", note.c_str());
  return std::unique_ptr<Engine>(new Engine(dir, std::move(mc), opt));
}

Engine::Engine(std::string dir, ModelCheckpoint mc, const EngineOptions& opt)
    : dir_(std::move(dir)),
      cfg_(std::move(mc.config)),
      ckpt_(std::move(mc.weights)),
      weight_bytes_(compute_weight_bytes(cfg_, mc.tensors)),
      bytes_per_token_(weight_bytes_.per_token) {
  double resident_bytes = 0;
  for (const auto& f : ckpt_.files()) {
    file_bytes_ += f->file_size();
    resident_bytes += f->resident_fraction() * double(f->file_size());
  }
  resident_at_open_ = file_bytes_ ? resident_bytes / double(file_bytes_) : 1.0;
  if (opt.collective) {
    if (!opt.placement) fail("expert parallelism: no expert placement given");
    if (opt.placement->ranks() != opt.collective->size())
      fail("expert parallelism: the placement is for ", opt.placement->ranks(), " ranks, the run has ",
           opt.collective->size());
    if (cfg_.moe.num_experts < 1 || opt.placement->experts() != cfg_.moe.num_experts)
      fail("expert parallelism: ", dir_, "/config.json has ", cfg_.moe.num_experts,
           " routed experts, the placement ", opt.placement->experts());
    ep_ = std::make_unique<ExpertParallelSteps>(*opt.collective);
  } else if (opt.populate) {
    for (const auto& f : ckpt_.files()) f->populate();
  }
  // The whole-model ops run on opt.model_backend (the CPU backend unless given; activations,
  // KV caches and recurrent states in its memory); the MoE blocks on the MoE backend of
  // opt.backend (--experts-on), whose capability is a policy input, except the layers the
  // placement keeps on the host (--n-cpu-moe, --experts-on auto: engine_placement.cc).
  be_ = opt.model_backend ? opt.model_backend : &backend::cpu_backend();
  const moe::MoeBackend& device_experts =
      opt.experts_backend ? *opt.experts_backend : moe::moe_backend(opt.backend);
  moe::MoePolicy policy;
  policy.backend = &device_experts;
  policy.settings = opt.fused;
  policy.calibration = opt.calibration;
  policy_ = std::make_unique<PolicyControl>(std::move(policy), opt.host_calibration);
  const std::string config_path = dir_ + "/config.json";
  binder_ = std::make_unique<WeightBinder>(ckpt_, std::move(mc.quant));
  if (ep_) {  // copied layouts copy (and read) only this rank's experts
    std::vector<std::vector<uint8_t>> keep;
    for (int64_t l = 0; l < cfg_.num_layers; ++l)
      keep.push_back(opt.placement->owned_mask(ep_->collective().rank(), l));
    binder_->restrict_experts(std::move(keep));
  }
  w_ = bind_model_weights(cfg_, *binder_);
  // The device's free memory before this engine puts anything on it (--experts-on auto).
  std::optional<int64_t> free_at_open;
  if (opt.experts_placement.fit) free_at_open = device_experts.device_free_bytes();
  place_small_weights(*be_, w_);
  if (ep_) {
    check_same_checkpoint(
        ep_->collective(),
        checkpoint_fingerprint(dir_, ckpt_, mc.tensors, opt.verify_every_byte), dir_,
        opt.verify_every_byte);
    ffn_scratch_.moe.rank_experts.assign(size_t(ep_->stats().ranks), 0);
    const int rank = ep_->collective().rank();
    for (const FileRange& r :
         expert_parallel_reads(ckpt_, mc.tensors, cfg_, w_, *opt.placement, rank)) {
      if (opt.populate) r.file->populate(r.offset, r.bytes);
      ep_->stats().bytes_read_at_open += r.bytes;
      ++ep_->stats().ranges_read_at_open;
    }
  }
  ropes_.resize(size_t(cfg_.num_layers));
  for (int64_t i = 0; i < cfg_.num_layers; ++i) ropes_[size_t(i)] = layer_rope(cfg_, i);
  if (opt.context < 0) fail("context length must be positive, got ", opt.context);
  if (cfg_.max_position > 0 && opt.context > cfg_.max_position)
    fail("context length ", opt.context, " exceeds the model's max_position_embeddings (",
         cfg_.max_position, ") in ", config_path);
  context_ = opt.context > 0 ? opt.context
                             : std::min<int64_t>(cfg_.max_position > 0 ? cfg_.max_position
                                                                       : kDefaultContext,
                                                 kDefaultContext);
  if (opt.prefill_chunk < 0 || opt.prefill_chunk > kMaxPrefillChunk)
    fail("prefill chunk must be 1..", kMaxPrefillChunk, " tokens (0: the default ",
         kDefaultPrefillChunk, "), got ", opt.prefill_chunk);
  prefill_chunk_ = opt.prefill_chunk > 0 ? opt.prefill_chunk : kDefaultPrefillChunk;
  moe_.resize(size_t(cfg_.num_layers));
  ffns_.resize(size_t(cfg_.num_layers));
  mixers_.resize(size_t(cfg_.num_layers));
  for (int64_t i = 0; i < cfg_.num_layers; ++i)
    mixers_[size_t(i)] =
        make_mixer(*be_, cfg_, i, w_.layers[size_t(i)], ropes_[size_t(i)], mixer_scratch_);
  own_ = new_sequence();  // its KV caches count in the placement's reserve
  const std::vector<const moe::MoeBackend*> experts =
      place_experts_at_open(opt, device_experts, free_at_open);
  int64_t moe_index = 0;
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    const LayerPlan& plan = cfg_.layers[size_t(i)];
    std::optional<ExpertParallelLayer> ep;
    if (plan.ffn == FfnKind::kMoe && ep_) {
      ep = expert_parallel_layer(*opt.placement, ep_->collective(), i, moe_index);
      if (moe_index == 0) ep_->stats().first_moe_layer = i;
      ep_->stats().shared_share += ep->runs_shared() ? 1.0 / double(cfg_.num_moe_layers()) : 0.0;
    }
    if (plan.ffn == FfnKind::kMoe) ++moe_index;
    ffns_[size_t(i)] = make_ffn({.be = *be_, .cfg = cfg_, .layer = i,
                                 .weights = w_.layers[size_t(i)], .policy = *policy_,
                                 .experts = *experts[size_t(i)], .scratch = ffn_scratch_},
                                std::move(ep));
    moe_[size_t(i)] = ffns_[size_t(i)] ? ffns_[size_t(i)]->moe() : nullptr;
  }
  PolicyControl::Layers moe_layers;
  moe_layers.shapes.resize(size_t(cfg_.num_layers));
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    if (!moe_[size_t(i)]) continue;
    const kernels::MoeExpertsView& ex = w_.layers[size_t(i)].moe.experts;
    moe_layers.shapes[size_t(i)] = {ex.din(), ex.dff(), cfg_.moe.top_k, ex.up.bits};
    moe_layers.ffn.push_back(moe_[size_t(i)]);
  }
  policy_->attach(std::move(moe_layers), opt.measure_policy, ep_ != nullptr,
                  opt.measure_time);
  logits_.grow(*be_, cfg_.vocab);
  if (opt.mtp) open_mtp();

  op_bytes_ = engine::decode_op_weight_bytes(cfg_, w_, weight_bytes_);
}

Engine::~Engine() = default;

std::unique_ptr<Sequence> Engine::new_sequence() const {
  auto seq = std::make_unique<Sequence>();
  seq->owner_ = this;
  seq->id_ = next_sequence_id_++;
  seq->context_ = context_;
  seq->be_ = be_;
  seq->caches_.resize(size_t(cfg_.num_layers));
  seq->conv_state_.resize(size_t(cfg_.num_layers));
  for (const auto& m : mixers_)
    if (m) m->init_state(*seq, context_);
  return seq;
}

void Engine::set_fused_settings(const moe::FusedSettings& settings) {
  policy_->set_user_settings(settings);
}

bool Engine::conclude_policy_measurement() { return policy_->conclude(); }
bool Engine::measuring_policy() const { return policy_->measuring(); }
const std::vector<std::string>& Engine::policy_measurement_report() const {
  return policy_->report();
}
const std::string& Engine::policy_measurement_plan() const { return policy_->plan().why; }

void Engine::ensure_rows(int64_t n) {
  if (n <= rows_) return;
  rows_ = n;
  const size_t H = size_t(cfg_.hidden), N = size_t(n);
  h_.grow(*be_, int64_t(N * H));
  xn_.grow(*be_, int64_t(N * H));
  mix_.grow(*be_, int64_t(N * H));
  mixer_scratch_.attention.ensure(*be_, cfg_, n);
  ffn_scratch_.ensure(*be_, cfg_, n);
}

void Engine::norm(const NormWeights& w, const float* x, float* out, int64_t rows) const {
  apply_norm(*be_, cfg_, w, x, out, rows);
}

// x = norm(x) in place over n rows when the layer has that norm (its weight is not empty).
void Engine::norm_if(const NormWeights& w, float* x, int64_t rows) const {
  if (!w.weight.empty()) norm(w, x, x, rows);
}

void Engine::check_tokens(const int32_t* tokens, int64_t n) const {
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= cfg_.vocab)
      fail("token id ", tokens[i], " is outside the vocabulary [0, ", cfg_.vocab, ") of ", dir_);
}

// A single-token step is what the online measurement times.
void Engine::begin_step(int64_t n) {
  policy_->begin_step(n);
}

// The profile a step's clock charges while profiling is on: decode steps (every part one
// token) to profile_, the rest (prefill) to prefill_profile_.
DecodeProfile* Engine::step_profile(bool decode_only) {
  if (!profiling_) return nullptr;
  return decode_only ? &profile_ : &prefill_profile_;
}

// `profiled`: the profile the step's clock charged (null when none); a decode step counts
// one step, a prefill pass its n tokens.
void Engine::end_step(int64_t n, DecodeProfile* profiled) {
  if (profiled) profiled->steps += profiled == &profile_ ? 1 : n;
  if (ep_) ep_->end_step(ffn_scratch_.moe.rank_experts);
  policy_->end_step(n);
}

const float* Engine::forward(Sequence& seq, const int32_t* tokens, int64_t n) {
  return checked_forward(seq, tokens, n, false);
}

const float* Engine::forward_every_row(Sequence& seq, const int32_t* tokens, int64_t n) {
  return checked_forward(seq, tokens, n, true);
}

const float* Engine::checked_forward(Sequence& seq, const int32_t* tokens, int64_t n,
                                     bool every_row) {
  if (seq.owner_ != this) fail("forward: the sequence belongs to another engine");
  if (n <= 0) fail("forward: no tokens to run");
  if (seq.pos_ + n > context_)
    fail("context length exceeded: position ", seq.pos_, " + ", n, " tokens > context ",
         context_, " (model ", dir_, ")");
  check_tokens(tokens, n);
  // Followers need only the hidden states: they run the plain forward of the same tokens.
  if (!ep_ || !ep_->leading()) return run_forward(seq, tokens, n, every_row);
  return ep_->announced_forward(seq, tokens, n,
                                [&] { return run_forward(seq, tokens, n, every_row); });
}

// The logits of the last token: forward_batch's step with one part. Every row's logits
// (perplexity scoring): the same chunks, the head over each chunk's rows.
const float* Engine::run_forward(Sequence& seq, const int32_t* tokens, int64_t n,
                                 bool every_row) {
  if (!every_row) {
    const SequenceChunk part{&seq, tokens, n, true};
    return run_batch(&part, 1);
  }
  DecodeProfile* const profiled = step_profile(n == 1);
  DecodeOpClock clock(profiled);
  begin_step(n);
  const int64_t V = cfg_.vocab;
  logits_.grow(*be_, n * V);
  for (int64_t done = 0, rows = 0; done < n; done += rows) {
    rows = std::min(prefill_chunk_, n - done);
    segments_.assign(1, SequenceRows{&seq, 0, rows});
    run_rows(tokens + done, rows, clock);
    norm(w_.final_norm, h_.data(), xn_.data(), rows);
    clock.lap(DecodeOp::kNormsResidual);
    be_->linear(
        {.lin = &w_.lm_head, .x = xn_.data(), .rows = rows, .out = logits_.data() + done * V});
    scale_logits(logits_.data() + done * V, rows);
    clock.lap(DecodeOp::kLmHead);
  }
  end_step(n, profiled);
  return host_logits(n * V);
}

// The tokens in the backend's memory (the host's own pointer for a host backend).
const int32_t* Engine::placed_tokens(const int32_t* tokens, int64_t n) {
  if (be_->memory() == backend::Memory::kHost) return tokens;
  const int64_t bytes = n * int64_t(sizeof(int32_t));
  if (tokens_.bytes() < bytes) tokens_ = be_->alloc(bytes);
  be_->upload(tokens_.data(), tokens, bytes);
  return tokens_.as<int32_t>();
}

// The first `count` logits where the caller can read them: logits_ itself in host memory,
// else a host copy.
const float* Engine::host_logits(int64_t count) {
  if (be_->memory() == backend::Memory::kHost) return logits_.data();
  host_logits_.resize(size_t(count));
  be_->download(host_logits_.data(), logits_.data(), count * int64_t(sizeof(float)));
  return host_logits_.data();
}

void Engine::set_routing_tally(bool on) {
  routing_.clear();
  int64_t moe_layers = 0;
  for (const auto& m : moe_) moe_layers += m != nullptr;
  if (on) routing_.reserve(size_t(moe_layers));  // stable addresses for the layers' pointers
  for (auto& m : moe_) {
    if (!m) continue;
    if (on) {
      RoutingTally t;
      t.layer = m->layer();
      t.selected.assign(size_t(cfg_.moe.num_experts), 0);
      routing_.push_back(std::move(t));
    }
    m->set_routing_tally(on ? &routing_.back() : nullptr);
  }
}

// h += residual_scale * mix over n rows (mlx-lm: x + multiplier * r; a plain add at 1).
void Engine::add_residual(int64_t n) {
  be_->add_scaled(h_.data(), mix_.data(), n * cfg_.hidden, float(cfg_.residual_scale));
}

// logits /= logits_divisor over `rows` rows of the vocabulary (Granite's logits_scaling);
// then the soft-cap tanh(logits / cap) * cap (Gemma-4's final_logit_softcapping).
void Engine::scale_logits(float* logits, int64_t rows) const {
  be_->divide_and_softcap(logits, rows * cfg_.vocab, float(cfg_.logits_divisor),
                          cfg_.final_logit_softcap > 0 ? float(cfg_.final_logit_softcap) : 0.f);
}

// Runs the rows of segments_ (n in all) through every layer and advances their sequences;
// h_ holds their final hidden states.
void Engine::run_rows(const int32_t* tokens, int64_t n, DecodeOpClock& clock) {
  ensure_rows(n);
  const int64_t H = cfg_.hidden;
  be_->embedding_rows(w_.embed, placed_tokens(tokens, n), n, h_.data());
  if (cfg_.embedding_scale != 1.0) be_->scale(h_.data(), n * H, float(cfg_.embedding_scale));
  clock.lap(DecodeOp::kEmbedding);
  for (int64_t l = 0; l < cfg_.num_layers; ++l)
    run_layer(mixers_[size_t(l)].get(), ffns_[size_t(l)].get(), w_.layers[size_t(l)], n, clock,
              &counters_);
  for (const SequenceRows& s : segments_) s.seq->pos_ += s.rows;
  if (hidden_capture_) capture_rows(n);
}

void Engine::run_layer(Mixer* mixer, Ffn* ffn, const LayerWeights& lw, int64_t n,
                       DecodeOpClock& clock, moe::PathCounters* counters) {
  if (mixer) {  // a Nemotron-H FFN block has no mixer half
    norm(lw.input_norm, h_.data(), xn_.data(), n);
    clock.lap(DecodeOp::kNormsResidual);
    mixer->forward({.segments = segments_, .n = n, .x = xn_.data(), .out = mix_.data(),
                    .clock = clock});
    norm_if(lw.attn_out_norm, mix_.data(), n);
    add_residual(n);
  }
  if (ffn) {  // nor a Nemotron-H mixer block an FFN half
    norm(lw.post_norm, h_.data(), xn_.data(), n);
    clock.lap(DecodeOp::kNormsResidual);
    ffn->forward({.normed = xn_.data(), .raw = h_.data(), .n = n, .out = mix_.data(),
                  .counters = counters});
    clock.lap(ffn->op());
    norm_if(lw.ffn_out_norm, mix_.data(), n);
    add_residual(n);
  }
  if (lw.layer_scalar != 1.f)  // Gemma-4: the whole residual stream times the layer scalar
    be_->scale(h_.data(), n * cfg_.hidden, lw.layer_scalar);
}

std::vector<Engine::LayerDecision> Engine::decode_decisions() const {
  std::vector<LayerDecision> out;
  for (const auto& m : moe_)
    if (m) out.push_back({m->layer(), m->decision(1), m->shared_decision(1)});
  return out;
}

const kernels::MoeExpertsView* Engine::first_moe_experts() const {
  for (int64_t i = 0; i < cfg_.num_layers; ++i)
    if (moe_[size_t(i)]) return &w_.layers[size_t(i)].moe.experts;
  return nullptr;
}

int64_t Engine::active_weight_bytes_per_token() const { return bytes_per_token_; }

int64_t Engine::scratch_bytes() const {
  int64_t total = ffn_scratch_.bytes() + mixer_scratch_.bytes();
  auto add = [&](const auto& v) { total += int64_t(v.capacity() * sizeof(*v.data())); };
  for (const auto* v : {&h_, &xn_, &mix_}) add(*v);
  return total;
}

}  // namespace moex::model::engine
