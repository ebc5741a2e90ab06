// Synthetic weights: same seed -> identical bytes (whatever the chunking), another seed ->
// other bytes; value statistics follow the init rules; the writer's files hold the plan.
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/checkpoint.h"
#include "model/checkpoint_plan.h"
#include "model/model_test_util.h"
#include "model/presets.h"
#include "model/synth_weights.h"

namespace moex::model {
namespace {

namespace fs = std::filesystem;

std::string all_bytes(const std::string& dir) {
  std::string s;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) s += f.substr(dir.size()) + ":" + testing::read_file(f);
  return s;
}

TEST(SynthWeights, SameSeedSameBytesAnyChunking) {
  testing::TempDir tmp;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-qwen2-moe"), 0, {}, DType::BF16);
  SynthArgs a;
  a.seed = 7;
  a.out_dir = tmp.file("a");
  write_synthetic_checkpoint(plan, a);
  SynthArgs b = a;
  b.out_dir = tmp.file("b");
  b.chunk_values = 1000;  // many partial rows and chunks
  write_synthetic_checkpoint(plan, b);
  SynthArgs c = a;
  c.out_dir = tmp.file("c");
  c.seed = 8;
  write_synthetic_checkpoint(plan, c);
  const std::string ba = all_bytes(a.out_dir), bb = all_bytes(b.out_dir), bc = all_bytes(c.out_dir);
  EXPECT_GT(ba.size(), size_t(1) << 20);
  EXPECT_TRUE(ba == bb) << "chunking changed the bytes";
  EXPECT_EQ(ba.size(), bc.size());
  EXPECT_FALSE(ba == bc) << "the seed did not change the bytes";
}

TEST(SynthWeights, ShardsHoldEveryPlannedTensor) {
  testing::TempDir tmp;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-mixtral"), 0, {}, DType::BF16);
  SynthArgs a;
  a.out_dir = tmp.path();
  a.max_shard_bytes = 1 << 20;  // force several shards + index
  const SynthResult r = write_synthetic_checkpoint(plan, a);
  EXPECT_GE(r.shards, 3);
  EXPECT_TRUE(fs::exists(tmp.file("model.safetensors.index.json")));
  EXPECT_EQ(r.tensor_bytes, plan.total_bytes());
  const io::Checkpoint ck = io::Checkpoint::open(tmp.path());
  EXPECT_EQ(ck.size(), plan.tensors.size());
  for (const TensorRecord& t : plan.tensors) ck.require(t.name, t.dtype, t.shape);
  EXPECT_EQ(ck.files()[0]->metadata().value("format", ""), "mlx");
}

TEST(SynthWeights, ZIsStandardized) {
  const uint64_t key = synth_stream_key(3, "x.weight");
  const int n = 200000;
  double s = 0, s2 = 0, mx = 0;
  for (int i = 0; i < n; ++i) {
    const double z = synth_z(key, uint64_t(i));
    s += z;
    s2 += z * z;
    mx = std::max(mx, std::abs(z));
  }
  const double mean = s / n, var = s2 / n - mean * mean;
  // Standard error of the mean is 1/sqrt(n) ~ 0.0022; allow 5 of them.
  EXPECT_LT(std::abs(mean), 5.0 / std::sqrt(double(n)));
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_LT(mx, 3.47);  // Irwin-Hall(4) bound
  // Different names give different streams.
  EXPECT_NE(synth_stream_key(3, "x.weight"), synth_stream_key(3, "y.weight"));
  EXPECT_NE(synth_stream_key(3, "x.weight"), synth_stream_key(4, "x.weight"));
}

TEST(SynthWeights, InitRules) {
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("qwen3-30b-a3b"), 0, {}, DType::BF16);
  const ModelConfig& c = plan.config;
  for (const ModuleSpec& m : plan.modules) {
    const InitDist d = init_distribution(m, TensorPart::kWeight, c);
    if (m.kind == ModuleKind::kNorm) {
      EXPECT_EQ(d.mean, 1.0f) << m.path;
    }
    if (m.role == TensorRole::kRouter) {
      EXPECT_FLOAT_EQ(d.std, 1.0f / std::sqrt(2048.0f)) << m.path;
    }
    if (m.role == TensorRole::kExperts) {
      EXPECT_FLOAT_EQ(d.std, 0.02f) << m.path;
    }
    if (m.residual_out && m.role == TensorRole::kAttention) {
      // All 48 o_proj together add about half an embedding rms (0.02) to the residual:
      // per layer 0.01/sqrt(48), over an input of rms 0.02*sqrt(2048) and width 4096.
      const double per_layer = d.std * 0.02 * std::sqrt(2048.0) * std::sqrt(4096.0);
      EXPECT_NEAR(per_layer * std::sqrt(48.0), 0.01, 1e-6) << m.path;
    }
  }
}

// A full disk while writing config.json (/dev/full: ENOSPC) is named with the system's reason.
TEST(SynthWeights, AFullDiskSaysWhy) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  testing::TempDir tmp;
  fs::create_symlink("/dev/full", tmp.file("config.json"));
  const CheckpointPlan plan =
      plan_preset_checkpoint(*find_preset("tiny-qwen3-moe"), 0, {}, DType::BF16);
  SynthArgs a;
  a.out_dir = tmp.path();
  testing::expect_error([&] { write_synthetic_checkpoint(plan, a); },
                        {tmp.file("config.json"), std::strerror(ENOSPC)});
}

}  // namespace
}  // namespace moex::model
