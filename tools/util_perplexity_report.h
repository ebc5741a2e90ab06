// `moex perplexity`'s report: one run's figures (perplexity, the KL comparison against a base
// run's logits, the MoE routing per layer) as text in llama-perplexity's layout, or as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/perplexity_stats.h"
#include "model/engine/routing_tally.h"

namespace moex::tools {

struct PerplexityRun {
  std::string path;  // "batch" (every row of a prefill) or "decode fused on" / "decode fused off"
  eval::Perplexity ppl;
  std::optional<eval::KlComparison> kl;
  std::vector<model::engine::RoutingTally> routing;
  int64_t experts = 0, top_k = 0;
  double seconds = 0;
  int64_t fused_calls = 0, fallback_calls = 0;  // the routed experts' MoE calls of this run
};

std::string perplexity_text(const PerplexityRun& run);
nlohmann::ordered_json perplexity_json(const PerplexityRun& run);

}  // namespace moex::tools
