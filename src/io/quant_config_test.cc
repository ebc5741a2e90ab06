// MLX quantization sections: global settings, per-module overrides and `false`, section
// precedence, non-affine modes reported, and a table of hostile values (never an abort).
#include "io/quant_config.h"

#include <gtest/gtest.h>

#include "io/test_util.h"

namespace moex::io {
namespace {

using nlohmann::json;
using testing::throws_error_with;

const char* kFile = "m/config.json";

QuantConfig section(const std::string& text) {
  auto q = QuantConfig::from_config(json::parse(R"({"quantization": )" + text + "}"), kFile);
  if (!q) throw std::runtime_error("no section");
  return *q;
}

TEST(QuantConfig, GlobalAndOverrides) {
  const QuantConfig q = section(R"({
    "group_size": 64, "bits": 4,
    "model.layers.0.mlp.gate": {"group_size": 64, "bits": 8},
    "model.layers.0.mlp.switch_mlp.down_proj": {"group_size": 32, "bits": 6, "mode": "affine"},
    "lm_head": false,
    "model.embed_tokens": true
  })");
  EXPECT_EQ(q.global(), (ModuleQuant{4, 64, "affine"}));
  EXPECT_EQ(q.lookup("model.layers.0.mlp.switch_mlp.gate_proj"), (ModuleQuant{4, 64, "affine"}));
  EXPECT_EQ(q.lookup("model.layers.0.mlp.gate"), (ModuleQuant{8, 64, "affine"}));
  EXPECT_EQ(q.lookup("model.layers.0.mlp.switch_mlp.down_proj"), (ModuleQuant{6, 32, "affine"}));
  EXPECT_EQ(q.lookup("lm_head"), std::nullopt);
  EXPECT_EQ(q.lookup("model.embed_tokens"), q.global());
  EXPECT_EQ(q.overrides().size(), 4u);
  // Exact path match only: a prefix or a ".weight" suffix is another module.
  EXPECT_EQ(q.lookup("model.layers.0.mlp.gate.weight"), q.global());
  EXPECT_EQ(q.lookup("lm_hea"), q.global());
  EXPECT_TRUE(q.lookup("model.layers.0.mlp.gate")->is_affine());
}

// mlx-lm 0.32.2's mixed_* recipes write "group_size": null in every override; MLX's
// to_quantized takes null as the mode's default (affine: group 64, 4 bits).
TEST(QuantConfig, NullTakesTheModesDefault) {
  const QuantConfig q = section(R"({
    "group_size": 64, "bits": 4, "mode": "affine",
    "lm_head": {"group_size": null, "bits": 6, "mode": "affine"},
    "model.embed_tokens": {"group_size": null, "bits": null},
    "model.layers.0.mlp.gate": {"group_size": null, "bits": 4, "mode": "nvfp4"}
  })");
  EXPECT_EQ(q.lookup("lm_head"), (ModuleQuant{6, 64, "affine"}));
  EXPECT_EQ(q.lookup("model.embed_tokens"), (ModuleQuant{4, 64, "affine"}));
  EXPECT_EQ(q.lookup("model.layers.0.mlp.gate"), (ModuleQuant{4, 16, "nvfp4"}));
}

TEST(QuantConfig, SectionSelection) {
  // No section: not quantized.
  EXPECT_EQ(QuantConfig::from_config(json::parse(R"({"hidden_size": 8})"), kFile), std::nullopt);
  EXPECT_EQ(QuantConfig::from_config(json::parse(R"({"quantization": null})"), kFile), std::nullopt);
  // quantization_config alone is used; "quantization" wins when both are present.
  auto only_qc = QuantConfig::from_config(json::parse(R"({"quantization_config": {"group_size": 128, "bits": 3}})"), kFile);
  ASSERT_TRUE(only_qc);
  EXPECT_EQ(only_qc->global(), (ModuleQuant{3, 128, "affine"}));
  auto both = QuantConfig::from_config(
      json::parse(R"({"quantization": {"group_size": 32, "bits": 2}, "quantization_config": {"group_size": 64, "bits": 5}})"),
      kFile);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->global(), (ModuleQuant{2, 32, "affine"}));
  // The Hugging Face form with quant_method mxfp4 maps as mlx-lm does.
  auto hf = QuantConfig::from_config(json::parse(R"({"quantization_config": {"quant_method": "mxfp4"}})"), kFile);
  ASSERT_TRUE(hf);
  EXPECT_EQ(hf->global(), (ModuleQuant{4, 32, "mxfp4"}));
  EXPECT_TRUE(throws_error_with(
      [] { QuantConfig::from_config(json::parse(R"({"quantization_config": {"quant_method": "gptq", "bits": 4}})"), kFile); },
      {kFile, "quant_method 'gptq'", "not supported"}));
}

TEST(QuantConfig, NonAffineModesParseAndAreReported) {
  const QuantConfig q = section(R"({"group_size": 32, "bits": 4, "mode": "mxfp4",
    "model.layers.1.mlp.gate": {"group_size": 64, "bits": 8},
    "model.layers.2.mlp.experts": {"group_size": 16, "bits": 4, "mode": "nvfp4", "quantize_input": false}})");
  EXPECT_FALSE(q.lookup("anything")->is_affine());
  EXPECT_EQ(q.lookup("anything")->mode, "mxfp4");
  // An override without "mode" is affine, as mlx's to_quantized defaults it.
  EXPECT_EQ(q.lookup("model.layers.1.mlp.gate"), (ModuleQuant{8, 64, "affine"}));
  EXPECT_EQ(q.lookup("model.layers.2.mlp.experts"), (ModuleQuant{4, 16, "nvfp4"}));
  const QuantConfig m8 = section(R"({"group_size": 32, "bits": 8, "mode": "mxfp8"})");
  EXPECT_EQ(m8.global().mode, "mxfp8");
}

TEST(QuantConfig, EveryValidAffineCombination) {
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int gs : {32, 64, 128}) {
      const QuantConfig q = section(json{{"group_size", gs}, {"bits", bits}}.dump());
      EXPECT_EQ(q.global(), (ModuleQuant{bits, gs, "affine"}));
    }
}

struct Hostile {
  const char* id;
  const char* section;
  std::vector<std::string> expect;  // besides the file name
};

TEST(QuantConfig, HostileValuesAreErrorsNamingModuleAndField) {
  const std::string mod = "model.layers.3.mlp.switch_mlp.up_proj";
  const std::vector<Hostile> cases = {
      {"bits_7", R"({"group_size": 64, "bits": 7})", {"quantization", "'bits' = 7", "2, 3, 4, 5, 6, 8"}},
      {"bits_0", R"({"group_size": 64, "bits": 0})", {"'bits' = 0"}},
      {"bits_negative", R"({"group_size": 64, "bits": -4})", {"'bits' = -4"}},
      {"bits_huge", R"({"group_size": 64, "bits": 4294967300})", {"'bits' = 4294967300"}},
      {"bits_beyond_int64", R"({"group_size": 64, "bits": 18446744073709551615})", {"'bits'", "out of range"}},
      {"bits_float", R"({"group_size": 64, "bits": 4.0})", {"'bits'", "floating-point"}},
      {"bits_exp_float", R"({"group_size": 64, "bits": 1e30})", {"'bits'", "floating-point"}},
      {"bits_string", R"({"group_size": 64, "bits": "4"})", {"'bits'", "a string", "expected an integer"}},
      {"bits_bool", R"({"group_size": 64, "bits": true})", {"'bits'", "a boolean"}},
      {"bits_missing", R"({"group_size": 64})", {"'bits'", "missing"}},
      {"group_missing", R"({"bits": 4})", {"'group_size'", "missing"}},
      {"group_16_affine", R"({"group_size": 16, "bits": 4})", {"'group_size' = 16", "32, 64, 128"}},
      {"group_0", R"({"group_size": 0, "bits": 4})", {"'group_size' = 0"}},
      {"group_negative", R"({"group_size": -64, "bits": 4})", {"'group_size' = -64"}},
      {"group_huge", R"({"group_size": 9223372036854775807, "bits": 4})", {"'group_size' = 9223372036854775807"}},
      {"group_array", R"({"group_size": [64], "bits": 4})", {"'group_size'", "an array"}},
      {"mode_unknown", R"({"group_size": 64, "bits": 4, "mode": "fp3"})", {"'mode' = 'fp3'", "affine, mxfp4"}},
      {"mode_number", R"({"group_size": 64, "bits": 4, "mode": 1})", {"'mode'", "an integer", "expected a string"}},
      {"mxfp4_wrong_group", R"({"group_size": 64, "bits": 4, "mode": "mxfp4"})", {"'group_size' = 64", "mode 'mxfp4'", "expected 32"}},
      {"mxfp8_wrong_bits", R"({"group_size": 32, "bits": 4, "mode": "mxfp8"})", {"'bits' = 4", "mode 'mxfp8'", "expected 8"}},
      {"section_not_object", R"([64, 4])", {"quantization is an array", "expected an object"}},
      {"section_string", R"("4bit")", {"quantization is a string"}},
      {"override_bits", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": {"group_size": 64, "bits": 9}})",
       {mod, "'bits' = 9"}},
      {"override_group_string", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": {"group_size": "64", "bits": 4}})",
       {mod, "'group_size'", "a string"}},
      {"override_missing_bits", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": {"group_size": 64}})",
       {mod, "'bits'", "missing"}},
      {"override_number", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": 8})",
       {mod, "an integer", "object {group_size, bits[, mode]} or false"}},
      {"override_string", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": "false"})",
       {mod, "a string"}},
      {"override_null", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": null})",
       {mod, "null"}},
      {"override_unknown_field", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": {"group_size": 64, "bits": 4, "scale": 2}})",
       {mod, "unexpected field 'scale'"}},
      {"override_mode_bad", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": {"group_size": 64, "bits": 4, "mode": "int4"}})",
       {mod, "'mode' = 'int4'"}},
      {"override_quantize_input_string", R"({"group_size": 64, "bits": 4, ")" "model.layers.3.mlp.switch_mlp.up_proj" R"(": {"group_size": 64, "bits": 4, "quantize_input": "yes"}})",
       {mod, "'quantize_input'", "expected a boolean"}},
      {"empty_module_path", R"({"group_size": 64, "bits": 4, "": {"group_size": 64, "bits": 4}})", {"empty module path"}},
  };
  for (const Hostile& c : cases) {
    std::vector<std::string> parts = c.expect;
    parts.push_back(kFile);
    try {
      section(c.section);
      ADD_FAILURE() << c.id << ": accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << c.id << " lacks '" << p << "': " << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.id << ": non-moex exception " << e.what();
    }
  }
  // The top level itself must be an object.
  EXPECT_TRUE(throws_error_with([] { QuantConfig::from_config(json::parse("[1]"), kFile); }, {kFile, "top level"}));
}

}  // namespace
}  // namespace moex::io
