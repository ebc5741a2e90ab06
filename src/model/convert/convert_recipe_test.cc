// The recipe decisions of `moex convert` as mlx-lm 0.32.2 makes them: defaults
// per mode, refused flag combinations, the dtype rule, the mixed recipes' layer
// pattern, the family's router override and the input-width rule.
// (convert_reference_test.py checks whole outputs against mlx_lm convert
// itself.)
#include "model/convert/convert_recipe.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/family_registry.h"
#include "model/presets.h"

namespace moex::model::convert {
namespace {

Recipe q(int bits = 0, int gs = 0, quant::Mode mode = quant::Mode::kAffine, std::string pred = "") {
  Recipe r;
  r.quantize = true;
  r.bits = bits;
  r.group_size = gs;
  r.mode = mode;
  r.predicate = std::move(pred);
  return r;
}

TEST(ConvertRecipe, ModeDefaults) {
  const struct {
    quant::Mode mode;
    int bits, gs;
  } cases[] = {{quant::Mode::kAffine, 4, 64},
               {quant::Mode::kMxfp4, 4, 32},
               {quant::Mode::kMxfp8, 8, 32},
               {quant::Mode::kNvfp4, 4, 16}};
  for (const auto &c : cases) {
    const Recipe r = resolve_recipe(q(0, 0, c.mode));
    EXPECT_EQ(r.bits, c.bits) << quant::mode_name(c.mode);
    EXPECT_EQ(r.group_size, c.gs) << quant::mode_name(c.mode);
  }
  EXPECT_EQ(resolve_recipe(q(8, 32)).bits, 8);
}

TEST(ConvertRecipe, RefusedCombinationsNameTheFlag) {
  const auto message = [](const Recipe &r) {
    try {
      resolve_recipe(r);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  Recipe no_q;
  no_q.bits = 8;
  EXPECT_NE(message(no_q).find("need -q"), std::string::npos);
  EXPECT_NE(message(q(7)).find("--q-bits"), std::string::npos);
  EXPECT_NE(message(q(4, 48)).find("--q-group-size"), std::string::npos);
  EXPECT_NE(message(q(8, 0, quant::Mode::kMxfp4)).find("mxfp4 has bits 4"), std::string::npos);
  EXPECT_NE(message(q(0, 0, quant::Mode::kNvfp4, "mixed_3_6")).find("affine only"),
            std::string::npos);
  EXPECT_NE(message(q(0, 0, quant::Mode::kAffine, "mixed_5_5")).find("mixed_2_6"),
            std::string::npos);
}

TEST(ConvertRecipe, DtypeRule) {
  Recipe r;
  EXPECT_EQ(conversion_dtype(r, {{"torch_dtype", "bfloat16"}}), DType::BF16);
  EXPECT_EQ(conversion_dtype(r, {{"torch_dtype", "auto"}}), std::nullopt);
  // transformers 5 writes "dtype" at the top: mlx-lm reads only torch_dtype
  // there.
  EXPECT_EQ(conversion_dtype(r, {{"dtype", "bfloat16"}}), std::nullopt);
  EXPECT_EQ(conversion_dtype(r, {{"text_config", {{"dtype", "float16"}}}}), DType::F16);
  r.dtype = DType::F32;
  EXPECT_EQ(conversion_dtype(r, {{"torch_dtype", "bfloat16"}}), DType::F32);
}

struct Model {
  ModelConfig cfg;
  std::vector<ModuleSpec> modules;
  const Family *family;
};

Model preset(const char *name, int64_t layers) {
  const ModelPreset *p = find_preset(name);
  EXPECT_NE(p, nullptr) << name;
  Model m;
  m.cfg = parse_model_config(preset_config_json(*p, layers), name);
  m.modules = module_table(m.cfg);
  m.family = find_family(m.cfg.model_type);
  return m;
}

const ModuleDecision &decision(const Model &m, const RecipePlan &plan, const std::string &path) {
  for (size_t i = 0; i < m.modules.size(); ++i)
    if (m.modules[i].path == path) return plan.decision(i);
  ADD_FAILURE() << "no module " << path;
  static const ModuleDecision none;
  return none;
}

// mixed_3_6 on 48 layers: 6 bits for v_proj / down_proj in layers < 6, >= 42
// and where (layer - 6) % 3 == 2; lm_head at 6; everything else at 3, routers
// included.
TEST(ConvertRecipe, MixedRecipeLayerPattern) {
  const Model m = preset("qwen3-30b-a3b", 48);
  const RecipePlan plan(m.cfg, *m.family, m.modules,
                        resolve_recipe(q(0, 64, quant::Mode::kAffine, "mixed_3_6")));
  for (int layer : {0, 5, 6, 7, 8, 20, 21, 41, 42, 47}) {
    const bool more = layer < 6 || layer >= 42 || (layer - 6) % 3 == 2;
    const std::string p = "model.layers." + std::to_string(layer);
    EXPECT_EQ(decision(m, plan, p + ".self_attn.v_proj").bits, more ? 6 : 3) << layer;
    EXPECT_EQ(decision(m, plan, p + ".mlp.switch_mlp.down_proj").bits, more ? 6 : 3) << layer;
    EXPECT_EQ(decision(m, plan, p + ".self_attn.q_proj").bits, 3) << layer;
    EXPECT_EQ(decision(m, plan, p + ".mlp.gate").bits, 3) << layer;
  }
  EXPECT_EQ(decision(m, plan, "lm_head").bits, 6);
  EXPECT_EQ(decision(m, plan, "model.embed_tokens").bits, 3);
  EXPECT_FALSE(decision(m, plan, "model.norm").quantized);
  const nlohmann::json block = plan.quantization_block(m.modules);
  EXPECT_EQ(block["model.layers.8.self_attn.v_proj"],
            (nlohmann::json{{"group_size", 64}, {"bits", 6}, {"mode", "affine"}}));
}

// Plain -q: qwen3_moe's predicate puts the router at 8 bits, group 64, in the
// block without a mode; other modules take the recipe and are not listed.
TEST(ConvertRecipe, FamilyRouterOverride) {
  const Model m = preset("tiny-qwen3-moe", 0);
  const RecipePlan plan(m.cfg, *m.family, m.modules, resolve_recipe(q(0, 0, quant::Mode::kMxfp4)));
  const ModuleDecision &router = decision(m, plan, "model.layers.1.mlp.gate");
  EXPECT_TRUE(router.quantized);
  EXPECT_EQ(router.bits, 8);
  EXPECT_EQ(router.group_size, 64);
  EXPECT_EQ(router.mode, quant::Mode::kAffine);
  const ModuleDecision &q_proj = decision(m, plan, "model.layers.1.self_attn.q_proj");
  EXPECT_EQ(q_proj.mode, quant::Mode::kMxfp4);
  const nlohmann::json block = plan.quantization_block(m.modules);
  EXPECT_EQ(block["model.layers.1.mlp.gate"], (nlohmann::json{{"group_size", 64}, {"bits", 8}}));
  EXPECT_FALSE(block.contains("model.layers.1.self_attn.q_proj"));
  EXPECT_EQ(block["mode"], "mxfp4");
}

// A Linear whose input width is no multiple of the group stays float (mlx-lm's
// convert rule).
TEST(ConvertRecipe, WidthNotMultipleOfGroupStaysFloat) {
  Model m = preset("tiny-qwen3-moe", 0);
  std::vector<ModuleSpec> mods = {m.modules[1]};
  mods[0].kind = ModuleKind::kLinear;
  mods[0].shape = {64, 96};
  const RecipePlan at64(m.cfg, *m.family, mods, resolve_recipe(q(4, 64)));
  EXPECT_FALSE(at64.decision(0).quantized);
  const RecipePlan at32(m.cfg, *m.family, mods, resolve_recipe(q(4, 32)));
  EXPECT_TRUE(at32.decision(0).quantized);
}

}  // namespace
}  // namespace moex::model::convert
