// The base run's logits for `moex perplexity --kl-divergence`, streamed to and from disk
// (a 151,936-token vocabulary over thousands of positions does not fit in memory).
//
// Layout (little-endian): a 48-byte header
//   "MOEXLGT1" | u32 version = 1 | u32 vocab | u32 ctx | u32 chunks | u32 first | u32 0 |
//   u64 scored rows (= chunks * (ctx - 1 - first)) | u64 0
// then the evaluated tokens, int32 [chunks * ctx], then one f32 row [vocab] of raw logits per
// scored position, chunk by chunk. Full f32 rows, not llama.cpp's 16-bit log-probabilities:
// the precision tiers move the KL divergence by 1e-9..1e-4 nats, below what a 16-bit code of
// the log-probabilities resolves (docs/perplexity.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/atomic_write.h"

namespace moex::eval {

struct LogitsFileHeader {
  int64_t vocab = 0, ctx = 0, chunks = 0, first = 0;
  int64_t scored_per_chunk() const { return ctx - 1 - first; }
  int64_t scored_rows() const { return chunks * scored_per_chunk(); }
  // Bytes of the whole file this header describes.
  uint64_t file_bytes() const;
};

inline constexpr int64_t kMaxLogitsVocab = int64_t{1} << 24;
inline constexpr int64_t kMaxLogitsCtx = int64_t{1} << 24;
inline constexpr int64_t kMaxLogitsChunks = int64_t{1} << 24;

// Writes the header and tokens at once, then the rows as they come; the file appears under
// its name only at finish() (core/atomic_write.h), so an interrupted run leaves none.
class LogitsFileWriter {
 public:
  LogitsFileWriter(const std::string& path, const LogitsFileHeader& h,
                   const std::vector<int32_t>& tokens);
  void write_row(const float* logits);
  void finish();  // moex::Error unless exactly scored_rows() rows were written

 private:
  LogitsFileHeader h_;
  AtomicFileWriter out_;
  int64_t rows_ = 0;
};

// Reads and checks a file written by LogitsFileWriter (or the reference script): the magic,
// version and header ranges, the file's size against what the header implies, before any
// row is read. Every problem is a moex::Error naming the file and the field.
class LogitsFileReader {
 public:
  explicit LogitsFileReader(const std::string& path);
  ~LogitsFileReader();
  LogitsFileReader(const LogitsFileReader&) = delete;
  LogitsFileReader& operator=(const LogitsFileReader&) = delete;

  const LogitsFileHeader& header() const { return h_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  void read_row(float* logits);  // the next row; moex::Error past the last
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  LogitsFileHeader h_;
  std::vector<int32_t> tokens_;
  int64_t rows_read_ = 0;
};

}  // namespace moex::eval
