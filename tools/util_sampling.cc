// Sampling flags shared by `generate` and `chat` (see util_sampling.h).
#include "tools/util_sampling.h"

#include <cstdint>
#include <cstdio>

#include "core/error.h"
#include "core/strict_parse.h"
#include "tools/util_flags.h"

namespace moex::tools {

void add_sampling_options(CLI::App& sub, SamplingFlags& f) {
  sub.add_option("--temp", f.temp, "sampling temperature (0: greedy, the default)")
      ->type_name("FLOAT");
  sub.add_option("--top-k", f.top_k, "keep the k most likely tokens (0: off)")->type_name("INT");
  sub.add_option("--top-p", f.top_p, "nucleus sampling mass in (0, 1] (1: off)")
      ->type_name("FLOAT");
  sub.add_option("--min-p", f.min_p, "drop tokens below min_p * p_max (0: off)")
      ->type_name("FLOAT");
  sub.add_option("--seed", f.seed, "random seed for sampling (default: a random one, printed)")
      ->type_name("INT");
}

namespace {

std::string apply_generation_defaults(const model::GenerationConfig& g, const SamplingFlags& f,
                                      model::ops::SamplerArgs& sa) {
  if (g.source.empty() || !(g.temperature || g.top_p || g.top_k)) return "";
  if (!g.do_sample)
    return g.source + ": sampling values ignored (do_sample is not true): greedy unless flags say";
  const std::string used = model::apply_sampling_defaults(
      g, {.temperature = bool(f.temp), .top_p = bool(f.top_p), .top_k = bool(f.top_k)}, sa);
  if (used.empty()) return g.source + ": sampling values all overridden by flags";
  return str_cat("sampling defaults from ", g.source, ": ", used, " (flags override each)");
}

}  // namespace

SamplingSetup sampling_setup(const SamplingFlags& f, const model::GenerationConfig& g) {
  SamplingSetup s;
  model::ops::SamplerArgs& sa = s.args;
  if (f.temp) sa.temperature = parse_double_strict(*f.temp, "--temp");
  if (f.top_k) sa.top_k = parse_int_strict(*f.top_k, "--top-k", 0, INT32_MAX);
  if (f.top_p) sa.top_p = parse_double_strict(*f.top_p, "--top-p");
  if (f.min_p) sa.min_p = parse_double_strict(*f.min_p, "--min-p");
  s.defaults_note = apply_generation_defaults(g, f, sa);
  s.seed_given = bool(f.seed);
  sa.seed = f.seed ? uint64_t(parse_int_strict(*f.seed, "--seed", 0, INT64_MAX)) : random_seed();
  return s;
}

void note_random_seed(const char* cmd, const SamplingSetup& s, bool greedy, bool verbose) {
  if (s.seed_given || !(verbose || !greedy)) return;
  std::fprintf(stderr, "%s: sampling seed %llu (pass --seed %llu to repeat this run)\n", cmd,
               (unsigned long long)s.args.seed, (unsigned long long)s.args.seed);
}

}  // namespace moex::tools
