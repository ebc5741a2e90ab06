// Llama 4 (llama.cpp conversion/llama.py Llama4Model, src/models/llama4.cpp) as moex's llama4
// family: interleaved (NORM) RoPE on rows the converter leaves as they are, every 4th layer
// NoPE with full attention and temperature tuning, the others chunked (8192) with weightless
// q/k RMS norms after RoPE, MoE layers every interleave_moe_layer_step (top-1, sigmoid of the
// chosen logit scaling the expert's input, a shared expert of the expert width), llama3 RoPE
// scaling stored as the per-dimension factors of rope_freqs.weight. llama.cpp hard-codes the
// chunk, the NoPE step and the temperature constants; docs/gguf.md lists each and where moex
// and llama.cpp differ.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "io/gguf/ggml_dequantize.h"
#include "io/safetensors.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

namespace {

// The wavelength of RoPE pair i as moex's llama3 scaling computes it (backend/cpu/rope.cc):
// 2 pi base^(2i / dims), the power rounded to f32 first.
double wavelength(double base, int64_t i, int64_t dims) {
  return 2.0 * M_PI * double(float(std::pow(base, double(2 * i) / double(dims))));
}

// rope_freqs.weight (the converter's llama3 factors, one per rotated pair: 1 for the high
// frequencies, `factor` for the low ones, a smooth blend between) as an mlx-lm rope_scaling.
// The file holds the factors, not low_freq_factor / high_freq_factor /
// original_max_position_embeddings, so only a scaling without a blended band (Llama-4
// Scout's: low = high = 1) is mapped: factor and the split between the two groups, placed at
// 8192 (the converter's default original context) when the file's split agrees with it.
json llama3_scaling(const ArchKeys& k, int64_t dims, double base) {
  const gguf::Tensor* t = k.file().find_tensor("rope_freqs.weight");
  if (!t) return json();
  const std::string what = str_cat("GGUF file '", k.file().path(), "': tensor 'rope_freqs.weight'");
  const int64_t half = dims / 2;
  if (t->n_dims != 1 || t->ne[0] != half)
    fail(what, ": shape ", io::shape_to_string(t->shape()), "; expected [", half,
         "] (rotated dims / 2)");
  std::vector<float> r(static_cast<size_t>(half));
  gguf::dequantize(t->type, t->data, t->nbytes, r.data(), half);
  float factor = 1.f;
  for (float v : r) {
    if (!(v >= 1.f) || !std::isfinite(v))
      fail(what, ": factor ", v, " is not a finite number >= 1 (llama3 scaling divides each "
           "frequency by 1 or more)");
    factor = std::max(factor, v);
  }
  int64_t split = half;  // the first scaled pair
  for (int64_t i = 0; i < half; ++i) {
    const float v = r[size_t(i)];
    if (v != 1.f && v != factor)
      fail(what, ": factor ", v, " of pair ", i, " lies between 1 and ", factor, "; moex maps "
           "llama3 scaling without a blended band only (the file does not hold the "
           "low/high_freq_factor it came from)");
    if (v == factor && factor != 1.f && split == half) split = i;
    if (v == 1.f && split < half)
      fail(what, ": pair ", i, " is unscaled after scaled pair ", split, "; llama3 scaling "
           "scales every pair from the first scaled one on");
  }
  if (factor == 1.f) return json();
  // Scaled iff wavelength > 8192 / low_freq_factor (low = high: no band).
  const double orig = 8192.0;
  const double below = split > 0 ? wavelength(base, split - 1, dims) : 0.0;
  const double above = split < half ? wavelength(base, split, dims) : 2.0 * below;
  double boundary = orig;
  if (!(below <= orig && orig < above))
    boundary = split > 0 ? std::sqrt(below * above) : above / 2.0;
  json r3;
  r3["rope_type"] = "llama3";
  r3["factor"] = shortest_decimal(factor);
  r3["original_max_position_embeddings"] = int64_t(orig);
  r3["low_freq_factor"] = orig / boundary;
  r3["high_freq_factor"] = orig / boundary;
  return r3;
}

}  // namespace

json llama4(const ArchKeys& k) {
  json t = common_fields(k, "llama4_text");
  const int64_t layers = t["num_hidden_layers"];
  const int64_t hd = head_dim(k, t, false);  // rope.dimension_count must be all of it
  t["head_dim"] = hd;
  t["attention_bias"] = false;  // llama.cpp's llama4 loader creates no attention biases
  // llama.cpp applies the L2 q/k norm unless the model has 128 experts (Maverick, whose config
  // says use_qk_norm false; Scout's says true), whatever the checkpoint said.
  const int64_t experts = k.size("expert_count", 1, limits::kMaxExperts);
  t["use_qk_norm"] = experts != 128;
  t["rope_scaling"] = llama3_scaling(k, hd, t["rope_theta"].get<double>());
  // sliding_window absent: llama.cpp's chunked attention of 8192 on 3 of every 4 layers, the
  // 4th NoPE (n_no_rope_layer_step 4) with temperature tuning (floor 8192, scale 0.1), all
  // hard-coded. sliding_window 0 (all layers full attention with RoPE, written for
  // MobileLLM) is another model than moex's llama4 family.
  if (k.has("attention.sliding_window")) {
    const int64_t w = k.size("attention.sliding_window", 0, limits::kMaxPosition);
    k.refuse("attention.sliding_window",
             w == 0 ? "llama.cpp runs every layer with RoPE and full attention then; moex's "
                      "llama4 family makes every 4th layer NoPE"
                    : "llama.cpp ignores it (its chunk is 8192); expected the key absent");
  }
  if (k.has("attention.sliding_window_pattern") &&
      (k.file().find(k.key("attention.sliding_window_pattern"))->type == gguf::ValueType::kArray ||
       k.size("attention.sliding_window_pattern", 0, layers) != 4))
    k.refuse("attention.sliding_window_pattern", "moex's llama4 family chunks 3 of every 4 "
                                                 "layers (the pattern 4)");
  t["attention_chunk_size"] = 8192;
  t["attn_temperature_tuning"] = true;
  t["floor_scale"] = 8192;
  t["attn_scale"] = 0.1;
  t["intermediate_size_mlp"] = k.size("feed_forward_length", 1, limits::kMaxDff);
  t["intermediate_size"] = k.size("expert_feed_forward_length", 1, limits::kMaxDff);
  t["num_local_experts"] = experts;
  if (t["num_experts_per_tok"].get<int64_t>() != 1)
    k.refuse("expert_used_count", "moex's llama4 family routes to 1 expert (top-1)");
  t["interleave_moe_layer_step"] = k.size("interleave_moe_layer_step", 1, layers);
  if (t["tie_word_embeddings"].get<bool>())
    fail("GGUF file '", k.file().path(), "': tensor 'output.weight' is missing; moex's llama4 "
         "family has an untied lm_head");
  json j;
  j["model_type"] = "llama4";
  j["text_config"] = t;
  j["tie_word_embeddings"] = false;
  return j;
}

}  // namespace moex::model::gguf_config
