// Token sampling from logits, with mlx-lm's semantics (sample_utils.make_sampler): temperature
// 0 is greedy argmax; otherwise log-softmax, then the top-p, min-p and top-k filters in that
// order, then a categorical draw from softmax(logprobs / temperature). Seeded and
// deterministic (own generator: the draws are not MLX's random stream).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace moex::ops {

struct SamplerArgs {
  double temperature = 0.0;  // 0: greedy
  int64_t top_k = 0;         // 0: off; otherwise keep the k most likely tokens
  double top_p = 1.0;        // off unless 0 < top_p < 1: keep the smallest top set with mass >= top_p
  double min_p = 0.0;        // 0: off; drop tokens with p < min_p * p_max
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws moex::Error naming the option for out-of-range values (temperature < 0 or not
  // finite, top_k < 0, top_p outside [0, 1], min_p outside [0, 1]).
  explicit Sampler(const SamplerArgs& args);

  // Picks one token from logits[n] (not modified). Throws moex::Error if a logit is NaN or
  // +inf.
  int64_t sample(const float* logits, int64_t n);
  bool greedy() const { return args_.temperature == 0.0; }
  const SamplerArgs& args() const { return args_; }

  // The filters alone, on log-probabilities in place (removed entries become -inf);
  // exposed for tests.
  static void apply_top_p(float* logprobs, int64_t n, double top_p, std::vector<float>& scratch);
  static void apply_min_p(float* logprobs, int64_t n, double min_p);
  static void apply_top_k(float* logprobs, int64_t n, int64_t top_k, std::vector<float>& scratch);

 private:
  double uniform01();  // [0, 1), 53 random bits

  SamplerArgs args_;
  std::mt19937_64 rng_;
  std::vector<float> lp_, scratch_;
};

}  // namespace moex::ops
