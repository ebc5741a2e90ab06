// The CUDA half of `moex tune --backend cuda`: the CUDA Dff sweep per preset shape and bit
// width, the cap by tune's rule (points within noise are ties), and the calibration entry for
// backend cuda keyed by the device name. Without CUDA built in it throws kBuiltWithoutCuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/util_report.h"
#include "tools/util_tune_report.h"

namespace moex::tools {

struct CudaTuneArgs {
  std::vector<int> bits;      // gate, up and down bits of each swept shape
  std::vector<int64_t> dffs;  // strictly increasing multiples of group_size
  int repeats = 15;           // timed graph replays per path and point
  int group_size = 64;
  std::string path;           // the calibration file
  bool path_is_default = true;
  ShapePresets shapes;        // the (hidden, top_k) pairs to sweep
  ReportFormat format = ReportFormat::kMarkdown;
};

// cuda::default_dff_grid() (256 .. 16384, the Dffs of docs/background.md §4 included); throws
// kBuiltWithoutCuda without CUDA.
std::vector<int64_t> cuda_default_dff_grid();

// Checks the device, sweeps, writes the entry and prints the report; returns 0.
int run_tune_cuda(const CudaTuneArgs& a);

}  // namespace moex::tools
