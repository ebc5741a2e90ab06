// Engine tests on synthetic tiny checkpoints (written with the model library's make-model
// code): prefill vs token-by-token decode, determinism, path counters, per-expert layouts
// stacked at load, and bad input as moex::Error naming the problem.
#include "model/engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/kv_cache_type.h"
#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/checkpoint_plan.h"
#include "model/engine/engine_test_util.h"
#include "model/engine/run_setup.h"
#include "model/presets.h"
#include "model/synth_weights.h"

namespace moex::model::engine {
namespace {

namespace fs = std::filesystem;

// A temporary directory named moex_engine_*.
class Tmp : public moex::testing::TempDir {
 public:
  Tmp() : moex::testing::TempDir("moex_engine") {}
};

std::string make_tiny(const Tmp& tmp, const std::string& preset, const std::string& name,
                      DType dtype = DType::F32) {
  return test::write_tiny_preset(preset, tmp.file(name), 0, dtype);
}

using test::read_config;
using test::write_config;

double nrms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

std::vector<float> run(Engine& e, const std::vector<int32_t>& ids) {
  const float* l = e.prefill(ids);
  return std::vector<float>(l, l + e.vocab());
}

EngineOptions opts(const char* fused) { return test::options_for_fused(fused); }

void expect_error(const std::function<void()>& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no moex::Error thrown";
  } catch (const Error& e) {
    for (const char* p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  }
}

const std::vector<int32_t> kPrompt = {5, 17, 200, 3, 99, 41, 7};

class PrefillVsDecode : public ::testing::TestWithParam<const char*> {};

// On every family (arch/families.def): the short-conv state (LFM2), the Gated DeltaNet conv and
// recurrent states (Qwen3-Next, Qwen3.5-MoE), the Mamba-2 states (Nemotron-H), the compressed
// latent cache (DeepSeek-V3, absorbed attention in both), chunked attention and NoPE
// temperature (Llama-4), sliding windows and sinks (gpt-oss, Gemma-4) and the KV cache all carry
// across calls exactly as within one batch.
TEST_P(PrefillVsDecode, PrefillMatchesTokenByTokenDecode) {
  Tmp tmp;
  const std::string dir = make_tiny(tmp, GetParam(), "m");
  if (std::string(GetParam()) == "tiny-llama4") {
    auto j = read_config(dir);
    j["text_config"]["attention_chunk_size"] = 4;
    j["text_config"]["floor_scale"] = 2;
    write_config(dir, j);
  }
  auto e = Engine::open(dir, opts("on"));
  const std::vector<float> batch = run(*e, kPrompt);
  e->reset();
  const float* l = nullptr;
  for (int32_t t : kPrompt) l = e->decode(t);
  const std::vector<float> step(l, l + e->vocab());
  // Different MoE path (fallback for the batch, fused per token) and row grouping, but every op
  // computes each token's row with the same arithmetic (src/kernels/README.md, Determinism):
  // measured bit-identical on scalar and avx2 for every family (2026-12-03, MOEX_ISA=scalar and
  // the default; earlier on avx512 for the six families this test then listed).
  EXPECT_TRUE(batch == step) << "batch vs step logits differ, normalized RMS " << nrms(batch, step);
  EXPECT_EQ(e->position(), int64_t(kPrompt.size()));
}
INSTANTIATE_TEST_SUITE_P(Families, PrefillVsDecode, test::tiny_families());

// --kv-cache f16 on the families with a GQA cache in their own shapes (sinks and windows:
// gpt-oss; recurrent layers beside attention: Qwen3-Next): prefill still equals token-by-token
// decode bit for bit, and the logits stay within the measured cost of rounding the cache to
// f16 of the f32 cache's (normalized RMS 1.8e-5 to 8.8e-5 on these three, 2026-12-07, Zen 4;
// the bound a little over twice the largest). The cache's bytes halve.
TEST(Engine, F16KvCacheKeepsPrefillEqualToDecodeAndNearTheF32Logits) {
  struct TypeGuard {
    ~TypeGuard() { backend::set_kv_cache_type(DType::F32); }
  } guard;
  for (const char* preset : {"tiny-qwen3-moe", "tiny-gpt-oss", "tiny-qwen3-next"}) {
    SCOPED_TRACE(preset);
    Tmp tmp;
    const std::string dir = make_tiny(tmp, preset, "m");
    backend::set_kv_cache_type(DType::F32);
    auto e32 = Engine::open(dir, opts("on"));
    const std::vector<float> want = run(*e32, kPrompt);
    backend::set_kv_cache_type(DType::F16);
    auto e = Engine::open(dir, opts("on"));
    EXPECT_EQ(e->kv_cache_bytes() * 2, e32->kv_cache_bytes());
    const std::vector<float> batch = run(*e, kPrompt);
    e->reset();
    const float* l = nullptr;
    for (int32_t t : kPrompt) l = e->decode(t);
    EXPECT_TRUE(batch == std::vector<float>(l, l + e->vocab()));
    const double err = nrms(batch, want);
    std::printf("%s: f16 KV cache logits against f32, normalized RMS %.3g\n", preset, err);
    EXPECT_GT(err, 0.0);  // the cache is really rounded
    EXPECT_LT(err, 2e-4);
  }
}

TEST(Engine, ResetReproducesLogitsBitForBit) {
  Tmp tmp;
  const std::string dir = make_tiny(tmp, "tiny-mixtral", "m");
  auto e = Engine::open(dir, opts("auto"));
  auto a = run(*e, kPrompt);
  const float* d1 = e->decode(11);
  std::vector<float> da(d1, d1 + e->vocab());
  e->reset();
  EXPECT_EQ(e->position(), 0);
  auto b = run(*e, kPrompt);
  const float* d2 = e->decode(11);
  EXPECT_EQ(a, b);
  EXPECT_EQ(da, std::vector<float>(d2, d2 + e->vocab()));
}

TEST(Engine, PathCountersFollowTheFusedSetting) {
  Tmp tmp;
  const std::string dir = make_tiny(tmp, "tiny-qwen2-moe", "q2");
  auto e = Engine::open(dir, opts("on"));
  const int64_t moe_layers = e->config().num_moe_layers();
  ASSERT_GT(moe_layers, 0);
  run(*e, kPrompt);
  for (int i = 0; i < 3; ++i) e->decode(int32_t(i + 1));
  const moe::PathCounters& c = e->counters();
  EXPECT_EQ(c.fused_calls(), 3 * moe_layers);
  EXPECT_EQ(c.fallback_calls(), moe_layers);  // the prefill batch
  EXPECT_EQ(c.fallback_calls(moe::DeclineReason::kNotSingleToken), moe_layers);
  EXPECT_EQ(c.fused_calls(moe::ExpertSite::kShared), 3 * moe_layers);  // gated shared expert
  e->set_fused_settings(opts("off").fused);
  e->counters().reset();
  e->decode(4);
  EXPECT_EQ(c.fused_calls(), 0);
  EXPECT_EQ(c.fallback_calls(moe::DeclineReason::kDisabled), moe_layers);
  for (const auto& d : e->decode_decisions()) EXPECT_EQ(d.routed.path, moe::Path::kFallback);
}

// The decode profile times single-token steps only, charges every op group the model runs,
// adds up to no more than the steps' wall time, and its per-group weight bytes add up to the
// per-token figure the benchmarks divide by; a prefill goes to the prefill profile, its steps
// counting the prompt's tokens.
TEST(Engine, DecodeProfileCoversTheStepAndTheBytes) {
  Tmp tmp;
  const std::string dir = make_tiny(tmp, "tiny-qwen2-moe", "p");
  auto e = Engine::open(dir, opts("on"));
  run(*e, kPrompt);  // not profiled: off
  e->set_profiling(true);
  const auto tp = std::chrono::steady_clock::now();
  e->prefill(kPrompt);  // a batch: not a decode step; the prefill profile counts its tokens
  const double prefill_wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - tp).count();
  EXPECT_EQ(e->profile().steps, 0);
  const DecodeProfile& pp = e->prefill_profile();
  EXPECT_EQ(pp.steps, int64_t(kPrompt.size()));
  EXPECT_GT(pp.total_seconds(), 0.0);
  EXPECT_LE(pp.total_seconds(), prefill_wall);
  for (DecodeOp op : {DecodeOp::kEmbedding, DecodeOp::kAttentionProjections,
                      DecodeOp::kAttentionCore, DecodeOp::kMoe, DecodeOp::kLmHead})
    EXPECT_GT(pp.seconds[size_t(op)], 0.0) << decode_op_name(op);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) e->decode(int32_t(i + 1));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const DecodeProfile& p = e->profile();
  EXPECT_EQ(p.steps, 4);
  EXPECT_GT(p.total_seconds(), 0.0);
  EXPECT_LE(p.total_seconds(), wall);
  for (DecodeOp op : {DecodeOp::kEmbedding, DecodeOp::kNormsResidual,
                      DecodeOp::kAttentionProjections, DecodeOp::kAttentionCore, DecodeOp::kMoe,
                      DecodeOp::kLmHead})
    EXPECT_GT(p.seconds[size_t(op)], 0.0) << decode_op_name(op);
  for (DecodeOp op : {DecodeOp::kShortConv, DecodeOp::kDenseMlp})
    EXPECT_EQ(p.seconds[size_t(op)], 0.0) << decode_op_name(op);  // none in this model
  int64_t sum = 0;
  for (int64_t b : e->decode_op_weight_bytes()) sum += b;
  const int64_t per_token = e->active_weight_bytes_per_token();
  EXPECT_LE(sum, per_token);  // norms are the only weights not assigned to a group
  EXPECT_GT(double(sum), 0.95 * double(per_token));
  EXPECT_GT(e->decode_op_weight_bytes()[size_t(DecodeOp::kAttentionProjections)], 0);
  EXPECT_GT(e->decode_op_weight_bytes()[size_t(DecodeOp::kMoe)], 0);
  e->set_profiling(false);
  e->decode(5);
  EXPECT_EQ(e->profile().steps, 4);
  e->reset_profile();
  EXPECT_EQ(e->profile().steps, 0);
  EXPECT_EQ(e->profile().total_seconds(), 0.0);
  EXPECT_EQ(e->prefill_profile().steps, 0);
  EXPECT_EQ(e->prefill_profile().total_seconds(), 0.0);
}

// OLMoE builds its RoPE with mlx-lm's initialize_rope, so a yarn rope_scaling applies (the
// rotation itself is checked against mlx-lm in the ops reference test): the engine opens it,
// and each yarn field reaches the rotation (changing one changes the logits).
TEST(Engine, OlmoeYarnRopeScalingIsApplied) {
  Tmp tmp;
  const std::string dir = make_tiny(tmp, "tiny-olmoe", "y");
  auto logits_with = [&](const nlohmann::json& scaling) {
    nlohmann::json j = read_config(dir);
    j["rope_scaling"] = scaling;
    write_config(dir, j);
    auto e = Engine::open(dir, opts("on"));
    const float* l = e->prefill({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    return std::vector<float>(l, l + e->vocab());
  };
  const auto plain = logits_with(nullptr);
  const nlohmann::json yarn = {{"rope_type", "yarn"}, {"factor", 4.0},
                               {"original_max_position_embeddings", 64}};
  const auto scaled = logits_with(yarn);
  EXPECT_NE(plain, scaled);
  for (const char* field : {"beta_fast", "beta_slow", "mscale", "mscale_all_dim"}) {
    nlohmann::json y = yarn;
    y[field] = 3.5;
    EXPECT_NE(logits_with(y), scaled) << field;
  }
  nlohmann::json bad = yarn;
  bad["beta_fast"] = -1.0;
  expect_error([&] { logits_with(bad); }, {"beta_fast", "config.json"});
  bad = yarn;
  bad["mscale_all_dim"] = -10.0;  // 0.1 * -10 * ln 4 + 1 < 0: a division by a negative
  expect_error([&] { logits_with(bad); }, {"mscale_all_dim", "config.json"});
}

// Rewrites a stacked checkpoint with Hugging Face per-expert tensors
// (experts.{e}.{gate,up,down}_proj.*): the engine stacks them back and computes the same.
TEST(Engine, PerExpertLayoutIsStackedAtLoad) {
  Tmp tmp;
  const std::string dir = make_tiny(tmp, "tiny-olmoe", "stacked");
  const std::string out = tmp.file("per_expert");
  fs::create_directories(out);
  fs::copy_file(dir + "/config.json", out + "/config.json");
  auto src = io::SafetensorsFile::open(dir + "/model.safetensors");
  struct Piece {
    io::TensorSpec spec;
    const uint8_t* data;
    uint64_t bytes;
  };
  std::vector<Piece> pieces;
  const std::string marker = ".switch_mlp.";
  for (const io::TensorInfo& t : src->tensors()) {
    const size_t at = t.name.find(marker);
    if (at == std::string::npos) {
      pieces.push_back({{t.name, t.dtype, t.shape}, t.data, t.nbytes});
      continue;
    }
    const int64_t experts = t.shape[0];
    const uint64_t per = t.nbytes / uint64_t(experts);
    std::vector<int64_t> shape(t.shape.begin() + 1, t.shape.end());
    for (int64_t e = 0; e < experts; ++e)
      pieces.push_back({{t.name.substr(0, at) + ".experts." + std::to_string(e) + "." +
                             t.name.substr(at + marker.size()),
                         t.dtype, shape},
                        t.data + per * uint64_t(e), per});
  }
  {
    io::SafetensorsWriter w(out + "/model.safetensors");
    for (const auto& p : pieces) w.declare(p.spec);
    for (const auto& p : pieces) w.write(p.spec.name, p.data, p.bytes);
    w.finish();
  }
  auto a = Engine::open(dir, opts("on"));
  auto b = Engine::open(out, opts("on"));
  EXPECT_EQ(a->stacked_copy_bytes(), 0);
  EXPECT_GT(b->stacked_copy_bytes(), 0);
  EXPECT_EQ(run(*a, kPrompt), run(*b, kPrompt));
}

TEST(EngineErrors, BadDirectoriesAndConfigs) {
  Tmp tmp;
  expect_error([&] { Engine::open(tmp.file("does_not_exist"), {}); }, {"does_not_exist"});
  const std::string dir = make_tiny(tmp, "tiny-qwen3-moe", "q");
  auto j = read_config(dir);

  auto bad = j;
  bad["model_type"] = "gpt_nonexistent";
  write_config(dir, bad);
  expect_error([&] { Engine::open(dir, {}); }, {"gpt_nonexistent"});

  bad = j;
  bad["num_experts"] = "8";
  write_config(dir, bad);
  expect_error([&] { Engine::open(dir, {}); }, {"num_experts"});

  bad = j;  // a layer the checkpoint does not have: missing tensors
  bad["num_hidden_layers"] = j["num_hidden_layers"].get<int>() + 1;
  write_config(dir, bad);
  expect_error([&] { Engine::open(dir, {}); }, {"model.layers.3"});

  bad = j;  // expert width the tensors do not have: mis-shaped tensors
  bad["moe_intermediate_size"] = j["moe_intermediate_size"].get<int>() * 2;
  write_config(dir, bad);
  expect_error([&] { Engine::open(dir, {}); }, {"switch_mlp"});

  write_config(dir, j);
  auto e = Engine::open(dir, opts("auto"));
  expect_error([&] { e->decode(int32_t(e->vocab())); }, {"token id", "vocabulary"});
  EngineOptions small = opts("auto");
  small.context = 4;
  auto s = Engine::open(dir, small);
  expect_error([&] { s->prefill(kPrompt); }, {"context"});
  EngineOptions huge = opts("auto");
  huge.context = j["max_position_embeddings"].get<int64_t>() + 1;
  expect_error([&] { Engine::open(dir, huge); }, {"max_position_embeddings"});
}

// A missing model directory is named as the directory, not as a missing config.json; a
// symlink loop is a moex::Error naming the path, not an escaping std::filesystem_error.
TEST(EngineErrors, MissingAndLoopingModelDirectories) {
  Tmp tmp;
  const std::string missing = tmp.file("no_model");
  expect_error([&] { Engine::open(missing, {}); }, {"the directory", "no_model", "does not exist"});
  expect_error([&] { resolve_prompt(missing, std::string("hi"), std::nullopt); },
               {"model directory", "no_model", "does not exist"});
  const std::string loop = tmp.file("loop");
  fs::create_symlink(loop, loop);
  expect_error([&] { Engine::open(loop, {}); }, {"loop/config.json", "symbolic links"});
  expect_error([&] { resolve_prompt(loop, std::string("hi"), std::nullopt); },
               {"model directory", "loop", "cannot access"});
  const std::string file = tmp.file("plain_file");
  std::ofstream(file) << "x";
  expect_error([&] { resolve_prompt(file, std::string("hi"), std::nullopt); },
               {"plain_file", "is not a directory"});
}

TEST(RunSetup, PromptIdsAndContextChecks) {
  EXPECT_EQ(parse_prompt_ids("1,2,30", "--prompt-ids"), (std::vector<int32_t>{1, 2, 30}));
  for (const char* bad : {"", "1,,2", "1, 2", "-1", "a", "1,"})
    expect_error([&] { parse_prompt_ids(bad, "--prompt-ids"); }, {"--prompt-ids"});
  ModelConfig c;
  c.max_position = 16;
  c.source = "cfg.json";
  EXPECT_EQ(context_for(c, 10, 6), 16);
  expect_error([&] { context_for(c, 17, 1); }, {"longer than the model's context", "cfg.json"});
  expect_error([&] { context_for(c, 10, 7); }, {"max_position_embeddings"});
  for (const char* bad : {"f8", "f 16", "", "bf16"})
    expect_error([&] { apply_cpu_settings(std::nullopt, std::nullopt, std::nullopt,
                                          std::nullopt, std::string(bad)); },
                 {"--kv-cache", "f32 or f16"});
}

}  // namespace
}  // namespace moex::model::engine
