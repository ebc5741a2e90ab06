// Scratch directory, file writing and input splitting for the fuzz targets (fuzz_util.h).
#include "fuzz_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace moex::fuzz {

namespace {
std::string g_dir;
void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}
}  // namespace

const std::string& scratch_dir() {
  if (g_dir.empty()) {
    struct stat st {};
    const char* base = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : nullptr;
    if (!base) base = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string templ = std::string(base) + "/moex_fuzz_XXXXXX";
    if (!::mkdtemp(templ.data())) {
      std::perror("moex fuzz: mkdtemp");
      std::abort();
    }
    g_dir = templ;
    std::atexit(remove_scratch);
  }
  return g_dir;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "moex fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void remove_file(const std::string& path) { ::unlink(path.c_str()); }

std::vector<std::string_view> split_at_nul(const uint8_t* data, size_t size, size_t max_parts) {
  std::vector<std::string_view> parts;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (parts.size() + 1 < max_parts) {
    const size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) break;
    parts.push_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  parts.push_back(rest);
  return parts;
}

void invariant_failed(const char* target, const std::string& what) {
  std::fprintf(stderr, "moex fuzz %s: invariant broken: %s\n", target, what.c_str());
  std::abort();
}

}  // namespace moex::fuzz
