// --expert-parallel for the commands that run the engine (generate, bench-decode): MPI's
// world, the expert placement of the model, the engine options that make this process one
// rank of the run, and the output rule (rank 0 speaks; the others' stdout and stderr go to
// /dev/null, except a fatal error, which any rank prints before stopping every rank).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "dist/collective.h"
#include "dist/expert_placement.h"
#include "model/engine/engine.h"

namespace moex::tools {

struct ExpertParallelFlags {
  bool on = false;
  std::optional<std::string> placement;
  bool verify_checkpoint = false;  // compare every checkpoint byte between the ranks
};
void add_expert_parallel_flags(CLI::App& sub, ExpertParallelFlags* f);

class ExpertParallelRun {
 public:
  // nullptr without --expert-parallel (and a note on stderr when mpirun started the process
  // anyway: every rank then runs the whole model). Otherwise MPI is initialized and the
  // placement read: the even split, or --placement FILE, for model_dir's config.json. The run
  // lives until expert_parallel_finish() (main, after the command returned) or
  // expert_parallel_fatal() (main's error path): an error unwinding the command must not
  // finalize MPI while other ranks wait in a collective.
  static ExpertParallelRun* start(const ExpertParallelFlags& f, const std::string& model_dir);
  int rank() const { return world_->rank(); }
  int ranks() const { return world_->size(); }
  bool root() const { return world_->rank() == 0; }
  dist::Collective& collective() { return *world_; }
  const dist::ExpertPlacement& placement() const { return placement_; }
  // Makes the engine one rank of this run.
  void apply(model::engine::EngineOptions& options);
  // After the engine is open: on ranks other than 0, stdout and stderr go to /dev/null.
  void quiet_other_ranks();

 private:
  ExpertParallelRun() = default;
  std::unique_ptr<dist::Collective> world_;
  dist::ExpertPlacement placement_;
  bool verify_every_byte_ = false;
};

// main's error path: with a run active, prints "moex: error: [rank R] WHAT" where the user
// sees it and stops every rank (MPI_Abort) so none waits forever in a collective; returns
// false (nothing done) otherwise.
bool expert_parallel_fatal(const char* what, int exit_code);
// With a run active, --weights copy (MOEX_WEIGHTS=copy) is an error: it would read every
// expert, where each rank reads only its own. Call after the settings are applied.
void require_mapped_weights(const ExpertParallelRun* run);
// main's normal exit: finalizes MPI if a run was started.
void expert_parallel_finish();

}  // namespace moex::tools
