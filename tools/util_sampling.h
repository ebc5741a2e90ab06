// The sampling flags `generate` and `chat` share (--temp, --top-k, --top-p, --min-p, --seed,
// and the logits processors' --logit-bias and --repetition/--frequency/--presence-penalty):
// their options, strict parsing, and generation_config.json's defaults for the unset ones.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/generation_config.h"
#include "generate/logits_processors.h"
#include "backend/cpu/sampling.h"

namespace moex::tools {

struct SamplingFlags {
  std::optional<std::string> temp, top_k, top_p, min_p, seed;
  std::optional<std::string> logit_bias, repetition_penalty, frequency_penalty, presence_penalty;
};

void add_sampling_options(CLI::App& sub, SamplingFlags& f);

struct SamplingSetup {
  ::moex::ops::SamplerArgs args;
  generate::LogitsArgs logits;  // token ids are checked against the vocabulary by Generator
  std::string defaults_note;  // what -v says about generation_config.json ("" if nothing)
  bool seed_given = false;
};
// The flags parsed strictly (Errors name the flag), generation_config.json's temperature,
// top_p and top_k for the fields no flag set (as transformers applies them, only with
// do_sample: true), and the seed: --seed, else a random one (every run samples differently,
// as mlx-lm and llama.cpp do).
SamplingSetup sampling_setup(const SamplingFlags& f, const model::GenerationConfig& g);

// --logit-bias "ID=BIAS[,ID=BIAS...]" (llama.cpp's --logit-bias takes one ID+BIAS per flag);
// Errors name the flag and the entry.
std::vector<std::pair<generate::TokenId, float>> parse_logit_bias_flag(const std::string& s);

// "<cmd>: sampling seed N (pass --seed N to repeat this run)" on stderr when the seed was
// random and it matters (sampling, or verbose).
void note_random_seed(const char* cmd, const SamplingSetup& s, bool greedy, bool verbose);

}  // namespace moex::tools
