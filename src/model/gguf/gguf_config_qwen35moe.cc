// Qwen3.5-MoE (llama.cpp conversion/qwen.py Qwen3_5MoeTextModel over
// _LinearAttentionVReorderBase and Qwen3NextModel, src/models/qwen35moe.cpp) as moex's
// qwen3_5_moe family: Qwen3-Next's layers with separate in_proj_qkv / _z / _b / _a, every layer
// MoE, interleaved M-RoPE over the rotated part (text positions: plain NEOX RoPE). The
// converter stores the value heads in another order when there are more value than key heads;
// how moex takes that is in docs/gguf.md and gguf_weights.cc.
#include "core/error.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_config_common.h"

namespace moex::model::gguf_config {

using gguf_keys::ArchKeys;
using nlohmann::json;

namespace {

// rope.dimension_sections [t, h, w, e]: llama.cpp's interleaved M-RoPE (ggml_mrope_cache_init,
// is_imrope) gives rotated pair i the t, h or w position by i % 3 while i < 3 x that section,
// else the fourth (e). Text tokens carry one position in t, h and w, so the rotation is plain
// RoPE exactly when no rotated pair falls to e (the released [11, 11, 10, 0] over 32 pairs).
void check_sections(const ArchKeys& k, int64_t rotated_pairs) {
  const gguf::Value& v = k.file().get_array(k.key("rope.dimension_sections"));
  if (v.count != 4 || !gguf::is_integer_type(v.elem_type))
    k.refuse("rope.dimension_sections", "expected 4 integers (t, h, w, e)");
  int64_t s[4];
  for (int i = 0; i < 4; ++i) {
    const std::optional<int64_t> x = v.scalar_element(uint64_t(i)).as_int();
    if (!x || *x < 0 || *x > limits::kMaxHeadDim)
      k.refuse("rope.dimension_sections", "expected 4 integers (t, h, w, e)");
    s[i] = *x;
  }
  const int64_t total = s[0] + s[1] + s[2] + s[3];
  for (int64_t i = 0; i < rotated_pairs; ++i) {
    const int64_t sector = total > 0 ? i % total : i;
    if (total == 0 || sector >= 3 * s[sector % 3])
      k.refuse("rope.dimension_sections",
               str_cat("rotated pair ", i, " takes the fourth (vision) position, which text "
                       "tokens do not carry; moex's qwen3_5_moe runs plain RoPE on text"));
  }
}

}  // namespace

json qwen35moe(const ArchKeys& k) {
  // The keys are Qwen3-Next's (the converter is its subclass), read the same way.
  json j = qwen3next(k);
  j["model_type"] = "qwen3_5_moe";
  const int64_t hd = j["head_dim"];
  const double partial = j["partial_rotary_factor"];
  check_sections(k, int64_t(double(hd) * partial) / 2);
  // mlx-lm's TextModelArgs reads RoPE from rope_parameters.
  j["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", j["rope_theta"]},
                          {"partial_rotary_factor", partial}};
  for (const char* qwen3_next_only : {"intermediate_size", "decoder_sparse_step",
                                      "mlp_only_layers", "rope_theta", "partial_rotary_factor",
                                      "rope_scaling"})
    j.erase(qwen3_next_only);
  return j;
}

// As adapt_qwen3next (A as it is, the norms' +1 already added), with Qwen3.5's own separate
// projections; the value-head order of the file is in GatedDeltaParams::gguf_v_tiled: when the
// model has more value than key heads the converter stores every per-value-head row, element and
// column in tiled order (value head j of key head g at j * key heads + g) for ggml's broadcast.
// The binder puts rows and elements back in the model's grouped order; out_proj's input columns
// too when every out_proj is a float tensor, else the layer hands out_proj its input in the
// file's order (v_tiled_out).
void adapt_qwen35moe(ModelConfig& c, const gguf::GgufFile& f) {
  c.hf_layout_norms_plus_one = false;
  c.gdn.a_log_holds_a = true;
  c.gdn.gguf_v_tiled = c.gdn.v_heads != c.gdn.k_heads;
  bool float_out = true;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    if (c.layers[size_t(i)].mixer != MixerKind::kGatedDeltaNet) continue;
    const gguf::Tensor* t = f.find_tensor("blk." + std::to_string(i) + ".ssm_out.weight");
    const bool is_float = t && (t->type == gguf::GgmlType::kF32 ||
                                t->type == gguf::GgmlType::kF16 ||
                                t->type == gguf::GgmlType::kBF16);
    float_out = float_out && is_float;
  }
  c.gdn.v_tiled_out = c.gdn.gguf_v_tiled && !float_out;
}

}  // namespace moex::model::gguf_config
