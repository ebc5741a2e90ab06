// generation_config.json as the engines that read it use it: the end-of-turn ids (mlx-lm:
// its eos_token_id replaces config.json's) and the sampling defaults (Hugging Face: applied
// only with do_sample: true), plus the one stop rule every way of prompting uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "backend/cpu/sampling.h"

namespace moex::model {

struct GenerationConfig {
  std::string source;                  // the file read; empty when DIR has none
  std::vector<int64_t> eos_token_ids;  // empty: not given (or 0 / [], which mlx-lm ignores)
  bool do_sample = false;
  std::optional<double> temperature, top_p;
  std::optional<int64_t> top_k;
};

// Reads DIR/generation_config.json if it exists. Errors name the file and field: a wrong type,
// an eos id outside [0, vocab), temperature < 0, top_p outside [0, 1], top_k < 0.
GenerationConfig load_generation_config(const std::string& dir, int64_t vocab);

// The ids that end generation, as mlx-lm stops: generation_config.json's eos_token_id when it
// gives one, else config.json's, plus the tokenizer's end-of-sequence ids (empty without a
// tokenizer). Sorted, without duplicates; int32 like every token id of generation (the config
// loaders check the ids against the vocabulary).
std::vector<int32_t> stop_token_ids(const ModelConfig& cfg, const GenerationConfig& gen,
                                    const std::vector<int32_t>& tokenizer_eos);

// Which sampling fields the caller (flags, an API request) set itself.
struct SamplingFieldsGiven {
  bool temperature = false, top_p = false, top_k = false;
};
// generation_config.json's temperature, top_p and top_k into `args` for the fields not given,
// as transformers applies them: only with do_sample: true. Returns what it applied, e.g.
// "temperature 0.7, top_p 0.8" ("" when nothing). `generate`, `chat` and `serve` share it.
std::string apply_sampling_defaults(const GenerationConfig& g, SamplingFieldsGiven given,
                                    ops::SamplerArgs& args);

}  // namespace moex::model
