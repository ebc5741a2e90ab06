// The CUDA half of `moex bench-moe --backend cuda` (cuda::bench_moe as an md/csv/json report)
// and the device check shared with `moex tune --backend cuda`. Compiles with or without the
// CUDA backend: without it (no MOEX_HAVE_CUDA) every entry point throws kBuiltWithoutCuda.
#pragma once

#include <cstdint>
#include <string>

#include "moe/moe_bench.h"
#include "tools/util_report.h"

namespace moex::tools {

inline constexpr const char* kBuiltWithoutCuda =
    "this moex was built without CUDA (-DMOEX_CUDA=OFF or no nvcc)";

// True when this moex was linked with moex_cuda.
bool cuda_built_in();

// Throws moex::Error (the moex tool exits with code 2) when CUDA is not built in
// ("<command>: --backend cuda: this moex was built without CUDA ...") or the runtime finds no
// usable device ("<command>: --backend cuda: no CUDA device found (<runtime's reason>)").
void require_cuda_device(const std::string& command);

struct CudaBenchMoeArgs {
  std::string label;  // preset name or "hidden,dff,experts,top_k"
  moe::MoeBenchShape shape;  // the same shape the CPU bench takes
  int repeats = 15;  // timed graph replays per path
  ReportFormat format = ReportFormat::kMarkdown;
  std::string note;  // extra report note ("" for none)
};

// Checks the device, times fused and fallback, prints the report on stdout; returns 0.
int run_bench_moe_cuda(const CudaBenchMoeArgs& a);

}  // namespace moex::tools
