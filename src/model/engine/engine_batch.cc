// Engine::forward_batch: several sequences in one step (the serving scheduler's prefill
// chunks and decode tokens together), and decode_batch, its one-token-per-sequence form.
#include <algorithm>

#include "core/error.h"
#include "model/engine/engine.h"

namespace moex::model::engine {

const float* Engine::forward_batch(const SequenceChunk* parts, int64_t count) {
  if (count <= 0) fail("forward_batch: no sequences to run");
  batch_seen_.clear();
  for (int64_t i = 0; i < count; ++i) {
    const SequenceChunk& p = parts[i];
    if (p.seq == nullptr || p.seq->owner_ != this)
      fail("forward_batch: part ", i, ": the sequence belongs to another engine");
    if (p.n <= 0 || p.tokens == nullptr) fail("forward_batch: part ", i, " has no tokens to run");
    if (p.seq->pos_ + p.n > context_)
      fail("context length exceeded: part ", i, " at position ", p.seq->pos_, " + ", p.n,
           " tokens > context ", context_, " (model ", dir_, ")");
    check_tokens(p.tokens, p.n);
    batch_seen_.push_back(p.seq);
  }
  std::sort(batch_seen_.begin(), batch_seen_.end());
  if (std::adjacent_find(batch_seen_.begin(), batch_seen_.end()) != batch_seen_.end())
    fail("forward_batch: a sequence appears twice in one step");
  if (!ep_ || !ep_->leading()) return run_batch(parts, count);
  return ep_->announced_batch(parts, count, [&] { return run_batch(parts, count); });
}

const float* Engine::decode_batch(Sequence* const* seqs, const int32_t* tokens, int64_t n) {
  batch_parts_.clear();
  for (int64_t i = 0; i < n; ++i) batch_parts_.push_back({seqs[i], tokens + i, 1, true});
  return forward_batch(batch_parts_.data(), n);
}

// The parts' rows in calls of run_rows of at most prefill_chunk_ rows (a part may continue
// into the next call); after each call, the final norm and lm_head over the last rows of the
// parts that ended in it. Every op is row-independent, so each part's logits are those of
// forward() on its own.
const float* Engine::run_batch(const SequenceChunk* parts, int64_t count) {
  int64_t total = 0;
  bool decode_only = true;
  for (int64_t i = 0; i < count; ++i) {
    total += parts[i].n;
    decode_only = decode_only && parts[i].n == 1;
  }
  // A step of decode tokens only is profiled as one decode step whatever its rows
  // (decode_profile.h); any other pass goes to the prefill profile.
  DecodeProfile* const profiled = step_profile(decode_only);
  DecodeOpClock clock(profiled);
  begin_step(total);
  const int64_t H = cfg_.hidden, V = cfg_.vocab;
  int64_t out_rows = 0;
  batch_out_.clear();  // each part's first row in the result
  for (int64_t i = 0; i < count; ++i) {
    batch_out_.push_back(out_rows);
    out_rows += parts[i].logit_rows();
  }
  logits_.grow(*be_, out_rows * V);
  int64_t part = 0, offset = 0;  // the next row to place: parts[part]'s token `offset`
  while (part < count) {
    segments_.clear();
    batch_tokens_.clear();
    batch_ends_.clear();
    int64_t rows = 0;
    while (part < count && rows < prefill_chunk_) {
      const SequenceChunk& p = parts[part];
      const int64_t take = std::min(p.n - offset, prefill_chunk_ - rows);
      segments_.push_back({p.seq, rows, take});
      batch_tokens_.insert(batch_tokens_.end(), p.tokens + offset, p.tokens + offset + take);
      if (p.every_row)
        for (int64_t j = 0; j < take; ++j)
          batch_ends_.push_back({batch_out_[size_t(part)] + offset + j, rows + j});
      rows += take;
      offset += take;
      if (offset == p.n) {
        if (p.logits && !p.every_row) batch_ends_.push_back({batch_out_[size_t(part)], rows - 1});
        ++part;
        offset = 0;
      }
    }
    run_rows(batch_tokens_.data(), rows, clock);
    const int64_t k = int64_t(batch_ends_.size());
    if (k == 0) continue;
    for (int64_t j = 0; j < k; ++j)
      norm(w_.final_norm, h_.data() + batch_ends_[size_t(j)].second * H, xn_.data() + j * H, 1);
    clock.lap(DecodeOp::kNormsResidual);
    // Result rows in a row (the usual case) take their logits in place; others through a
    // buffer.
    const int64_t first = batch_ends_.front().first;
    const bool adjacent = batch_ends_.back().first - first == k - 1;
    if (!adjacent) batch_logits_.grow(*be_, k * V);
    float* out = adjacent ? logits_.data() + first * V : batch_logits_.data();
    be_->linear({.lin = &w_.lm_head, .x = xn_.data(), .rows = k, .out = out});
    scale_logits(out, k);
    if (!adjacent)
      for (int64_t j = 0; j < k; ++j)
        be_->copy(logits_.data() + batch_ends_[size_t(j)].first * V, out + j * V, V);
    clock.lap(DecodeOp::kLmHead);
  }
  end_step(total, profiled);
  return host_logits(out_rows * V);
}

}  // namespace moex::model::engine
