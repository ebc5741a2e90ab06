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
  sub.add_option("--logit-bias", f.logit_bias,
                 "add BIAS (-100..100) to token ID's logit: ID=BIAS[,ID=BIAS...]")
      ->type_name("LIST");
  sub.add_option("--repetition-penalty", f.repetition_penalty,
                 "divide positive (multiply negative) logits of tokens in the prompt or output "
                 "by this, 0.01-100 (1: off)")
      ->type_name("FLOAT");
  sub.add_option("--frequency-penalty", f.frequency_penalty,
                 "subtract this times a token's count in the output, -2..2 (0: off)")
      ->type_name("FLOAT");
  sub.add_option("--presence-penalty", f.presence_penalty,
                 "subtract this from tokens present in the output, -2..2 (0: off)")
      ->type_name("FLOAT");
}

std::vector<std::pair<generate::TokenId, float>> parse_logit_bias_flag(const std::string& s) {
  std::vector<std::pair<generate::TokenId, float>> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    const std::string entry = s.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos)
      fail("--logit-bias: expected ID=BIAS entries separated by commas, got \"", entry, "\"");
    const int64_t id = parse_int_strict(entry.substr(0, eq), "--logit-bias token id", 0, INT32_MAX);
    const double bias = parse_double_strict(entry.substr(eq + 1), "--logit-bias bias");
    out.emplace_back(generate::TokenId(id), float(bias));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

std::string apply_generation_defaults(const model::GenerationConfig& g, const SamplingFlags& f,
                                      ::moex::ops::SamplerArgs& sa) {
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
  ::moex::ops::SamplerArgs& sa = s.args;
  if (f.temp) sa.temperature = parse_double_strict(*f.temp, "--temp");
  if (f.top_k) sa.top_k = parse_int_strict(*f.top_k, "--top-k", 0, INT32_MAX);
  if (f.top_p) sa.top_p = parse_double_strict(*f.top_p, "--top-p");
  if (f.min_p) sa.min_p = parse_double_strict(*f.min_p, "--min-p");
  s.defaults_note = apply_generation_defaults(g, f, sa);
  if (f.logit_bias) s.logits.logit_bias = parse_logit_bias_flag(*f.logit_bias);
  generate::PenaltyArgs& pen = s.logits.penalties;
  if (f.repetition_penalty)
    pen.repetition = parse_double_strict(*f.repetition_penalty, "--repetition-penalty");
  if (f.frequency_penalty)
    pen.frequency = parse_double_strict(*f.frequency_penalty, "--frequency-penalty");
  if (f.presence_penalty)
    pen.presence = parse_double_strict(*f.presence_penalty, "--presence-penalty");
  // The ranges now; token ids once the vocabulary is known (Generator).
  try {
    generate::validate_logits_args(s.logits, int64_t{INT32_MAX} + 1);
  } catch (const Error& e) {
    fail("sampling flags: ", e.what());
  }
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
