// bench-decode JSON -> sweep run row.
//
// Expected shape (written by tools/cmd_bench_decode.cc):
// { "model": {"dff", "hidden", "experts", "top_k", "bits", "group_size"},
//   "host": {"backend", "isa", "threads", "cpu_model", "moex_commit", "date", "default_cap"},
//   "arms": [ {"arm", "runs": [ {"decode_tps", "generated_tokens"} ],
//              "path_counters": {"fused_calls", "fallback_calls", "fallback_reasons": {reason: n}}} ] }
#include "tools/util_bench_json.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace moex::tools {
namespace {

using nlohmann::json;

const json& field(const json& j, const char* name, const char* where) {
  if (!j.is_object() || !j.contains(name)) fail("bench-decode JSON: missing ", where, ".", name);
  return j.at(name);
}

int64_t int_field(const json& j, const char* name, const char* where) {
  const json& v = field(j, name, where);
  if (!v.is_number_integer()) fail("bench-decode JSON: ", where, ".", name, " is not an integer");
  return v.get<int64_t>();
}

std::string str_field(const json& j, const char* name, const char* where) {
  const json& v = field(j, name, where);
  if (!v.is_string()) fail("bench-decode JSON: ", where, ".", name, " is not a string");
  return v.get<std::string>();
}

}  // namespace

harness::SweepRun parse_bench_decode_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) fail("bench-decode JSON: not valid JSON");
  harness::SweepRun r;
  const json& m = field(j, "model", "report");
  r.dff = int_field(m, "dff", "model");
  r.hidden = int_field(m, "hidden", "model");
  r.experts = int_field(m, "experts", "model");
  r.top_k = int_field(m, "top_k", "model");
  r.bits = int(int_field(m, "bits", "model"));
  r.group_size = int(int_field(m, "group_size", "model"));
  const json& h = field(j, "host", "report");
  r.backend = str_field(h, "backend", "host");
  r.isa = str_field(h, "isa", "host");
  r.threads = int(int_field(h, "threads", "host"));
  r.cpu_model = str_field(h, "cpu_model", "host");
  r.commit = str_field(h, "moex_commit", "host");
  r.date = str_field(h, "date", "host");
  r.default_cap = int_field(h, "default_cap", "host");
  const json& arms = field(j, "arms", "report");
  if (!arms.is_array() || arms.size() != 1) fail("bench-decode JSON: expected exactly one arm");
  const json& a = arms[0];
  const json& runs = field(a, "runs", "arms[0]");
  if (!runs.is_array() || runs.size() != 1) fail("bench-decode JSON: expected exactly one run");
  const json& v = field(runs[0], "decode_tps", "runs[0]");
  if (!v.is_number()) fail("bench-decode JSON: runs[0].decode_tps is not a number");
  r.decode_tps = v.get<double>();
  r.generated_tokens = int_field(runs[0], "generated_tokens", "runs[0]");
  const json& pc = field(a, "path_counters", "arms[0]");
  r.fused_calls = int_field(pc, "fused_calls", "path_counters");
  r.fallback_calls = int_field(pc, "fallback_calls", "path_counters");
  const json& reasons = field(pc, "fallback_reasons", "path_counters");
  if (!reasons.is_object()) fail("bench-decode JSON: path_counters.fallback_reasons is not an object");
  for (auto it = reasons.begin(); it != reasons.end(); ++it) {
    if (!r.fallback_reasons.empty()) r.fallback_reasons += ";";
    r.fallback_reasons += it.key() + "=" + it.value().dump();
  }
  return r;
}

int64_t default_cap_for_runs(const std::vector<harness::SweepRun>& runs) {
  int64_t cap = 0;
  for (const auto& r : runs)
    if (r.default_cap > 0) cap = r.default_cap;  // the latest measured build's default
  return cap;  // 0: no run reported it
}

}  // namespace moex::tools
