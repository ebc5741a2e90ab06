// generation_config.json: the stop rule (mlx-lm's: its eos_token_id replaces config.json's,
// 0 and [] do not), the sampling fields and errors naming the file and field.
#include "model/generation_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "core/testing/temp_dir.h"

namespace moex::model {
namespace {

std::string dir_with(const moex::testing::TempDir& tmp, const std::string& json) {
  std::ofstream(tmp.file("generation_config.json")) << json;
  return tmp.path();
}

ModelConfig config_with_eos(std::vector<int64_t> eos) {
  ModelConfig c;
  c.vocab = 1000;
  c.eos_token_ids = std::move(eos);
  return c;
}

TEST(GenerationConfig, EosListReplacesConfigJsonsAndTheTokenizersIsAdded) {
  moex::testing::TempDir tmp("moex_gen");
  const GenerationConfig g =
      load_generation_config(dir_with(tmp, R"({"eos_token_id": [128, 8, 9]})"), 1000);
  EXPECT_EQ(stop_token_ids(config_with_eos({1}), g, {2, 9}), (std::vector<int32_t>{2, 8, 9, 128}));
}

TEST(GenerationConfig, NoFileZeroOrEmptyListKeepConfigJsons) {
  moex::testing::TempDir tmp("moex_gen");
  EXPECT_EQ(stop_token_ids(config_with_eos({5}), load_generation_config(tmp.path(), 1000), {}),
            (std::vector<int32_t>{5}));
  for (const char* j : {R"({"eos_token_id": 0})", R"({"eos_token_id": []})", R"({})"}) {
    const GenerationConfig g = load_generation_config(dir_with(tmp, j), 1000);
    EXPECT_EQ(stop_token_ids(config_with_eos({5}), g, {}), (std::vector<int32_t>{5})) << j;
  }
}

TEST(GenerationConfig, SamplingFieldsAreRead) {
  moex::testing::TempDir tmp("moex_gen");
  const GenerationConfig g = load_generation_config(
      dir_with(tmp, R"({"do_sample": true, "temperature": 0.6, "top_p": 0.95, "top_k": 20})"), 10);
  EXPECT_TRUE(g.do_sample);
  EXPECT_DOUBLE_EQ(*g.temperature, 0.6);
  EXPECT_DOUBLE_EQ(*g.top_p, 0.95);
  EXPECT_EQ(*g.top_k, 20);
}

TEST(GenerationConfig, BadValuesNameTheFileAndField) {
  moex::testing::TempDir tmp("moex_gen");
  const std::pair<const char*, const char*> cases[] = {
      {R"({"eos_token_id": [3, 1000]})", "eos_token_id"},
      {R"({"eos_token_id": -1})", "eos_token_id"},
      {R"({"eos_token_id": 4294967301})", "eos_token_id"},  // once wrapped to id 5
      {R"({"eos_token_id": "2"})", "eos_token_id"},
      {R"({"temperature": -0.5})", "temperature"},
      {R"({"top_p": 1.5})", "top_p"},
      {R"({"top_k": -3})", "top_k"},
      {R"({"do_sample": "yes"})", "do_sample"},
      {R"([1, 2])", "generation_config.json"},
  };
  for (const auto& [json, field] : cases) {
    try {
      load_generation_config(dir_with(tmp, json), 1000);
      ADD_FAILURE() << json << " accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("generation_config.json"), std::string::npos) << m;
      EXPECT_NE(m.find(field), std::string::npos) << m;
    }
  }
}

TEST(GenerationConfig, SamplingDefaultsFillOnlyTheFieldsNotGivenAndOnlyWithDoSample) {
  GenerationConfig g;
  g.temperature = 0.7;
  g.top_p = 0.8;
  g.top_k = 20;
  ops::SamplerArgs a;
  a.temperature = 0.1;
  EXPECT_EQ(apply_sampling_defaults(g, {.temperature = true}, a), "");  // do_sample false
  EXPECT_EQ(a.temperature, 0.1);
  EXPECT_EQ(a.top_k, 0);
  g.do_sample = true;
  EXPECT_EQ(apply_sampling_defaults(g, {.temperature = true}, a), "top_p 0.8, top_k 20");
  EXPECT_EQ(a.temperature, 0.1);
  EXPECT_DOUBLE_EQ(a.top_p, 0.8);
  EXPECT_EQ(a.top_k, 20);
  ops::SamplerArgs b;
  EXPECT_EQ(apply_sampling_defaults(g, {.temperature = true, .top_p = true, .top_k = true}, b),
            "");
  EXPECT_EQ(b.temperature, 0.0);
}

}  // namespace
}  // namespace moex::model
