// --expert-parallel: the MPI run, its placement, and who prints.
#include "tools/util_expert_parallel.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/family_registry.h"

namespace moex::tools {

namespace {
std::unique_ptr<ExpertParallelRun> g_active;  // the run of this process
int g_stderr = -1;  // the user's stderr once quiet_other_ranks moved it
}  // namespace

void add_expert_parallel_flags(CLI::App& sub, ExpertParallelFlags* f) {
  sub.add_flag("--expert-parallel", f->on,
               "run as one rank of `mpirun -np R moex ...`: this rank reads and runs only its "
               "share of each layer's experts; the ranks sum their parts (docs/expert_parallel.md)");
  sub.add_option("--placement", f->placement,
                 "with --expert-parallel: a JSON file giving each expert's rank (default: each "
                 "layer's experts split evenly in contiguous runs)")
      ->type_name("FILE");
  sub.add_flag("--verify-checkpoint", f->verify_checkpoint,
               "with --expert-parallel: the ranks compare every byte of their checkpoint files "
               "(expert weights included; each rank reads its whole checkpoint once). Without it "
               "they compare config.json, the tensor list, routers and norms only");
}

ExpertParallelRun* ExpertParallelRun::start(const ExpertParallelFlags& f,
                                            const std::string& model_dir) {
  if (!f.on) {
    if (f.placement) fail("--placement needs --expert-parallel");
    if (f.verify_checkpoint) fail("--verify-checkpoint needs --expert-parallel");
    if (dist::launched_by_mpirun())
      std::fprintf(stderr, "moex: note: started by mpirun without --expert-parallel: every "
                           "process runs the whole model on its own\n");
    return nullptr;
  }
  if (g_active) fail("--expert-parallel: one run per process");
  // MPI first: an error from here on (this rank's checkpoint unreadable, say) names the rank
  // and stops every rank instead of leaving them waiting.
  std::unique_ptr<dist::Collective> world = dist::mpi_world(nullptr, nullptr);
  g_active.reset(new ExpertParallelRun);
  ExpertParallelRun* run = g_active.get();
  run->world_ = std::move(world);
  const model::ModelConfig cfg = model::load_model_config(model_dir);
  if (cfg.num_moe_layers() == 0 || cfg.moe.num_experts < 1)
    fail("--expert-parallel: ", cfg.source, " has no MoE layers to split over ranks");
  run->placement_ =
      f.placement ? dist::ExpertPlacement::from_file(*f.placement, run->ranks(), cfg.num_layers,
                                                     cfg.moe.num_experts)
                  : dist::ExpertPlacement::even(run->ranks(), cfg.num_layers, cfg.moe.num_experts);
  run->verify_every_byte_ = f.verify_checkpoint;
  if (!f.verify_checkpoint && run->root() && run->ranks() > 1)
    std::fprintf(stderr, "moex: note: the ranks' checkpoints are compared by config.json, tensor "
                         "list, routers and norms, not by their expert weights; "
                         "--verify-checkpoint compares every byte\n");
  return run;
}

void ExpertParallelRun::apply(model::engine::EngineOptions& options) {
  options.collective = world_.get();
  options.placement = &placement_;
  options.verify_every_byte = verify_every_byte_;
}

void ExpertParallelRun::quiet_other_ranks() {
  if (root()) return;
  std::fflush(stdout);
  std::fflush(stderr);
  g_stderr = ::dup(STDERR_FILENO);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null < 0) return;
  ::dup2(null, STDOUT_FILENO);
  ::dup2(null, STDERR_FILENO);
  ::close(null);
}

bool expert_parallel_fatal(const char* what, int exit_code) {
  if (!g_active) return false;
  const std::string line = str_cat("moex: error: [rank ", g_active->rank(), " of ",
                                   g_active->ranks(), "] ", what, "\n");
  const int fd = g_stderr >= 0 ? g_stderr : STDERR_FILENO;
  std::fflush(stderr);
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  g_active->collective().abort(exit_code);
  std::_Exit(exit_code);
}

void expert_parallel_finish() {
  std::fflush(stdout);
  std::fflush(stderr);
  g_active.reset();  // MPI_Finalize
}

void require_mapped_weights(const ExpertParallelRun* run) {
  if (run && io::weight_residency() == io::WeightResidency::kCopy)
    fail("--expert-parallel reads only each rank's own experts; --weights copy (or "
         "MOEX_WEIGHTS=copy) would read them all: use --weights map");
}

}  // namespace moex::tools
