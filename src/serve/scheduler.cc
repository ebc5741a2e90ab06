// Scheduler: admission into slots (a slot's own prefix or the prompt cache's), steps that run
// every decoding slot's next token and prompt chunks within a token budget in one pass, each
// slot's Generator (processors, sampling, stop and length rules), the context rule,
// cancellation, saving finished sequences to the prompt cache; speculative passes (their rows
// stepped through in order, drafts not kept taken back).
#include "serve/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/parallel.h"
#include "generate/mtp_draft.h"
#include "generate/speculative.h"
#include "model/engine/sequence_state.h"
#include "model/engine/session.h"

namespace moex::serve {

namespace eng = model::engine;

struct Scheduler::Slot {
  std::unique_ptr<eng::Sequence> seq;
  std::vector<int32_t> held;  // the ids seq holds (the prompt cache of the next request)
  PromptCache::Match load;    // admitted with a cached prefix, loaded at the next step
  std::vector<PromptCache::Checkpoint> checkpoints;  // recurrent states at its prompt's end
  std::shared_ptr<RequestStream> stream;  // null: free
  GenerationRequest request;
  std::optional<generate::Generator> gen;
  int64_t prefilled = 0;  // prompt tokens in seq (reused or run)
  int32_t next = 0;       // sampled and delivered, to run at the next decode step
  SpecPass pass;          // the step's decode tokens: next, and drafts with --spec
  // --spec mtp: the MTP module's state, following seq (the hidden states of what each step
  // runs on it, cut where seq is cut).
  std::unique_ptr<generate::MtpSpeculator> mtp;
  int64_t admitted = 0;   // admission order: the oldest prefills first
  bool decoding() const { return stream && prefilled == int64_t(request.prompt.size()); }
};

namespace {

// The log-probability of `id` and the k most likely tokens under log_softmax(logits).
void fill_logprobs(const float* logits, int64_t vocab, int k, GeneratedToken& t,
                   std::vector<int32_t>& order) {
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - mx);
  const double lse = double(mx) + std::log(sum);
  t.logprob = float(double(logits[t.id]) - lse);
  t.top.clear();
  if (k <= 0) return;
  order.resize(size_t(vocab));
  std::iota(order.begin(), order.end(), 0);
  const auto kk = std::min<int64_t>(k, vocab);
  std::partial_sort(order.begin(), order.begin() + kk, order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (int64_t i = 0; i < kk; ++i)
    t.top.push_back({order[size_t(i)], float(double(logits[order[size_t(i)]]) - lse)});
}

}  // namespace

int64_t default_batch_tokens(int threads) {
  return std::clamp<int64_t>(int64_t{32} * std::max(threads, 1), 64, 2048);
}

Scheduler::Scheduler(eng::Engine& engine, SchedulerOptions options)
    : engine_(engine), opt_(std::move(options)) {
  if (opt_.parallel < 1 || opt_.parallel > kMaxParallel)
    fail("parallel: expected 1..", kMaxParallel, " slots, got ", opt_.parallel);
  if (opt_.queue_limit < 0) fail("queue limit must be >= 0, got ", opt_.queue_limit);
  if (opt_.batch_tokens < 0 || opt_.batch_tokens > kMaxBatchTokens)
    fail("batch tokens: expected 1..", kMaxBatchTokens,
         " prompt tokens per step, or 0 for the default; got ", opt_.batch_tokens);
  batch_tokens_ = opt_.batch_tokens > 0 ? opt_.batch_tokens : default_batch_tokens(num_threads());
  if (opt_.spec.on) {
    if (opt_.spec.draft < 1 || opt_.spec.draft > generate::kMaxDraftTokens)
      fail("--spec-draft: expected 1..", generate::kMaxDraftTokens, " draft tokens, got ",
           opt_.spec.draft);
    if (!opt_.spec.mtp)
      drafter_ = std::make_unique<generate::NgramDrafter>(opt_.spec.ngram);  // checks the n
  }
  // A recurrent state serves only at the lengths the cache holds one for, and the module's rows
  // stop one position short of those (see the admission): nothing would load.
  if (opt_.spec.on && opt_.spec.mtp && opt_.prompt_cache_bytes > 0 &&
      model::recurrent_state_bytes(engine_.config()) > 0)
    fail("--spec mtp: the prompt cache does not serve a model with recurrent layers (",
         engine_.config().family, ") with it; turn it off");
  for (int i = 0; i < opt_.parallel; ++i) {
    auto s = std::make_unique<Slot>();
    s->seq = engine_.new_sequence();
    if (opt_.spec.on && opt_.spec.mtp) {
      s->mtp = std::make_unique<generate::MtpSpeculator>(engine_, *s->seq);
      if (opt_.on_mtp_draft) {
        Slot* slot = s.get();
        s->mtp->on_draft_logits = [this, slot](int64_t row, const float* logits) {
          std::vector<int32_t> history = slot->held;
          history.push_back(slot->next);
          opt_.on_mtp_draft(history, row, logits);
        };
      }
    }
    slots_.push_back(std::move(s));
  }
  if (opt_.prompt_cache_bytes > 0)
    cache_ = std::make_unique<PromptCache>(opt_.prompt_cache_bytes, opt_.prompt_cache_block);
  stats_.prompt_cache.budget_bytes = opt_.prompt_cache_bytes;
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { shutdown(); }

Scheduler::Submitted Scheduler::submit(GenerationRequest r) {
  const int64_t V = engine_.vocab(), C = engine_.context();
  if (r.prompt.empty()) fail("prompt: no tokens");
  for (size_t i = 0; i < r.prompt.size(); ++i)
    if (r.prompt[i] < 0 || r.prompt[i] >= V)
      fail("prompt: token id ", r.prompt[i], " at index ", i, " is outside the vocabulary [0, ",
           V, ")");
  if (int64_t(r.prompt.size()) >= C)
    fail("prompt: ", r.prompt.size(), " tokens leave no room to generate in the context of ", C,
         " tokens (--ctx-size)");
  if (r.top_logprobs < 0 || r.top_logprobs > kMaxTopLogprobs)
    fail("top_logprobs: expected 0..", kMaxTopLogprobs, ", got ", r.top_logprobs);
  generate::Generator::validate(r.params, V);  // throws naming the field
  Submitted out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      out.refusal = "the server is shutting down";
      return out;
    }
    if (int64_t(queue_.size()) >= opt_.queue_limit) {
      ++stats_.rejected;
      out.refusal = str_cat(opt_.parallel == 1 ? "the one slot is" : "all slots are", " busy and ",
                            queue_.size(), queue_.size() == 1 ? " request is" : " requests are",
                            " waiting (the queue limit)");
      out.queue_full = true;
      return out;
    }
    out.stream = std::make_shared<RequestStream>();
    queue_.push_back({std::move(r), out.stream});
    stats_.queued = int(queue_.size());
  }
  cv_.notify_all();
  return out;
}

void Scheduler::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// Each queued request goes to the free slot holding the longest usable prefix of its prompt
// (a recurrent state only at its own length), or loads a longer one from the prompt cache
// there at the next step.
void Scheduler::admit_locked() {
  while (!queue_.empty()) {
    Pending& p = queue_.front();
    if (p.stream->cancelled()) {
      p.stream->finish(Finish::kCancelled);
      ++stats_.cancelled;
      queue_.pop_front();
      continue;
    }
    const std::vector<int32_t>& prompt = p.request.prompt;
    Slot* best = nullptr;
    int64_t best_keep = -1;
    for (auto& s : slots_) {
      if (s->stream) continue;
      int64_t keep = eng::reusable_prefix(s->held, prompt);
      if (!s->seq->can_truncate() && keep != int64_t(s->held.size())) keep = 0;
      if (keep > best_keep) best = s.get(), best_keep = keep;
    }
    if (best == nullptr) break;
    Slot& s = *best;
    int64_t keep = 0;
    PromptCache::Match m;
    if (cache_) m = cache_->lookup(prompt, int64_t(prompt.size()) - 1);
    // --spec mtp: the module's row p needs the token after p, so a shared prefix of L tokens
    // loads L - 1 positions, and no more than the module rows the entry holds.
    if (s.mtp && m.length > 0) m.length = std::min(m.length - 1, cache_->module_rows(m.entry));
    if (m.length > best_keep) {
      s.load = m;  // the free slot's sequence is in the cache already (saved when it finished)
      keep = m.length;
    } else {
      if (cache_) cache_->count_miss();
      keep = eng::rewind_to(*s.seq, s.held, best_keep);
      if (s.mtp) s.mtp->rewind(keep);  // the module keeps the rows of the slot's own prefix
    }
    s.request = std::move(p.request);
    s.stream = std::move(p.stream);
    s.gen.emplace(s.request.params, opt_.stop_ids, engine_.vocab(), s.request.prompt);
    if (s.request.grammar) s.gen->add_processor(s.request.grammar->processor());
    s.prefilled = keep;
    s.admitted = admissions_++;
    s.stream->set_prompt(int64_t(s.request.prompt.size()), keep);
    stats_.cached_tokens += keep;
    queue_.pop_front();
  }
  stats_.queued = int(queue_.size());
  stats_.active = active_slots();
}

int Scheduler::active_slots() const {
  return int(std::count_if(slots_.begin(), slots_.end(),
                           [](const auto& s) { return bool(s->stream); }));
}

void Scheduler::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !queue_.empty() || active_slots() > 0;
      });
      if (stopping_) {
        for (auto& s : slots_)
          if (s->stream) s->stream->finish(Finish::kCancelled), s->stream.reset();
        for (Pending& p : queue_) p.stream->finish(Finish::kCancelled);
        queue_.clear();
        stats_.active = stats_.queued = 0;
        return;
      }
      admit_locked();
    }
    step();
  }
}

void Scheduler::finish(Slot& s, Finish f, const std::string& error) {
  s.stream->finish(f, error);
  s.stream.reset();
  if (cache_ && f != Finish::kError && !s.held.empty()) {
    try {
      ModuleRows module;  // --spec mtp: the module's rows beside the sequence's
      if (s.mtp) module = {&s.mtp->module_sequence(), s.mtp->settled_rows()};
      cache_->save(s.held, *s.seq, std::move(s.checkpoints), module);
    } catch (const std::exception& e) {  // out of memory: the request is answered all the same
      std::fprintf(stderr, "moex serve: the prompt cache could not save a sequence: %s\n",
                   e.what());
    }
  }
  s.checkpoints.clear();
}

void Scheduler::fail_slot(Slot& s, const std::string& error) {
  s.seq->reset();
  s.held.clear();
  finish(s, Finish::kError, error);
}

void Scheduler::step() {
  const int64_t V = engine_.vocab();
  std::vector<int32_t> order;
  int64_t completed = 0, cancelled = 0, prefill_tokens = 0, rows_run = 0;
  int64_t drafted = 0, accepted = 0;
  // A sampled token: delivered unless it is a stop id; what ends the request, if anything.
  struct Sampled {
    int32_t token = -1;
    Finish end = Finish::kNone;
    std::string error;
  };
  auto sample = [&](Slot& s, const float* logits) {
    Sampled r;
    generate::Step st;
    try {
      st = s.gen->next(logits);
    } catch (const std::exception& e) {
      r.end = Finish::kError;
      r.error = e.what();
      return r;
    }
    r.token = st.token;
    if (st.end == generate::StepEnd::kStop) {
      r.end = Finish::kStop;
      return r;
    }
    GeneratedToken t;
    t.id = st.token;
    if (s.request.logprobs) fill_logprobs(st.logits.data(), V, s.request.top_logprobs, t, order);
    s.next = t.id;
    s.stream->push(std::move(t));
    if (st.end == generate::StepEnd::kLength) r.end = Finish::kLength;
    return r;
  };
  // The request ends as `r` says, or at the end of the context when nothing else ended it.
  auto conclude = [&](Slot& s, const Sampled& r) {
    Finish end = r.end;
    if (end == Finish::kNone && s.seq->position() + 1 > s.seq->context()) end = Finish::kContext;
    if (end == Finish::kNone) return;
    finish(s, end, r.error);
    ++completed;
  };
  // Slots whose pass kept fewer tokens than it ran on recurrent states: rewound, their kept
  // tokens run again (together, after the step), then concluded.
  std::vector<Slot*> rerun_slots;
  std::vector<Sampled> rerun_ends;
  std::vector<eng::SequenceChunk> reruns;
  // A decode pass's rows: row i holds the logits after tokens()[0..i], the generator's next
  // step while every draft before it was what the generator output; the first token that
  // differs from its draft (or ends the request) ends the pass.
  auto take_pass = [&](Slot& s, const float* rows) {
    const std::vector<int32_t>& pass = s.pass.tokens();
    const int64_t n = s.pass.size();
    Sampled r;
    int64_t kept = 0;
    while (kept < n) {
      s.held.push_back(pass[size_t(kept)]);
      r = sample(s, rows + kept * V);
      ++kept;
      const bool as_drafted = kept < n && r.token == pass[size_t(kept)];
      accepted += as_drafted;
      if (!as_drafted || r.end != Finish::kNone) break;
    }
    drafted += n - 1;
    int64_t again = 0;
    try {
      again = s.pass.keep(*s.seq, kept);
      // The module keeps the kept rows' hidden states, also those a recurrent model runs again
      // (the rerun's rows equal the pass's).
      if (s.mtp) s.mtp->rewind(s.seq->position() + again);
    } catch (const std::exception& e) {
      fail_slot(s, e.what());
      ++completed;
      return;
    }
    if (again == 0) return conclude(s, r);
    rerun_slots.push_back(&s);
    rerun_ends.push_back(std::move(r));
    reruns.push_back({s.seq.get(), pass.data(), again, false});
  };

  // Prefixes admitted from the prompt cache, loaded before anything can evict them.
  for (auto& s : slots_) {
    if (s->load.length == 0) continue;
    const std::vector<int32_t>& prompt = s->request.prompt;
    try {
      cache_->load(s->load, *s->seq, s->mtp ? &s->mtp->module_sequence() : nullptr);
      if (s->mtp) s->mtp->loaded(s->load.length);
      s->held.assign(prompt.begin(), prompt.begin() + s->load.length);
    } catch (const std::exception& e) {
      fail_slot(*s, e.what());
      ++completed;
    }
    s->load = {};
  }
  for (auto& s : slots_) {
    if (s->stream && s->stream->cancelled()) {
      finish(*s, Finish::kCancelled);
      ++cancelled;
    }
  }
  // One forward pass for the step: the next token of every decoding slot (and its drafts, with
  // the logits of each), then prompt chunks of the slots still prefilling, oldest first,
  // within the step's prompt-token budget (a slot whose prompt ends here samples its first
  // token now and decodes from the next step).
  std::vector<Slot*> who;
  std::vector<eng::SequenceChunk> parts;
  for (auto& s : slots_) {
    if (!s->decoding()) continue;
    const int64_t k = opt_.spec.on
                          ? draft_length(opt_.spec.draft, s->seq->context() - s->seq->position(),
                                         s->request.params.max_tokens - s->gen->generated())
                          : 0;
    generate::Drafter* drafter = s->mtp ? s->mtp.get() : drafter_.get();
    try {
      s->pass.begin(*s->seq, s->next, s->held, k, drafter);
    } catch (const std::exception& e) {  // the module's pass: out of memory, a bad state
      fail_slot(*s, e.what());
      ++completed;
      continue;
    }
    who.push_back(s.get());
    eng::SequenceChunk c{s->seq.get(), s->pass.tokens().data(), s->pass.size(), true};
    c.every_row = c.n > 1;
    parts.push_back(c);
    rows_run += c.n;
  }
  const size_t decoding = parts.size();
  std::vector<Slot*> prefilling;
  for (auto& s : slots_)
    if (s->stream && !s->decoding()) prefilling.push_back(s.get());
  std::sort(prefilling.begin(), prefilling.end(),
            [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });
  int64_t budget = batch_tokens_;
  for (Slot* s : prefilling) {
    if (budget <= 0) break;
    const std::vector<int32_t>& prompt = s->request.prompt;
    const int64_t n = std::min(budget, int64_t(prompt.size()) - s->prefilled);
    const bool last = s->prefilled + n == int64_t(prompt.size());
    who.push_back(s);
    parts.push_back({s->seq.get(), prompt.data() + s->prefilled, n, last});
    budget -= n;
  }
  if (!parts.empty()) {
    const float* logits = nullptr;
    // --spec mtp: every row's final hidden state, in the parts' order, for the slots' modules.
    std::vector<float> hidden;
    const bool mtp = opt_.spec.on && opt_.spec.mtp;
    try {
      const eng::Engine::HiddenCapture capture(engine_, mtp ? &hidden : nullptr);
      logits = engine_.forward_batch(parts.data(), int64_t(parts.size()));
    } catch (const std::exception& e) {
      for (Slot* s : who) {
        fail_slot(*s, e.what());
        ++completed;
      }
      rows_run = 0;
    }
    const int64_t H = engine_.config().hidden;
    int64_t out_row = 0, hidden_row = 0;  // part i's first row of logits / hidden states
    for (size_t i = 0; logits && i < parts.size(); ++i) {
      Slot& s = *who[i];
      const float* row = logits + out_row * V;
      out_row += parts[i].logit_rows();
      if (s.mtp) s.mtp->add_hidden(hidden.data() + hidden_row * H, parts[i].n);
      hidden_row += parts[i].n;
      if (i < decoding) {
        take_pass(s, row);
        continue;
      }
      s.held.insert(s.held.end(), parts[i].tokens, parts[i].tokens + parts[i].n);
      s.prefilled += parts[i].n;
      prefill_tokens += parts[i].n;
      if (s.mtp) {
        try {  // the module's rows whose next token the prompt gives
          s.mtp->catch_up(s.held.data(), int64_t(s.held.size()));
        } catch (const std::exception& e) {
          fail_slot(s, e.what());
          ++completed;
          continue;
        }
      }
      if (!s.decoding()) continue;
      // A recurrent state serves later prompts only at its exact length: keep the one at this
      // prompt's end, which the next turn of a conversation starts with.
      if (cache_ && !s.seq->can_truncate())
        s.checkpoints.push_back({s.seq->position(), eng::copy_recurrent_states(*s.seq)});
      conclude(s, sample(s, row));
    }
  }
  if (!reruns.empty()) {
    bool ran = true;
    try {
      engine_.forward_batch(reruns.data(), int64_t(reruns.size()));
    } catch (const std::exception& e) {
      for (Slot* s : rerun_slots) {
        fail_slot(*s, e.what());
        ++completed;
      }
      ran = false;
    }
    for (size_t i = 0; ran && i < rerun_slots.size(); ++i) conclude(*rerun_slots[i], rerun_ends[i]);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (rows_run) ++stats_.steps;
  stats_.decoded_rows += rows_run;
  stats_.spec_drafted += drafted;
  stats_.spec_accepted += accepted;
  stats_.spec_reruns += int64_t(reruns.size());
  stats_.prefill_tokens += prefill_tokens;
  stats_.completed += completed;
  stats_.cancelled += cancelled;
  stats_.active = active_slots();
  if (cache_) stats_.prompt_cache = cache_->stats();
}

}  // namespace moex::serve
