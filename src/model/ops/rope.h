// Rotary position embeddings as mlx-lm implements them (rope_utils.py + mx.fast.rope):
// default/linear (half-split or traditional interleaved pairs), llama3 frequency scaling,
// and Phi-3.5 "longrope"/su scaling (long factors and its input scale, as mlx-lm applies it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moex::model::ops {

enum class RopeKind { kDefault, kLinear, kLlama3, kLongrope };
const char* rope_kind_name(RopeKind k);

struct RopeSpec {
  RopeKind kind = RopeKind::kDefault;
  int64_t dims = 0;          // rotated feature dims (<= head_dim, even)
  double base = 10000.0;     // rope_theta
  bool traditional = false;  // true: pairs (2i, 2i+1) (llama4); false: (i, i + dims/2)
  double factor = 1.0;       // linear: positions / factor; llama3: the scaling factor
  // llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_max_position = 8192;  // llama3 and longrope
  // longrope (Phi-3.5): mlx-lm rotates with long_factor * base^(2i/dims) at every length and
  // scales the rotated features by long_mscale, or sqrt(1 + ln(f)/ln(orig)) with
  // f = max_position / original_max_position when long_mscale is absent or 0.
  std::vector<double> short_factor{}, long_factor{};
  int64_t max_position = 131072;
  double short_mscale = 0.0, long_mscale = 0.0;
};

class Rope {
 public:
  Rope() = default;
  explicit Rope(const RopeSpec& spec);  // throws moex::Error on an inconsistent spec

  // Rotates x[heads][head_dim] in place for one position.
  void apply(float* x, int64_t heads, int64_t head_dim, int64_t pos) const;
  // Rotates x[rows][heads][head_dim]; row r is at position pos0 + r.
  void apply_rows(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t pos0) const;

  const RopeSpec& spec() const { return spec_; }
  // theta_i(pos) = pos * inv_freq[i], i < dims/2
  const std::vector<float>& inv_freqs() const { return inv_freqs_; }
  float input_scale() const { return input_scale_; }

 private:
  RopeSpec spec_;
  std::vector<float> inv_freqs_;
  float input_scale_ = 1.f;
};

}  // namespace moex::model::ops
