// The engine side of speculative decoding (speculative.h): a pass of several tokens is one
// Engine::forward_every_row; keeping only some of them truncates the KV caches or, for a
// model with recurrent states (short conv, Gated DeltaNet, Mamba-2) that cannot be truncated,
// puts back the states copied before the pass and runs the kept tokens again.
#pragma once

#include <cstdint>
#include <vector>

#include "generate/speculative.h"
#include "model/engine/engine.h"

namespace moex::generate {

class EngineVerifier {
 public:
  // `seq` is a sequence of `engine`; both must outlive this.
  EngineVerifier(model::engine::Engine& engine, model::engine::Sequence& seq);

  // A pass of one token is Engine::forward (the plain decode step, bit for bit).
  const float* verify(const TokenId* tokens, int64_t n);
  void keep(const TokenId* tokens, int64_t n, int64_t kept);
  int64_t room() const { return seq_.context() - seq_.position(); }
  // A driver whose on_step is empty (the caller sets it).
  SpecDriver driver();

  int64_t reruns() const { return reruns_; }  // passes whose kept tokens ran again
  int64_t rerun_tokens() const { return rerun_tokens_; }
  double verify_seconds() const { return verify_s_; }  // in verify() and keep()

 private:
  model::engine::Engine& engine_;
  model::engine::Sequence& seq_;
  bool truncates_;
  int64_t start_ = 0;                       // the sequence's position before the last pass
  std::vector<std::vector<float>> states_;  // its recurrent states then (when !truncates_)
  int64_t reruns_ = 0, rerun_tokens_ = 0;
  double verify_s_ = 0;
};

}  // namespace moex::generate
