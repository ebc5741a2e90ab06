// Shared flag parsing of the `moex` subcommands (see util_flags.h).
#include "tools/util_flags.h"

#include <algorithm>
#include <random>

#include "core/error.h"
#include "core/strict_parse.h"

namespace moex::tools {

int parse_threads_flag(std::string_view s) {
  return int(parse_int_strict(s, "--threads", 1, kMaxThreads));
}

std::vector<std::string> split_list_flag(std::string_view s, std::string_view flag,
                                         std::string_view expected) {
  if (s.empty()) fail(flag, ": the list is empty; expected ", expected, ", comma-separated");
  std::vector<std::string> v;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string_view item =
        s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty())
      fail(flag, ": '", s, "' has an empty item; expected ", expected, ", comma-separated");
    if (item.front() == ' ' || item.back() == ' ')
      fail(flag, ": '", item, "' has surrounding spaces; expected ", expected,
           ", comma-separated with no spaces");
    v.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return v;
}

std::string lowercase(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return o;
}

std::optional<std::string> lowercase_opt(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  return lowercase(*s);
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_word(std::string_view word, const std::vector<std::string>& names) {
  const std::string w = lowercase(word);
  std::string best;
  size_t best_d = 3;
  for (const auto& n : names) {
    const size_t d = n.rfind(w, 0) == 0 && !w.empty() ? 1 : edit_distance(w, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("empty value; expected a value") : ""; },
      "", "non_empty");
}

uint64_t random_seed() {
  std::random_device rd;
  return ((uint64_t(rd()) << 32) ^ uint64_t(rd())) & 0x7fff'ffff'ffff'ffffULL;
}

void add_cpu_run_options(CLI::App& sub, std::optional<std::string>* threads,
                         std::optional<std::string>* precision,
                         std::optional<std::string>* weights, std::optional<std::string>* isa,
                         std::optional<std::string>* kv_cache) {
  sub.add_option("--threads", *threads, "worker threads, 1-1024 (default: all cores)")
      ->type_name("INT");
  sub.add_option("--precision", *precision, kPrecisionHelp)->type_name("TIER");
  sub.add_option("--weights", *weights, kWeightsHelp)->type_name("map|copy");
  sub.add_option("--kv-cache", *kv_cache, kKvCacheHelp)->type_name("f32|f16");
  if (isa)
    sub.add_option("--isa", *isa, "instruction set: scalar, avx2, avx512 (default: the best)");
}

void add_backend_options(CLI::App& sub, model::engine::BackendFlags* flags) {
  sub.add_option("--backend", flags->backend,
                 "where the model runs: cpu (default) or cuda (the whole model on the device; "
                 "not yet run on a GPU, see the README)")
      ->type_name("cpu|cuda");
  sub.add_option("--experts-on", flags->experts_on,
                 "where the MoE layers' routed experts run (default: as --backend): cpu beside "
                 "--backend cuda keeps them in host memory (llama.cpp's --cpu-moe); cuda beside "
                 "--backend cpu puts only the experts on the device; auto puts as many layers' "
                 "experts on the device as its free memory holds, the last layers first (on "
                 "the host when there is no device)")
      ->type_name("cpu|cuda|auto");
  sub.add_option("--n-cpu-moe", flags->n_cpu_moe,
                 "keep the experts of the MoE layers below layer N in host memory, the rest "
                 "where --experts-on says (llama.cpp's --n-cpu-moe; N counts all layers, "
                 "0-1024)")
      ->type_name("N");
}

}  // namespace moex::tools
