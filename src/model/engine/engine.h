// The decode engine: one forward pass, written once, driven by the family's ModelConfig and
// layer plan. Weights are memory-mapped views of the checkpoint; a prompt runs in batches of
// at most prefill_chunk tokens (prefill), then one token per call (decode). Each Engine is one
// model instance with its MoE path counters and its own Sequence (KV caches, position);
// further sequences (new_sequence) decode together in one step (decode_batch).
#pragma once

#include "model/engine/scratch_grow.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dist/collective.h"
#include "dist/expert_placement.h"
#include "io/checkpoint.h"
#include "backend/model_backend.h"
#include "model/engine/decode_profile.h"
#include "model/engine/expert_parallel_steps.h"
#include "model/engine/ffn.h"
#include "model/engine/gated_deltanet.h"
#include "model/engine/mixer.h"
#include "model/engine/mla.h"
#include "model/engine/model_weights.h"
#include "model/engine/moe_ffn.h"
#include "model/engine/mtp_module.h"
#include "model/engine/policy_control.h"
#include "model/engine/sequence.h"
#include "model/engine/short_conv.h"
#include "model/model_checkpoint.h"
#include "model/model_config.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/rope.h"
#include "model/weight_bytes.h"
#include "moe/dispatch_policy.h"
#include "moe/experts_placement.h"
#include "moe/moe_backend.h"
#include "moe/online_measure.h"
#include "moe/path_counters.h"

namespace moex::model::engine {

struct EngineOptions {
  // KV cache capacity in tokens: the most positions one sequence can hold. 0: the smaller of
  // the model's max_position_embeddings and kDefaultContext. Larger than the model's
  // max_position_embeddings is an Error.
  int64_t context = 0;
  moe::FusedSettings fused;  // resolved --fused / --max-dff / environment
  moe::Backend backend = moe::Backend::kCpu;  // where the MoE layers run (--experts-on)
  // Which MoE layers' experts run on `backend` and which stay on the host, on the CPU MoE
  // backend (moe/experts_placement.h): --n-cpu-moe N keeps the layers below N there,
  // --experts-on auto puts on `backend` as many as its device's free memory holds after the
  // rest of the run's reserve (place_experts_at_open). The default: every layer on `backend`.
  // When anything is asked, open() prints the placement on stderr in one line.
  moe::PlacementRequest experts_placement;
  // The MoE backend of the layers placed on `backend` (null: moe::moe_backend(backend)).
  // Tests pass a counting one (moe/counting_moe_backend_test_util.h).
  const moe::MoeBackend* experts_backend = nullptr;
  // The calibrated cap of the CPU MoE backend, for the layers kept on the host beside another
  // experts' backend (`calibration` is that backend's).
  std::optional<moe::CalibratedCap> host_calibration;
  // --experts-on auto found no device beside --backend cpu: why (added to the placement line).
  std::string no_device;
  std::optional<moe::CalibratedCap> calibration;
  // Fault every weight page in at open (io::SafetensorsFile::populate), as llama.cpp maps
  // with MAP_POPULATE: decoding then never waits on the disk for an expert it meets late.
  bool populate = true;
  // A prompt runs in chunks of at most this many tokens, so the activations and the MoE
  // scratch stay bounded however long it is (mlx-lm's prefill_step_size plays this role).
  // Results do not depend on it: every op computes each row on its own.
  int64_t prefill_chunk = 0;  // 0: kDefaultPrefillChunk; otherwise 1..kMaxPrefillChunk
  // The policy's online measurement (moe/online_measure.h): with --fused auto, no cap from a
  // flag or variable, the CPU backend and no calibration entry for this host's key (or one of
  // another moex commit or an inexact match), the first decode steps time both paths, apply
  // the cap they give and record it in the calibration file. Off unless asked for (the
  // tools ask, unless MOEX_FUSED_MOE_MEASURE=0).
  bool measure_policy = false;
  moe::MeasureTime measure_time;  // tests: a model of the paths' times (empty: real time)
  // Expert parallelism (src/dist/, docs/expert_parallel.md): this process is rank
  // collective->rank() of collective->size(); it owns the experts `placement` gives it, reads
  // no other expert rows of the checkpoint, and each MoE layer's output is its part summed
  // over the ranks in rank order (identical on every rank). Both must outlive the engine;
  // nullptr: one process runs every expert. Turns the online policy measurement off (its
  // timings would include the collective).
  dist::Collective* collective = nullptr;
  const dist::ExpertPlacement* placement = nullptr;
  // With a collective: the ranks compare every byte of their checkpoint files, not only
  // config.json, the tensor list, routers and norms (each rank then reads its whole checkpoint
  // once at open, which expert parallelism otherwise avoids).
  bool verify_every_byte = false;
  // The backend of the whole-model ops (null: the CPU backend). One whose memory is not the
  // host's gets the small weights uploaded at open, the tokens uploaded and the logits
  // downloaded each step, and runs the MoE blocks on host copies (ffn.cc). Tests pass a
  // checking backend here (backend/foreign_backend_test_util.h).
  const backend::ModelBackend* model_backend = nullptr;
  // Load the checkpoint's multi-token-prediction module too (mtp_module.h; --spec mtp).
  // moex::Error at open when it has none, or with expert parallelism or a backend whose memory
  // is not the host's.
  bool mtp = false;
};

inline constexpr int64_t kDefaultContext = 4096;
inline constexpr int64_t kDefaultPrefillChunk = 512;
inline constexpr int64_t kMaxPrefillChunk = 65536;

class Engine : private StepRunner {
 public:
  // Reads DIR/config.json (family, plan), opens DIR's safetensors and binds every tensor.
  // Throws moex::Error naming the file / tensor / field for anything wrong.
  static std::unique_ptr<Engine> open(const std::string& dir, const EngineOptions& options);
  ~Engine();

  // Runs tokens[0..n) at the current position (n > 1: prefill, in chunks of at most
  // prefill_chunk() tokens, the MoE layers choosing their path per chunk) and returns the
  // logits [vocab] of the last one, valid until the next call. Throws moex::Error for a token
  // id outside the vocabulary or a full context (before running any token).
  const float* forward(const int32_t* tokens, int64_t n) { return forward(*own_, tokens, n); }
  const float* prefill(const std::vector<int32_t>& tokens) {
    return forward(tokens.data(), int64_t(tokens.size()));
  }
  const float* decode(int32_t token) { return forward(&token, 1); }
  // The same on another sequence of this engine.
  const float* forward(Sequence& seq, const int32_t* tokens, int64_t n);
  // As forward, but returns the logits of every token, [n][vocab] (perplexity scoring); each
  // row equals what forward would return for a prompt ending at that token.
  const float* forward_every_row(Sequence& seq, const int32_t* tokens, int64_t n);

  // A new sequence at position 0 with this engine's context (its KV caches allocated).
  std::unique_ptr<Sequence> new_sequence() const override;
  // One step of several sequences together, each with its own tokens: part i runs
  // parts[i].n tokens at its sequence's position and advances it (a prefill chunk, or one
  // decode token). All rows share every weight read (the MoE layers run them in one call,
  // grouped by expert; rows beyond prefill_chunk() go in further calls); attention and
  // recurrent states run per sequence. Returns the parts' logits in order, each part taking
  // logit_rows() rows of [vocab]: its last token's (left as they were where parts[i].logits is
  // false), or with every_row each of its tokens'; without every_row, row i is part i's. Each
  // row equals bit for bit what forward(*seq, tokens, j) returns for a part ending at that
  // token (forward_every_row's rows likewise); valid until the next call.
  // moex::Error (before running anything) for a sequence of another engine, one given twice,
  // no tokens, a full context or a token outside the vocabulary, naming the part.
  const float* forward_batch(const SequenceChunk* parts, int64_t count);
  // forward_batch of one token per sequence: row i runs tokens[i] on seqs[i].
  const float* decode_batch(Sequence* const* seqs, const int32_t* tokens, int64_t n);

  // The multi-token-prediction module (EngineOptions::mtp; docs/speculative.md). Its state is
  // a sequence of its own, paired with a main sequence: row p of it takes the main model's
  // final hidden state at p (after the final norm) and the token at p + 1.
  bool has_mtp() const { return mtp_ != nullptr; }
  std::unique_ptr<Sequence> new_mtp_sequence() const;
  // Runs n rows on `mtp_seq` (a new_mtp_sequence) at its position: row i takes next_tokens[i]
  // and hidden[i] ([n][hidden]). Returns the logits [vocab] of its last row (they predict the
  // token after next_tokens[n - 1]), valid until the next mtp_forward (the main model's last
  // logits stay valid); `hidden_out`, when not null,
  // gets the rows' outputs before the module's norm ([n][hidden]), which stand in for the main
  // model's hidden state when the module drafts again from its own draft.
  const float* mtp_forward(Sequence& mtp_seq, const int32_t* next_tokens, const float* hidden,
                           int64_t n, float* hidden_out = nullptr);
  // While `out` is not null, every forward pass (forward, forward_every_row, forward_batch)
  // appends the final hidden states of all its rows after the final norm ([rows][hidden], in
  // the order the pass runs them) to *out.
  void capture_hidden(std::vector<float>* out) { hidden_capture_ = out; }
  // capture_hidden(out) for the guard's lifetime, and off again however the scope ends.
  class HiddenCapture {
   public:
    HiddenCapture(Engine& e, std::vector<float>* out) : e_(e) { e_.capture_hidden(out); }
    ~HiddenCapture() { e_.capture_hidden(nullptr); }
    HiddenCapture(const HiddenCapture&) = delete;
    HiddenCapture& operator=(const HiddenCapture&) = delete;

   private:
    Engine& e_;
  };

  // The engine's own sequence, what forward(tokens, n) runs on.
  Sequence& sequence() { return *own_; }
  // The engine's own sequence: back to position 0 (path counters are kept).
  void reset() { own_->reset(); }
  // Back to `position` (0..position()), keeping the first `position` tokens' KV entries, so
  // that a prompt sharing them continues from there. Models with short-conv layers (LFM2)
  // keep a recurrent state that cannot be rewound: there it returns false and changes
  // nothing unless position is 0 or position() (the caller resets and re-prefills).
  bool truncate(int64_t position) { return own_->truncate(position); }
  // Whether truncate() works for every position (no short-conv layers).
  bool can_truncate() const { return own_->can_truncate(); }
  // Changes the fused-path settings of every MoE layer (bench-decode's interleaved arms run
  // on one model instance).
  // It also ends an online measurement unless the settings are plain auto.
  void set_fused_settings(const moe::FusedSettings& settings);
  // The online measurement: true while its decode steps run; its outcome, one line per shape
  // and one for the cap and where it was saved (empty when none ran or it is not done).
  bool measuring_policy() const;
  // Ends a measurement past its minimum window now (moe::OnlineMeasurement::conclude):
  // applies and saves what it found. Returns false, changing nothing, otherwise.
  bool conclude_policy_measurement();
  const std::vector<std::string>& policy_measurement_report() const;
  // Why the engine measures the policy or not, as decided at open (one line).
  const std::string& policy_measurement_plan() const;
  int64_t position() const { return own_->position(); }
  int64_t context() const { return context_; }
  int64_t prefill_chunk() const { return prefill_chunk_; }
  // Bytes of activations and scratch this instance holds now (not weights or KV caches): the
  // prefill memory that chunking bounds, independent of the number of layers.
  int64_t scratch_bytes() const;
  // Bytes of the own sequence's KV caches (allocated for the whole context at open).
  int64_t kv_cache_bytes() const { return own_->kv_cache_bytes(); }
  // Bytes of the checkpoint's files (the weights mapped from them).
  uint64_t file_bytes() const { return file_bytes_; }
  int64_t vocab() const { return cfg_.vocab; }
  const ModelConfig& config() const { return cfg_; }
  const std::string& dir() const { return dir_; }

  moe::PathCounters& counters() { return counters_; }
  const moe::PathCounters& counters() const { return counters_; }
  // The dispatch decision each MoE layer takes for a single decode token (what -v prints).
  struct LayerDecision {
    int64_t layer = 0;
    moe::DispatchDecision routed;
    std::optional<moe::DispatchDecision> shared;  // when the block runs a shared expert
  };
  std::vector<LayerDecision> decode_decisions() const;

  // Weight bytes read per decoded token, as `moex inspect` reports them (model/weight_bytes.h):
  // the numerator of the napkin-math bandwidth figure.
  int64_t active_weight_bytes_per_token() const;
  const model::WeightBytes& weight_bytes() const { return weight_bytes_; }
  // Where each MoE layer's experts went at open, and what decided it (moe/experts_placement.h).
  const moe::ExpertsPlacement& experts_placement() const { return placement_; }
  const moe::PlacementInputs& experts_placement_inputs() const { return placement_in_; }
  // The backend that runs the experts of MoE layer `layer` (Error for another layer).
  const moe::MoeBackend& experts_backend(int64_t layer) const;
  int64_t stacked_copy_bytes() const { return w_.stacked_copy_bytes; }
  // Share of the checkpoint's pages that were in the page cache when open() began (before
  // populate): below 1, opening read the rest from disk.
  double resident_at_open() const { return resident_at_open_; }
  // Share of the checkpoint's bytes this process maps with 2 MB page-table entries now
  // (FilePmdMapped / file bytes; with --weights copy, AnonHugePages / file bytes): reads
  // from 4 KB mappings are TLB-bound on our hosts.
  double weights_pmd_mapped_fraction() const;
  const ModelWeights& weights() const { return w_; }
  // Bytes of the checkpoint's files resident in this process's page tables (not the page
  // cache's: another process's pages do not count).
  int64_t resident_weight_bytes() const;
  // Expert parallelism under a scheduler that runs on rank 0 only (`moex serve`): there rank 0
  // leads (lead_followers: each forward and decode_batch, once validated, is first announced
  // to the other ranks with its sequences' numbers, positions and tokens) and the other ranks
  // follow (follow_leader: run what rank 0 announces on sequences of their own, until
  // release_followers). An error inside an announced step stops every rank (a follower would
  // otherwise wait in its collective).
  void lead_followers();
  void follow_leader();
  void release_followers();
  // Expert parallelism's figures (nullopt in a single-process run); reset clears the counts.
  std::optional<ExpertParallelStats> expert_parallel_stats() const;
  void reset_expert_parallel_stats();

  // Decode profiling (decode_profile.h): while on, every single-token forward pass and every
  // decode_batch step adds its time per op group to profile() (one step each), and every
  // other forward pass (prefill) to prefill_profile(), whose `steps` count the pass's tokens,
  // so its figures are per prompt token. Off by default.
  void set_profiling(bool on) { profiling_ = on; }
  const DecodeProfile& profile() const { return profile_; }
  const DecodeProfile& prefill_profile() const { return prefill_profile_; }
  void reset_profile() {
    profile_.reset();
    prefill_profile_.reset();
  }
  // Weight bytes each op group reads per decoded token (the groups without weights: 0);
  // they sum to active_weight_bytes_per_token() up to norms and one embedding row.
  const std::array<int64_t, kNumDecodeOps>& decode_op_weight_bytes() const { return op_bytes_; }
  // Routing figures (routing_tally.h): while on, every MoE layer adds each forward's router
  // logits and selections to its tally, one per MoE layer in layer order; turning it on
  // clears them.
  void set_routing_tally(bool on);
  const std::vector<RoutingTally>& routing_tally() const { return routing_; }
  // The routed experts of the first MoE layer (nullptr if the model has none).
  const kernels::MoeExpertsView* first_moe_experts() const;

 private:
  Engine(std::string dir, ModelCheckpoint mc, const EngineOptions& opt);

  void check_tokens(const int32_t* tokens, int64_t n) const;
  void begin_step(int64_t n);
  DecodeProfile* step_profile(bool decode_only);
  void end_step(int64_t n, DecodeProfile* profiled);
  void ensure_rows(int64_t n);
  // One chunk of n rows made of `segments`; advances each segment's sequence.
  void run_rows(const int32_t* tokens, int64_t n, DecodeOpClock& clock);
  // One layer's two halves over the n rows of segments_ in h_ (run_rows' loop body).
  void run_layer(Mixer* mixer, Ffn* ffn, const LayerWeights& lw, int64_t n,
                 DecodeOpClock& clock, moe::PathCounters* counters);
  void open_mtp();  // engine_mtp.cc
  void capture_rows(int64_t n);  // hidden_capture_ += final_norm(h_ rows)
  void add_residual(int64_t n);
  void scale_logits(float* logits, int64_t rows) const;
  void norm(const NormWeights& w, const float* x, float* out, int64_t rows) const;
  void norm_if(const NormWeights& w, float* x, int64_t rows) const;
  // Decides placement_ once the mixers and the own sequence exist (engine_placement.cc):
  // `device` runs the layers placed on it, `free_at_open` is its free memory before this
  // engine put anything there (fit only). Returns each layer's experts' backend.
  std::vector<const moe::MoeBackend*> place_experts_at_open(
      const EngineOptions& opt, const moe::MoeBackend& device,
      std::optional<int64_t> free_at_open);

  std::string dir_;
  const backend::ModelBackend* be_ = nullptr;  // every op of the forward pass
  std::unique_ptr<PolicyControl> policy_;  // the MoE layers' policy and its measurement
  ModelConfig cfg_;
  io::Checkpoint ckpt_;                  // the mapping every weight view points into
  model::WeightBytes weight_bytes_;  // of the checkpoint (model/weight_bytes.h)
  int64_t bytes_per_token_ = 0;
  uint64_t file_bytes_ = 0;  // sum of the checkpoint's file sizes
  double resident_at_open_ = 0;
  std::unique_ptr<WeightBinder> binder_; // owns stacked copies of per-expert layouts
  ModelWeights w_;
  std::vector<ops::Rope> ropes_;  // per attention layer (each layer's own RoPE and head_dim)
  std::vector<std::unique_ptr<Mixer>> mixers_;  // per layer; null where the layer has none
  std::vector<std::unique_ptr<Ffn>> ffns_;  // per layer; null where the layer has none
  std::vector<MoeFfn*> moe_;  // per layer: ffns_'s MoE block, null for the other layers
  moe::PlacementInputs placement_in_;
  moe::ExpertsPlacement placement_;
  moe::PathCounters counters_;
  std::unique_ptr<Sequence> own_;   // what forward(tokens, n) runs on
  std::vector<SequenceRows> segments_;  // of the chunk run_rows runs
  int64_t context_ = 0, rows_ = 0, prefill_chunk_ = kDefaultPrefillChunk;
  bool profiling_ = false;
  DecodeProfile profile_, prefill_profile_;
  std::array<int64_t, kNumDecodeOps> op_bytes_{};
  std::unique_ptr<ExpertParallelSteps> ep_;  // expert parallelism, when on
  mutable int32_t next_sequence_id_ = 0;
  // forward() and decode_batch() once validated.
  // (StepRunner: what an expert-parallel follower replays.)
  const float* run_forward(Sequence& seq, const int32_t* tokens, int64_t n,
                           bool every_row) override;
  const float* checked_forward(Sequence& seq, const int32_t* tokens, int64_t n, bool every_row);
  const float* run_batch(const SequenceChunk* parts, int64_t count) override;

  // Scratch shared by all layers (one engine runs on one thread at a time), and the
  // activations for up to rows_ tokens (at most one prefill chunk).
  FfnScratch ffn_scratch_;
  MixerScratch mixer_scratch_;
  ActivationBuffer h_, xn_, mix_, logits_;
  // A backend with its own memory: the step's tokens uploaded, the logits downloaded.
  backend::Buffer tokens_;
  std::vector<float> host_logits_;
  const int32_t* placed_tokens(const int32_t* tokens, int64_t n);
  const float* host_logits(int64_t count);
  std::vector<const Sequence*> batch_seen_;  // forward_batch's duplicate check
  std::vector<SequenceChunk> batch_parts_;   // decode_batch's parts
  std::vector<int32_t> batch_tokens_;        // the tokens of one call of run_rows
  // (result row, row of that call) of the logits taken after that call
  std::vector<std::pair<int64_t, int64_t>> batch_ends_;
  std::vector<int64_t> batch_out_;  // each part's first result row
  ActivationBuffer batch_logits_;          // lm_head rows of parts that are not adjacent
  std::vector<RoutingTally> routing_;        // set_routing_tally
  std::unique_ptr<MtpModule> mtp_;           // EngineOptions::mtp
  std::vector<float> mtp_cat_;               // mtp_forward's [rows][2 hidden] input
  ActivationBuffer mtp_logits_;              // mtp_forward's result
  std::vector<float>* hidden_capture_ = nullptr;
};

}  // namespace moex::model::engine
