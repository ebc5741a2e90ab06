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

void add_spec_options(CLI::App& sub, SpecFlags& f);

struct SpecSetup {
  bool on = false;  // --spec ngram given
  int64_t draft = kDefaultSpecDraft;
  generate::NgramArgs ngram{kDefaultNgramMin, kDefaultNgramMax};
};
// moex::Error naming the flag for a --spec other than ngram, a value out of range, or a
// --spec-* value without --spec.
SpecSetup spec_setup(const SpecFlags& f);

}  // namespace moex::tools
