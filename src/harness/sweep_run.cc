// Sweep run validity and its durable CSV form.
#include "harness/sweep_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/strict_parse.h"
#include "harness/csv.h"

namespace moex::harness {

const char* arm_name(Arm a) { return a == Arm::kFused ? "fused" : "fallback"; }

std::optional<std::string> invalid_reason(const SweepRun& r) {
  if (!r.error.empty()) return "run failed: " + r.error;
  if (r.generated_tokens != r.requested_tokens)
    return str_cat("generated ", r.generated_tokens, " tokens, expected ", r.requested_tokens);
  if (r.fused_calls + r.fallback_calls == 0) return std::string("no MoE calls recorded");
  if (r.arm == Arm::kFused && r.fallback_calls > 0)
    return str_cat("fused arm ran ", r.fallback_calls, " fallback calls (", r.fallback_reasons, ")");
  if (r.arm == Arm::kFallback && r.fused_calls > 0)
    return str_cat("fallback arm ran ", r.fused_calls, " fused calls: the path switch did not apply");
  if (!(r.decode_tps > 0)) return std::string("non-positive decode tokens/s");
  return std::nullopt;
}

const std::vector<std::string>& sweep_csv_columns() {
  static const std::vector<std::string> cols = {
      "model", "dff", "hidden", "experts", "top_k", "bits", "group_size", "backend", "isa",
      "threads", "cpu_model", "moex_commit", "date", "arm", "run", "decode_tps",
      "requested_tokens", "generated_tokens", "fused_calls", "fallback_calls",
      "fallback_reasons", "default_cap", "error"};
  return cols;
}

namespace {

std::vector<std::string> to_fields(const SweepRun& r) {
  std::ostringstream tps;
  tps.precision(6);
  tps << std::fixed << r.decode_tps;
  return {r.model, std::to_string(r.dff), std::to_string(r.hidden), std::to_string(r.experts),
          std::to_string(r.top_k), std::to_string(r.bits), std::to_string(r.group_size),
          r.backend, r.isa, std::to_string(r.threads), r.cpu_model, r.commit, r.date,
          arm_name(r.arm), std::to_string(r.run), tps.str(), std::to_string(r.requested_tokens),
          std::to_string(r.generated_tokens), std::to_string(r.fused_calls),
          std::to_string(r.fallback_calls), r.fallback_reasons, std::to_string(r.default_cap),
          r.error};
}

SweepRun from_fields(const std::vector<std::string>& f, const std::string& where) {
  auto i64 = [&](int i) {
    return parse_int_strict(f[i], str_cat(where, " column ", sweep_csv_columns()[i]), INT64_MIN,
                            INT64_MAX);
  };
  SweepRun r;
  r.model = f[0];
  r.dff = i64(1);
  r.hidden = i64(2);
  r.experts = i64(3);
  r.top_k = i64(4);
  r.bits = int(i64(5));
  r.group_size = int(i64(6));
  r.backend = f[7];
  r.isa = f[8];
  r.threads = int(i64(9));
  r.cpu_model = f[10];
  r.commit = f[11];
  r.date = f[12];
  if (f[13] == "fused") {
    r.arm = Arm::kFused;
  } else if (f[13] == "fallback") {
    r.arm = Arm::kFallback;
  } else {
    fail(where, " column arm: '", f[13], "' is not fused or fallback");
  }
  r.run = int(i64(14));
  r.decode_tps = parse_double_strict(f[15], str_cat(where, " column decode_tps"));
  r.requested_tokens = i64(16);
  r.generated_tokens = i64(17);
  r.fused_calls = i64(18);
  r.fallback_calls = i64(19);
  r.fallback_reasons = f[20];
  r.default_cap = i64(21);
  r.error = f[22];
  return r;
}

void write_all(int fd, const std::string& s, const std::string& path) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, ": write failed: ", std::strerror(errno));
    }
    off += size_t(n);
  }
}

// A process killed while appending leaves a last line without its newline: cut it off so
// the next row starts on a line of its own (the torn run is re-measured by --resume).
void drop_torn_tail(int fd, const std::string& path) {
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0) return;
  off_t end = size;
  char c = 0;
  while (end > 0) {
    if (::pread(fd, &c, 1, end - 1) != 1) fail(path, ": read failed: ", std::strerror(errno));
    if (c == '\n') break;
    --end;
  }
  if (end != size && ::ftruncate(fd, end) != 0)
    fail(path, ": cannot truncate a torn last line: ", std::strerror(errno));
}

}  // namespace

void append_run(const std::string& path, const SweepRun& r) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND, 0644);
  if (fd < 0) fail(path, ": cannot open for append: ", std::strerror(errno));
  drop_torn_tail(fd, path);
  std::string text;
  if (::lseek(fd, 0, SEEK_END) == 0) text = csv_line(sweep_csv_columns()) + "\n";
  text += csv_line(to_fields(r)) + "\n";
  write_all(fd, text, path);
  ::fsync(fd);
  ::close(fd);
}

std::vector<SweepRun> read_runs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<SweepRun> runs;
  std::vector<std::string> fields;
  size_t pos = 0;
  int line_no = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) break;  // torn last line: the run did not finish writing
    std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line_no == 1) {
      if (!csv_split(line, &fields) || fields != sweep_csv_columns())
        fail(path, ": line 1 is not the moex sweep CSV header");
      continue;
    }
    if (line.empty()) continue;
    std::string where = str_cat(path, " line ", line_no);
    if (!csv_split(line, &fields) || fields.size() != sweep_csv_columns().size())
      fail(where, ": expected ", sweep_csv_columns().size(), " CSV fields");
    runs.push_back(from_fields(fields, where));
  }
  return runs;
}

}  // namespace moex::harness
