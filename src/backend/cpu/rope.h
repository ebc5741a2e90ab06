// Rotary position embeddings as mlx-lm implements them (rope_utils.py + mx.fast.rope):
// default/linear (half-split or traditional interleaved pairs), llama3 frequency scaling,
// Phi-3.5 "longrope"/su scaling (long factors and its input scale, as mlx-lm applies it), YaRN
// (YarnRoPE: ramped frequencies and an mscale on the rotated features) and dynamic NTK
// (DynamicNTKScalingRoPE: past max_position_embeddings, a base grown with the sequence length)
// and proportional (ProportionalRoPE: a fraction of the pairs of the whole head rotated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moex::ops {

enum class RopeKind { kDefault, kLinear, kLlama3, kLongrope, kYarn, kDynamic, kProportional };
const char* rope_kind_name(RopeKind k);

struct RopeSpec {
  RopeKind kind = RopeKind::kDefault;
  int64_t dims = 0;          // rotated feature dims (<= head_dim, even)
  double base = 10000.0;     // rope_theta
  bool traditional = false;  // true: pairs (2i, 2i+1) (llama4); false: (i, i + dims/2)
  double factor = 1.0;       // linear: positions / factor; llama3, yarn, dynamic: the factor
  // llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_max_position = 8192;  // llama3, longrope and yarn
  // longrope (Phi-3.5): mlx-lm rotates with long_factor * base^(2i/dims) at every length and
  // scales the rotated features by long_mscale, or sqrt(1 + ln(f)/ln(orig)) with
  // f = max_position / original_max_position when long_mscale is absent or 0.
  std::vector<double> short_factor{}, long_factor{};
  int64_t max_position = 131072;
  double short_mscale = 0.0, long_mscale = 0.0;
  // yarn (mlx-lm's defaults); max_position above is also dynamic's max_position_embeddings
  double beta_fast = 32.0, beta_slow = 1.0, mscale = 1.0, mscale_all_dim = 0.0;
  // proportional (mlx-lm ProportionalRoPE, Gemma-4): dims is the whole head; pairs (i, i+dims/2)
  // for i < rotated_dims/2 rotate with frequency factor * base^(2i/dims) (f32, as mlx), the
  // other pairs are left as they are (mlx's infinite frequencies).
  int64_t rotated_dims = 0;
};

class Rope {
 public:
  Rope() = default;
  explicit Rope(const RopeSpec& spec);  // throws moex::Error on an inconsistent spec

  // Rotates x[heads][head_dim] in place for one position (a call of one row at `pos`).
  void apply(float* x, int64_t heads, int64_t head_dim, int64_t pos) const;
  // Rotates x[rows][heads][head_dim]; row r is at position pos0 + r. Dynamic NTK takes its
  // base from the call's length pos0 + rows, as mlx-lm does from offset + L: past
  // max_position the result depends on how a prompt is split into calls (mlx_lm.generate
  // prefills in 2048-token chunks, the engine in one call). The engine never gets there: its
  // context is capped at max_position_embeddings. Uses parallel_for_work (runs inline when
  // called inside a parallel region).
  void apply_rows(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t pos0) const;

  const RopeSpec& spec() const { return spec_; }
  // theta_i(pos) = pos * inv_freq[i], i < dims/2 (dynamic: for calls ending within
  // max_position; inv_freqs_for(end) gives any call's)
  const std::vector<float>& inv_freqs() const { return inv_freqs_; }
  std::vector<float> inv_freqs_for(int64_t call_end) const;
  float input_scale() const { return input_scale_; }

 private:
  void rotate(float* x, int64_t heads, int64_t head_dim, int64_t pos, const float* inv) const;
  RopeSpec spec_;
  std::vector<float> inv_freqs_;
  float input_scale_ = 1.f;
};

}  // namespace moex::ops
