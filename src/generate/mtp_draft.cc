// MtpSpeculator (see mtp_draft.h).
#include "generate/mtp_draft.h"

#include <algorithm>

#include "backend/cpu/softmax.h"
#include "core/error.h"
#include "core/sysinfo.h"

namespace moex::generate {

namespace eng = model::engine;

MtpSpeculator::MtpSpeculator(eng::Engine& engine, eng::Sequence& seq)
    : engine_(engine), seq_(seq), verifier_(engine, seq) {
  if (!engine.has_mtp()) fail("--spec mtp: the engine was opened without its MTP module");
  if (seq.position() != 0) fail("--spec mtp: the sequence must start at position 0");
  mtp_seq_ = engine.new_mtp_sequence();
}

const float* MtpSpeculator::prefill(const TokenId* tokens, int64_t n) {
  rewind(seq_.position());
  // Chunk by chunk, so that the hidden states waiting for the module stay within one chunk
  // however long the prompt (the chunks' arithmetic is the one call's: Engine::forward).
  const int64_t chunk = engine_.prefill_chunk();
  const float* logits = nullptr;
  for (int64_t done = 0; done < n;) {
    const int64_t rows = std::min(chunk, n - done);
    {
      const model::engine::Engine::HiddenCapture on(engine_, &pending_);
      logits = engine_.forward(seq_, tokens + done, rows);
    }
    done += rows;
    catch_up(tokens, done);
  }
  return logits;
}

void MtpSpeculator::rewind(int64_t position) {
  const int64_t H = engine_.config().hidden, m = mtp_seq_->position();
  if (position < m) {
    mtp_seq_->truncate(position);
    pending_.clear();
    return;
  }
  if (int64_t(pending_.size()) < (position - m) * H)
    fail("--spec mtp: rewind to position ", position, " with the module at ", m, " and only ",
         pending_.size() / size_t(H), " hidden states waiting");
  pending_.resize(size_t((position - m) * H));
}

int64_t MtpSpeculator::settled_rows() const {
  return std::max<int64_t>(0, std::min(mtp_seq_->position(), seq_.position() - 1));
}

void MtpSpeculator::loaded(int64_t position) {
  if (seq_.position() != position || mtp_seq_->position() != position)
    fail("--spec mtp: loaded ", position, " positions, but the sequence is at ", seq_.position(),
         " and the module at ", mtp_seq_->position());
  pending_.clear();
}

void MtpSpeculator::add_hidden(const float* rows, int64_t n) {
  pending_.insert(pending_.end(), rows, rows + n * engine_.config().hidden);
}

void MtpSpeculator::catch_up(const TokenId* ids, int64_t n) {
  const int64_t P = seq_.position(), m = mtp_seq_->position(), H = engine_.config().hidden;
  if (n != P || int64_t(pending_.size()) != (P - m) * H)
    fail("--spec mtp: ", n, " ids and ", pending_.size() / size_t(H), " hidden states wait, "
         "for a sequence at position ", P, " and a module at ", m);
  // Rows m..P-2 have their next token in ids; row P-1 waits for the token sampled next.
  const int64_t rows = P - 1 - m;
  if (rows < 1) return;
  const double t0 = now_seconds();
  engine_.mtp_forward(*mtp_seq_, ids + m + 1, pending_.data(), rows);
  pending_.erase(pending_.begin(), pending_.begin() + rows * H);
  prefill_s_ += now_seconds() - t0;
}

const float* MtpSpeculator::verify(const TokenId* tokens, int64_t n) {
  const model::engine::Engine::HiddenCapture on(engine_, &pending_);
  return verifier_.verify(tokens, n);
}

void MtpSpeculator::keep(const TokenId* tokens, int64_t n, int64_t kept) {
  // Outside the capture: where recurrent states make the verifier run the kept tokens again,
  // the pass already gave their hidden states (the rows of a pass equal those of any other
  // split of the same tokens).
  verifier_.keep(tokens, n, kept);
  const int64_t H = engine_.config().hidden;
  pending_.resize(size_t((seq_.position() - mtp_seq_->position()) * H));
}

std::vector<TokenId> MtpSpeculator::propose(std::span<const TokenId> history, int64_t k) {
  std::vector<TokenId> drafts;
  const int64_t P = seq_.position(), m = mtp_seq_->position();
  const int64_t H = engine_.config().hidden, V = engine_.vocab();
  if (k < 1 || P <= m) return drafts;
  if (int64_t(history.size()) != P + 1 || int64_t(pending_.size()) != (P - m) * H)
    fail("--spec mtp: the history holds ", history.size(), " tokens and ",
         pending_.size() / size_t(H), " hidden states wait, for a sequence at position ", P,
         " and a module at ", m);
  const double t0 = now_seconds();
  // The rows whose next token is now known: positions m..P-1 with tokens m+1..P.
  own_.resize(size_t((P - m) * H));
  const float* logits =
      engine_.mtp_forward(*mtp_seq_, history.data() + m + 1, pending_.data(), P - m, own_.data());
  pending_.clear();
  if (on_draft_logits) on_draft_logits(P - 1, logits);
  drafts.push_back(TokenId(ops::argmax(logits, V)));  // the module's greedy draft
  last_.assign(own_.end() - H, own_.end());
  // Further drafts: the module on its own last output and draft, at positions P, P+1, ...; those
  // rows are guesses and are cut before the next real rows run.
  for (int64_t j = 1; j < k && mtp_seq_->position() < mtp_seq_->context(); ++j) {
    logits = engine_.mtp_forward(*mtp_seq_, &drafts.back(), last_.data(), 1, own_.data());
    drafts.push_back(TokenId(ops::argmax(logits, V)));
    last_.assign(own_.begin(), own_.begin() + H);
  }
  mtp_seq_->truncate(P);
  draft_s_ += now_seconds() - t0;
  return drafts;
}

SpecDriver MtpSpeculator::driver() {
  SpecDriver d;
  d.verify = [this](const TokenId* t, int64_t n) { return verify(t, n); };
  d.keep = [this](const TokenId* t, int64_t n, int64_t kept) { keep(t, n, kept); };
  d.room = [this] { return seq_.context() - seq_.position(); };
  return d;
}

}  // namespace moex::generate
