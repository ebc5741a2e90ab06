// The speculative-decoding flags (see util_spec.h).
#include "tools/util_spec.h"

#include <algorithm>

#include "core/error.h"
#include "core/strict_parse.h"
#include "generate/speculative.h"
#include "tools/util_flags.h"

namespace moex::tools {

void add_spec_options(CLI::App& sub, SpecFlags& f) {
  sub.add_option("--spec", f.spec,
                 "speculative decoding: ngram (drafts by prompt lookup: the tokens that followed "
                 "the latest earlier occurrence of the last n tokens) or mtp (drafts by the "
                 "checkpoint's multi-token-prediction module: DeepSeek-V3, GLM-4.5); "
                 "docs/speculative.md")
      ->type_name("TYPE")
      ->check(non_empty());
  sub.add_option("--spec-draft", f.draft,
                 "with --spec: most draft tokens per pass, 1-64 (default 3; mtp: 1)")
      ->type_name("K")
      ->check(non_empty());
  sub.add_option("--spec-ngram-min", f.ngram_min,
                 "with --spec ngram: the shortest suffix looked up, 1-64 (default 2)")
      ->type_name("N")
      ->check(non_empty());
  sub.add_option("--spec-ngram-max", f.ngram_max,
                 "with --spec ngram: the longest suffix looked up, tried first, "
                 "--spec-ngram-min..64 (default 4)")
      ->type_name("M")
      ->check(non_empty());
}

SpecSetup spec_setup(const SpecFlags& f) {
  SpecSetup s;
  if (!f.spec) {
    const char* stray = f.draft       ? "--spec-draft"
                        : f.ngram_min ? "--spec-ngram-min"
                        : f.ngram_max ? "--spec-ngram-max"
                                      : nullptr;
    if (stray) fail(stray, " needs --spec ngram");
    return s;
  }
  const std::string type = lowercase(*f.spec);
  if (type != "ngram" && type != "mtp") fail("--spec: expected ngram or mtp, got '", *f.spec, "'");
  s.on = true;
  s.mtp = type == "mtp";
  if (s.mtp) {
    if (f.ngram_min || f.ngram_max)
      fail(f.ngram_min ? "--spec-ngram-min" : "--spec-ngram-max", " applies to --spec ngram, not mtp");
    s.draft = kDefaultMtpDraft;
  }
  if (f.draft) s.draft = parse_int_strict(*f.draft, "--spec-draft", 1, generate::kMaxDraftTokens);
  if (s.mtp) return s;
  if (f.ngram_min)
    s.ngram.min_n = parse_int_strict(*f.ngram_min, "--spec-ngram-min", 1, generate::kMaxNgram);
  if (f.ngram_max)
    s.ngram.max_n = parse_int_strict(*f.ngram_max, "--spec-ngram-max", 1, generate::kMaxNgram);
  // Only --spec-ngram-min given above the default max: the max follows it.
  if (f.ngram_min && !f.ngram_max) s.ngram.max_n = std::max(s.ngram.max_n, s.ngram.min_n);
  generate::validate_ngram_args(s.ngram);
  return s;
}

std::string SpecSetup::label() const {
  if (mtp) return "mtp, draft " + std::to_string(draft);
  return "ngram, draft " + std::to_string(draft) + ", n " + std::to_string(ngram.min_n) + "-" +
         std::to_string(ngram.max_n);
}

}  // namespace moex::tools
