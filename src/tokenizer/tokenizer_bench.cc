// moex_tokenizer_bench: single-thread encoding throughput of moex::Tokenizer on a corpus file
// split into chunks at line boundaries (the same chunks reference/tokenizer_bench.py gives
// the `tokenizers` package). Prints MB/s (median of --reps), token count and a checksum.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strict_parse.h"
#include "tokenizer/tokenizer.h"

namespace {

struct BenchArgs {
  std::string tokenizer;
  std::string corpus;
  size_t chunk_bytes = 4096;
  int reps = 3;
};

BenchArgs parse_args(int argc, char** argv) {
  BenchArgs a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--tokenizer") a.tokenizer = v;
    else if (k == "--corpus") a.corpus = v;
    else if (k == "--chunk-bytes") a.chunk_bytes = size_t(moex::parse_int_strict(v, "--chunk-bytes", 1, int64_t(1) << 30));
    else if (k == "--reps") a.reps = int(moex::parse_int_strict(v, "--reps", 1, 1000000));
    else moex::fail("unknown flag ", k);
  }
  if (a.tokenizer.empty() || a.corpus.empty()) {
    moex::fail("usage: moex_tokenizer_bench --tokenizer DIR --corpus FILE [--chunk-bytes N] "
               "[--reps R]");
  }
  return a;
}

// Chunks of about `target` bytes, cut after a newline (the Python side cuts identically).
std::vector<std::string> chunk(const std::string& text, size_t target) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.size(), pos + target);
    const size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const BenchArgs a = parse_args(argc, argv);
    std::ifstream in(a.corpus, std::ios::binary);
    if (!in) moex::fail(a.corpus, ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const auto chunks = chunk(text, a.chunk_bytes);
    const moex::Tokenizer tok = moex::Tokenizer::load(a.tokenizer);
    std::vector<double> secs;
    size_t tokens = 0;
    uint64_t checksum = 0;
    for (int r = 0; r < a.reps; ++r) {
      tokens = 0;
      checksum = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& c : chunks) {
        const auto ids = tok.encode(c, false);
        tokens += ids.size();
        for (int32_t id : ids) checksum = checksum * 1000003u + static_cast<uint32_t>(id);
      }
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(secs.begin(), secs.end());
    const double med = secs[secs.size() / 2];
    std::printf("{\"mb_per_s\": %.3f, \"seconds\": %.4f, \"min_seconds\": %.4f, "
                "\"max_seconds\": %.4f, \"bytes\": %zu, \"tokens\": %zu, \"chunks\": %zu, "
                "\"checksum\": %llu}\n",
                text.size() / 1e6 / med, med, secs.front(), secs.back(), text.size(), tokens,
                chunks.size(), static_cast<unsigned long long>(checksum));
    return 0;
  } catch (const moex::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
