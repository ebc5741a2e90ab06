// Where a decode step's time goes: wall time per op group, summed over single-token forward
// passes while profiling is on (Engine::set_profiling). Each group is timed from the end of
// the previous one, so the groups add up to the whole step; a group's time includes its
// parallel regions' joins. Timing costs two clock reads per group per layer (~50 ns).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace moex::model::engine {

enum class DecodeOp {
  kEmbedding,             // the token's embedding row
  kNormsResidual,         // layer norms and residual adds
  kAttentionProjections,  // q, k, v (before norms and RoPE) and o
  kAttentionCore,         // q/k norms, RoPE, KV append, scores, softmax, weighted values
  kShortConv,             // LFM2 short-convolution mixers
  kLinearAttention,       // Gated DeltaNet mixers (Qwen3-Next): projections, conv, recurrence
  kStateSpace,            // Mamba-2 mixers (Nemotron-H): projections, conv, SSM recurrence
  kMoe,                   // router, routing, routed and shared experts
  kDenseMlp,              // dense FFN layers
  kLmHead,                // final norm's output times the LM head
  kCount
};
inline constexpr int kNumDecodeOps = int(DecodeOp::kCount);
const char* decode_op_name(DecodeOp op);  // "attention_projections", ...

struct DecodeProfile {
  std::array<double, kNumDecodeOps> seconds{};
  int64_t steps = 0;  // single-token forward passes and decode_batch steps timed
  void reset() { *this = DecodeProfile{}; }
  void add(const DecodeProfile& o);
  double total_seconds() const;
};

// Laps a steady clock into `profile` (no-op when null): lap(op) charges the time since the
// previous lap (or construction) to op.
class DecodeOpClock {
 public:
  explicit DecodeOpClock(DecodeProfile* profile) : p_(profile) {
    if (p_) t_ = std::chrono::steady_clock::now();
  }
  void lap(DecodeOp op) {
    if (!p_) return;
    const auto t = std::chrono::steady_clock::now();
    p_->seconds[size_t(op)] += std::chrono::duration<double>(t - t_).count();
    t_ = t;
  }

 private:
  DecodeProfile* p_;
  std::chrono::steady_clock::time_point t_{};
};

}  // namespace moex::model::engine
