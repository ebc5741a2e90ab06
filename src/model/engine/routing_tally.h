// What the routers of one MoE layer did over a run (`moex perplexity`'s MoE figures, as
// calibration-data reports on MoE quantizations show them): how often each expert was
// selected, and the mean entropy of the router's softmax over the experts per token.
#pragma once

#include <cstdint>
#include <vector>

namespace moex::model::engine {

struct RoutingTally {
  int64_t layer = 0;
  std::vector<int64_t> selected;  // [experts]: selections over all tokens and top-k slots
  int64_t tokens = 0;
  double entropy_sum = 0;  // sum over tokens of -sum_e p_e log p_e, p = softmax(router logits)

  // n tokens' router logits [n][experts] and selected ids [n][k].
  void add(const float* logits, const int32_t* ids, int64_t n, int64_t k);
  int64_t experts_reached() const;
  double mean_router_entropy() const { return tokens ? entropy_sum / double(tokens) : 0; }
  // Entropy of the selection counts' distribution (nats); log(experts) when balanced.
  double selection_entropy() const;
};

}  // namespace moex::model::engine
