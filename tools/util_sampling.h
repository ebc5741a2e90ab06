// The sampling flags `generate` and `chat` share (--temp, --top-k, --top-p, --min-p, --seed):
// their options, strict parsing, and generation_config.json's defaults for the unset ones.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "model/generation_config.h"
#include "model/ops/sampling.h"

namespace moex::tools {

struct SamplingFlags {
  std::optional<std::string> temp, top_k, top_p, min_p, seed;
};

void add_sampling_options(CLI::App& sub, SamplingFlags& f);

struct SamplingSetup {
  model::ops::SamplerArgs args;
  std::string defaults_note;  // what -v says about generation_config.json ("" if nothing)
  bool seed_given = false;
};
// The flags parsed strictly (Errors name the flag), generation_config.json's temperature,
// top_p and top_k for the fields no flag set (as transformers applies them, only with
// do_sample: true), and the seed: --seed, else a random one (every run samples differently,
// as mlx-lm and llama.cpp do).
SamplingSetup sampling_setup(const SamplingFlags& f, const model::GenerationConfig& g);

// "<cmd>: sampling seed N (pass --seed N to repeat this run)" on stderr when the seed was
// random and it matters (sampling, or verbose).
void note_random_seed(const char* cmd, const SamplingSetup& s, bool greedy, bool verbose);

}  // namespace moex::tools
