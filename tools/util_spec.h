// The speculative-decoding flags of `generate`, `chat`, `serve` and `bench-spec` (--spec ngram,
// --spec-draft, --spec-ngram-min, --spec-ngram-max): their options and strict parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "generate/ngram_draft.h"

namespace moex::tools {

struct SpecFlags {
  std::optional<std::string> spec, draft, ngram_min, ngram_max;
};

// Defaults (docs/speculative.md says how they were chosen).
inline constexpr int64_t kDefaultSpecDraft = 3;
inline constexpr int64_t kDefaultNgramMin = 2, kDefaultNgramMax = 4;
// The MTP module drafts one token well; further drafts run it on its own guesses.
inline constexpr int64_t kDefaultMtpDraft = 1;

void add_spec_options(CLI::App& sub, SpecFlags& f);

struct SpecSetup {
  bool on = false;   // --spec ngram or mtp given
  bool mtp = false;  // --spec mtp: the checkpoint's multi-token-prediction module drafts
  int64_t draft = kDefaultSpecDraft;
  generate::NgramArgs ngram{kDefaultNgramMin, kDefaultNgramMax};
  // "ngram, draft 3, n 2-4" / "mtp, draft 1", for the printed summary.
  std::string label() const;
};
// moex::Error naming the flag for a --spec other than ngram or mtp, a value out of range, a
// --spec-* value without --spec, or an n-gram bound with mtp.
SpecSetup spec_setup(const SpecFlags& f);

}  // namespace moex::tools
