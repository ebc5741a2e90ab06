// EngineVerifier (see engine_verifier.h).
#include "generate/engine_verifier.h"

#include "core/error.h"
#include "core/sysinfo.h"
#include "model/engine/sequence_state.h"

namespace moex::generate {

namespace eng = model::engine;

EngineVerifier::EngineVerifier(eng::Engine& engine, eng::Sequence& seq)
    : engine_(engine), seq_(seq), truncates_(seq.can_truncate()) {}

const float* EngineVerifier::verify(const TokenId* tokens, int64_t n) {
  const double t0 = now_seconds();
  start_ = seq_.position();
  const float* rows;
  if (n == 1) {
    rows = engine_.forward(seq_, tokens, 1);
  } else {
    if (!truncates_) eng::copy_recurrent_states(seq_, states_);
    rows = engine_.forward_every_row(seq_, tokens, n);
  }
  verify_s_ += now_seconds() - t0;
  return rows;
}

void EngineVerifier::keep(const TokenId* tokens, int64_t n, int64_t kept) {
  if (kept < 1 || kept > n || seq_.position() != start_ + n)
    fail("speculative decoding: keep ", kept, " of a pass of ", n, " tokens at position ", start_,
         " (the sequence is at ", seq_.position(), ")");
  if (kept == n) return;
  const double t0 = now_seconds();
  if (truncates_) {
    seq_.truncate(start_ + kept);
  } else {
    eng::rewind_with_states(seq_, start_, states_);
    engine_.forward(seq_, tokens, kept);
    ++reruns_;
    rerun_tokens_ += kept;
  }
  verify_s_ += now_seconds() - t0;
}

SpecDriver EngineVerifier::driver() {
  SpecDriver d;
  d.verify = [this](const TokenId* t, int64_t n) { return verify(t, n); };
  d.keep = [this](const TokenId* t, int64_t n, int64_t kept) { keep(t, n, kept); };
  d.room = [this] { return room(); };
  return d;
}

}  // namespace moex::generate
