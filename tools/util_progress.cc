// Load progress lines (see util_progress.h).
#include "tools/util_progress.h"

#include <cstdio>
#include <filesystem>

#include "core/sysinfo.h"

namespace moex::tools {

LoadProgress::LoadProgress(std::string command, std::string dir)
    : command_(std::move(command)), dir_(std::move(dir)) {
  namespace fs = std::filesystem;
  int files = 0;
  double bytes = 0;
  std::error_code ec;
  if (fs::is_regular_file(dir_, ec)) {  // a GGUF file (repacked into moex's formats at load)
    std::fprintf(stderr, "%s: loading %s (GGUF, %.2f GB; repacked in memory) ...\n",
                 command_.c_str(), dir_.c_str(), double(fs::file_size(dir_, ec)) / 1e9);
    start_ = now_seconds();
    return;
  }
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".safetensors" || !e.is_regular_file(ec)) continue;
    ++files;
    bytes += double(e.file_size(ec));
  }
  std::fprintf(stderr, "%s: loading %s (%d safetensors file%s, %.2f GB) ...\n", command_.c_str(),
               dir_.c_str(), files, files == 1 ? "" : "s", bytes / 1e9);
  start_ = now_seconds();
}

void LoadProgress::done() const {
  std::fprintf(stderr, "%s: loaded %s in %.2f s\n", command_.c_str(), dir_.c_str(),
               now_seconds() - start_);
}

}  // namespace moex::tools
