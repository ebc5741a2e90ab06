// Expert-parallel serving (expert_parallel_steps.h): rank 0 announces each validated step, the
// other ranks replay it.
// A command is one broadcast of int32s:
//   forward: kForward, sequence number, its position before the step, n, the n tokens
//   batch:   kBatch, parts, then per part: sequence number, position before the step, n,
//            the n tokens
//   release: kRelease
// A follower brings its copy of the sequence to the announced position first: the leader may
// have rewound it (prompt cache) or reset it (an error, or a state that cannot rewind).
#include "model/engine/expert_parallel_steps.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/error.h"

namespace moex::model::engine {

namespace {
enum Command : int32_t { kRelease = 0, kForward = 1, kBatch = 2 };

void bring_to(Sequence& s, int64_t position) {
  if (s.position() == position) return;
  if (position > s.position() || !s.truncate(position))
    fail("expert-parallel follower: the leader's sequence is at position ", position,
         ", this rank's copy at ", s.position(), " and cannot follow");
}
}  // namespace

ExpertParallelSteps::ExpertParallelSteps(dist::Collective& collective) : c_(collective) {
  stats_.rank = c_.rank();
  stats_.ranks = c_.size();
  stats_.experts_run.assign(size_t(stats_.ranks), 0);
}

void ExpertParallelSteps::reset_stats() {
  std::fill(stats_.experts_run.begin(), stats_.experts_run.end(), 0);
  stats_.step_imbalance.clear();
}

void ExpertParallelSteps::end_step(std::vector<int64_t>& run) {
  int64_t most = 0, total = 0;
  for (size_t r = 0; r < run.size() && r < stats_.experts_run.size(); ++r) {
    stats_.experts_run[r] += run[r];
    most = std::max(most, run[r]);
    total += run[r];
  }
  if (total > 0) stats_.step_imbalance.push_back(double(most) * double(run.size()) / double(total));
  std::fill(run.begin(), run.end(), 0);
}

void ExpertParallelSteps::lead() {
  if (c_.rank() != 0) fail("lead_followers: only rank 0 leads");
  leading_ = true;
}

void ExpertParallelSteps::announce_forward(const Sequence& seq, const int32_t* tokens, int64_t n) {
  std::vector<int32_t> cmd = {kForward, seq.id_, int32_t(seq.pos_), int32_t(n)};
  cmd.insert(cmd.end(), tokens, tokens + n);
  c_.broadcast_from_root(cmd);
}

void ExpertParallelSteps::announce_batch(const SequenceChunk* parts, int64_t count) {
  std::vector<int32_t> cmd = {kBatch, int32_t(count)};
  for (int64_t i = 0; i < count; ++i) {
    cmd.push_back(parts[i].seq->id_);
    cmd.push_back(int32_t(parts[i].seq->pos_));
    cmd.push_back(int32_t(parts[i].n));
    cmd.insert(cmd.end(), parts[i].tokens, parts[i].tokens + parts[i].n);
  }
  c_.broadcast_from_root(cmd);
}

void ExpertParallelSteps::release() {
  if (!leading_) return;
  std::vector<int32_t> cmd = {kRelease};
  c_.broadcast_from_root(cmd);
  leading_ = false;
}

void ExpertParallelSteps::follow(StepRunner& runner) {
  if (c_.rank() == 0) fail("follow_leader: only ranks other than 0 follow");
  std::map<int32_t, std::unique_ptr<Sequence>> seqs;  // the leader's numbers -> this rank's copies
  auto copy_of = [&](int32_t id) -> Sequence& {
    std::unique_ptr<Sequence>& s = seqs[id];
    if (!s) s = runner.new_sequence();
    return *s;
  };
  std::vector<int32_t> cmd;
  std::vector<SequenceChunk> parts;
  for (;;) {
    c_.broadcast_from_root(cmd);
    if (cmd.empty() || cmd[0] == kRelease) return;
    try {
      if (cmd[0] == kForward && cmd.size() >= 4 && cmd.size() == size_t(4 + cmd[3])) {
        Sequence& s = copy_of(cmd[1]);
        bring_to(s, cmd[2]);
        runner.run_forward(s, cmd.data() + 4, cmd[3], false);
      } else if (cmd[0] == kBatch && cmd.size() >= 2 && cmd[1] > 0) {
        parts.clear();
        size_t at = 2;
        for (int32_t i = 0; i < cmd[1]; ++i) {
          if (cmd.size() < at + 3 || cmd[at + 2] <= 0 ||
              cmd.size() - (at + 3) < size_t(cmd[at + 2]))
            fail("expert-parallel follower: a malformed batch from rank 0 (part ", i, ")");
          Sequence& s = copy_of(cmd[at]);
          bring_to(s, cmd[at + 1]);
          // Followers need only the hidden states, not the logits.
          parts.push_back({&s, cmd.data() + at + 3, cmd[at + 2], false});
          at += 3 + size_t(cmd[at + 2]);
        }
        if (at != cmd.size()) fail("expert-parallel follower: a malformed batch from rank 0");
        runner.run_batch(parts.data(), int64_t(parts.size()));
      } else {
        fail("expert-parallel follower: a malformed command from rank 0 (", cmd.size(), " ints)");
      }
    } catch (const std::exception& e) {
      stop_every_rank(e.what());
    }
  }
}

void ExpertParallelSteps::stop_every_rank(const char* what) const {
  std::fprintf(stderr, "moex: error: [rank %d of %d] an expert-parallel step failed: %s; stopping "
               "every rank\n", c_.rank(), c_.size(), what);
  std::fflush(stderr);
  c_.abort(4);
  std::_Exit(4);
}

}  // namespace moex::model::engine
