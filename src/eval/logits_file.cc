#include "eval/logits_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace moex::eval {
namespace {

constexpr char kMagic[8] = {'M', 'O', 'E', 'X', 'L', 'G', 'T', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 48;

void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void check_ranges(const LogitsFileHeader& h, const std::string& where) {
  if (h.vocab < 1 || h.vocab > kMaxLogitsVocab)
    fail(where, ": vocab ", h.vocab, " is outside 1..", kMaxLogitsVocab);
  if (h.ctx < 4 || h.ctx > kMaxLogitsCtx) fail(where, ": ctx ", h.ctx, " is outside 4..", kMaxLogitsCtx);
  if (h.chunks < 1 || h.chunks > kMaxLogitsChunks)
    fail(where, ": chunks ", h.chunks, " is outside 1..", kMaxLogitsChunks);
  if (h.first < 0 || h.first > h.ctx - 2)
    fail(where, ": first scored position ", h.first, " is outside 0..", h.ctx - 2);
}

}  // namespace

uint64_t LogitsFileHeader::file_bytes() const {
  // Every factor is bounded by check_ranges (2^24 each): the products fit 64 bits.
  return kHeaderBytes + uint64_t(chunks) * uint64_t(ctx) * 4 +
         uint64_t(scored_rows()) * uint64_t(vocab) * 4;
}

LogitsFileWriter::LogitsFileWriter(const std::string& path, const LogitsFileHeader& h,
                                   const std::vector<int32_t>& tokens)
    : h_(h), out_(path, "logits file") {
  check_ranges(h, "logits file " + path);
  if (int64_t(tokens.size()) != h.chunks * h.ctx)
    fail("logits file ", path, ": ", tokens.size(), " tokens for ", h.chunks, " chunks of ",
         h.ctx);
  unsigned char head[kHeaderBytes] = {};
  std::memcpy(head, kMagic, 8);
  put32(head + 8, kVersion);
  put32(head + 12, uint32_t(h.vocab));
  put32(head + 16, uint32_t(h.ctx));
  put32(head + 20, uint32_t(h.chunks));
  put32(head + 24, uint32_t(h.first));
  put64(head + 32, uint64_t(h.scored_rows()));
  out_.write(head, sizeof head);
  out_.write(tokens.data(), tokens.size() * sizeof(int32_t));
}

void LogitsFileWriter::write_row(const float* logits) {
  if (rows_ >= h_.scored_rows()) fail("logits file: more than ", h_.scored_rows(), " rows");
  out_.write(logits, size_t(h_.vocab) * sizeof(float));
  ++rows_;
}

void LogitsFileWriter::finish() {
  if (rows_ != h_.scored_rows())
    fail("logits file: ", rows_, " rows written, the header says ", h_.scored_rows());
  out_.commit();
}

LogitsFileReader::LogitsFileReader(const std::string& path) : path_(path) {
  const std::string where = "logits file " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(where, ": cannot open: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(where, ": not a regular file");
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) fail(where, ": cannot open: ", std::strerror(errno));
  unsigned char head[kHeaderBytes];
  if (std::fread(head, 1, sizeof head, f_) != sizeof head)
    fail(where, ": shorter than its ", kHeaderBytes, "-byte header");
  if (std::memcmp(head, kMagic, 8) != 0)
    fail(where, ": not a moex logits file (no MOEXLGT1 magic; write one with moex perplexity "
         "--save-logits)");
  if (get32(head + 8) != kVersion)
    fail(where, ": version ", get32(head + 8), ", this moex reads version ", kVersion);
  h_.vocab = get32(head + 12);
  h_.ctx = get32(head + 16);
  h_.chunks = get32(head + 20);
  h_.first = get32(head + 24);
  check_ranges(h_, where);
  if (get64(head + 32) != uint64_t(h_.scored_rows()))
    fail(where, ": header says ", get64(head + 32), " scored rows, its ctx/first/chunks give ",
         h_.scored_rows());
  if (uint64_t(st.st_size) != h_.file_bytes())
    fail(where, ": ", st.st_size, " bytes, its header describes ", h_.file_bytes(),
         " (truncated or not written by moex perplexity)");
  tokens_.resize(size_t(h_.chunks * h_.ctx));
  if (std::fread(tokens_.data(), sizeof(int32_t), tokens_.size(), f_) != tokens_.size())
    fail(where, ": cannot read its tokens");
  for (int32_t t : tokens_)
    if (t < 0 || t >= h_.vocab) fail(where, ": token ", t, " outside its vocab of ", h_.vocab);
}

LogitsFileReader::~LogitsFileReader() {
  if (f_) std::fclose(f_);
}

void LogitsFileReader::read_row(float* logits) {
  if (rows_read_ >= h_.scored_rows())
    fail("logits file ", path_, ": all ", h_.scored_rows(), " rows already read");
  if (std::fread(logits, sizeof(float), size_t(h_.vocab), f_) != size_t(h_.vocab))
    fail("logits file ", path_, ": cannot read row ", rows_read_);
  ++rows_read_;
}

}  // namespace moex::eval
