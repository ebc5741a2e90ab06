// Checkpoint layouts the engine rearranges at load, each against the layout it reads directly:
// gpt-oss's original mxfp4 experts (gate and up rows alternating in gate_up_proj_blocks) and
// Ling's norm_head (the lm_head's columns normalized at load). Same bytes into the same
// kernels, so the logits must be bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/testing/temp_dir.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/checkpoint_plan.h"
#include "model/engine/engine.h"
#include "model/engine/engine_test_util.h"
#include "model/presets.h"
#include "model/synth_weights.h"

namespace moex::model::engine {
namespace {

struct Tensor {
  io::TensorSpec spec;
  std::vector<uint8_t> bytes;
};

std::vector<Tensor> read_all(const std::string& dir) {
  auto f = io::SafetensorsFile::open(dir + "/model.safetensors");
  std::vector<Tensor> out;
  for (const io::TensorInfo& t : f->tensors())
    out.push_back({{t.name, t.dtype, t.shape}, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
  return out;
}

void write_all(const std::string& dir, const std::vector<Tensor>& ts) {
  io::SafetensorsWriter w(dir + "/model.safetensors");
  for (const Tensor& t : ts) w.declare(t.spec);
  for (const Tensor& t : ts) w.write(t.spec.name, t.bytes.data(), t.bytes.size());
  w.finish();
}

const Tensor& find(const std::vector<Tensor>& ts, const std::string& name) {
  for (const Tensor& t : ts)
    if (t.spec.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

// Rows of a and b alternating: [E][rows][row_bytes] each -> [E][2 * rows][row_bytes].
std::vector<uint8_t> interleave_rows(const Tensor& a, const Tensor& b, int64_t experts) {
  const size_t per_expert = a.bytes.size() / size_t(experts);
  const size_t rows = size_t(a.spec.shape[1]), row = per_expert / rows;
  std::vector<uint8_t> out(2 * a.bytes.size());
  for (size_t e = 0; e < size_t(experts); ++e)
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(&out[(e * 2 * rows + 2 * r) * row], &a.bytes[e * per_expert + r * row], row);
      std::memcpy(&out[(e * 2 * rows + 2 * r + 1) * row], &b.bytes[e * per_expert + r * row], row);
    }
  return out;
}

std::vector<float> prefill(const std::string& dir) {
  auto e = Engine::open(dir, test::options_for_fused("on"));
  const std::vector<int32_t> prompt = {5, 17, 200, 3, 99, 41, 7};
  const float* l = e->prefill(prompt);
  return std::vector<float>(l, l + e->vocab());
}

TEST(OriginalLayout, GptOssInterleavedMxfp4ExpertsMatchTheMlxLayout) {
  testing::TempDir tmp("moex_layout");
  SynthQuant q;
  q.mode = quant::Mode::kMxfp4, q.bits = 4, q.group_size = 32, q.router_bits = 0;
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-gpt-oss"), 0, q, DType::F32);
  SynthArgs args;
  args.out_dir = tmp.file("mlx");
  write_synthetic_checkpoint(plan, args);
  const std::vector<Tensor> mlx = read_all(args.out_dir);
  const std::string orig = tmp.file("original");
  std::filesystem::create_directories(orig);
  std::filesystem::copy_file(args.out_dir + "/config.json", orig + "/config.json");
  std::vector<Tensor> out;
  for (const Tensor& t : mlx)
    if (t.spec.name.find(".mlp.experts.") == std::string::npos) out.push_back(t);
  const int64_t E = plan.config.moe.num_experts;
  for (int64_t l = 0; l < plan.config.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.experts.";
    for (const char* part : {"weight", "scales", "bias"}) {
      const Tensor& g = find(mlx, p + "gate_proj." + part);
      const Tensor& u = find(mlx, p + "up_proj." + part);
      const Tensor& d = find(mlx, p + "down_proj." + part);
      std::vector<int64_t> gu = g.spec.shape, dn = d.spec.shape;
      gu[1] *= 2;
      const bool blocks = std::string(part) == "weight";
      if (blocks) {  // U32 [E, rows, in/8] -> U8 [E, rows, in/32, 16]: the same bytes
        gu.back() /= 4, gu.push_back(16);
        dn.back() /= 4, dn.push_back(16);
      }
      const std::string suffix = blocks ? "_blocks" : std::string("_") + part;
      const DType dt = blocks ? DType::U8 : g.spec.dtype;
      out.push_back({{p + "gate_up_proj" + suffix, dt, gu}, interleave_rows(g, u, E)});
      out.push_back({{p + "down_proj" + suffix, blocks ? DType::U8 : d.spec.dtype, dn}, d.bytes});
    }
  }
  write_all(orig, out);
  const std::vector<float> a = prefill(args.out_dir), b = prefill(orig);
  EXPECT_TRUE(a == b) << "original layout logits differ from the MLX layout's";
}

// Granite's Hugging Face layout: input_linear [E, 2*Dff, H] (gate rows, then up) and
// output_linear [E, H, Dff]; the halves copied apart, down read in place.
TEST(OriginalLayout, GraniteFusedInputLinearMatchesTheMlxLayout) {
  testing::TempDir tmp("moex_layout");
  SynthQuant q;
  q.bits = 0;  // Hugging Face checkpoints are unquantized
  const CheckpointPlan plan =
      plan_preset_checkpoint(*find_preset("tiny-granitemoe"), 0, q, DType::F32);
  SynthArgs args;
  args.out_dir = tmp.file("mlx");
  write_synthetic_checkpoint(plan, args);
  const std::vector<Tensor> mlx = read_all(args.out_dir);
  const std::string hf = tmp.file("hf");
  std::filesystem::create_directories(hf);
  std::filesystem::copy_file(args.out_dir + "/config.json", hf + "/config.json");
  std::vector<Tensor> out;
  for (const Tensor& t : mlx)
    if (t.spec.name.find(".switch_mlp.") == std::string::npos) out.push_back(t);
  const int64_t E = plan.config.moe.num_experts;
  for (int64_t l = 0; l < plan.config.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".block_sparse_moe.";
    const Tensor& g = find(mlx, p + "switch_mlp.gate_proj.weight");
    const Tensor& u = find(mlx, p + "switch_mlp.up_proj.weight");
    const Tensor& d = find(mlx, p + "switch_mlp.down_proj.weight");
    std::vector<uint8_t> fused;
    const size_t half = g.bytes.size() / size_t(E);
    for (int64_t e = 0; e < E; ++e) {  // expert e: its gate rows, then its up rows
      fused.insert(fused.end(), g.bytes.begin() + e * half, g.bytes.begin() + (e + 1) * half);
      fused.insert(fused.end(), u.bytes.begin() + e * half, u.bytes.begin() + (e + 1) * half);
    }
    std::vector<int64_t> shape = g.spec.shape;
    shape[1] *= 2;
    out.push_back({{p + "input_linear.weight", g.spec.dtype, shape}, fused});
    out.push_back({{p + "output_linear.weight", d.spec.dtype, d.spec.shape}, d.bytes});
  }
  write_all(hf, out);
  EXPECT_TRUE(prefill(args.out_dir) == prefill(hf)) << "input_linear logits differ";
}

// norm_head: a float lm_head normalized at load equals the same head stored normalized (the
// sums of squares in f32, row after row, as the binder computes them) with norm_head false.
TEST(OriginalLayout, LingNormHeadEqualsAPreNormalizedHead) {
  testing::TempDir tmp("moex_layout");
  SynthQuant q;
  q.bits = 0;  // unquantized, as a Hugging Face checkpoint holds the head
  const CheckpointPlan plan =
      plan_preset_checkpoint(*find_preset("tiny-bailing-moe"), 0, q, DType::F32);
  SynthArgs args;
  args.out_dir = tmp.file("raw");
  write_synthetic_checkpoint(plan, args);
  std::vector<Tensor> ts = read_all(args.out_dir);
  const std::string pre = tmp.file("pre");
  std::filesystem::create_directories(pre);
  for (Tensor& t : ts) {
    if (t.spec.name != "lm_head.weight") continue;
    ASSERT_EQ(t.spec.dtype, DType::F32);
    const int64_t rows = t.spec.shape[0], cols = t.spec.shape[1];
    float* w = reinterpret_cast<float*>(t.bytes.data());
    std::vector<float> norm(size_t(cols), 0.f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) norm[size_t(c)] += w[r * cols + c] * w[r * cols + c];
    for (float& n : norm) n = std::sqrt(n) + 1e-7f;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) w[r * cols + c] /= norm[size_t(c)];
  }
  write_all(pre, ts);
  nlohmann::json j = test::read_config(args.out_dir);
  j["norm_head"] = false;
  test::write_config(pre, j);
  ASSERT_TRUE(test::read_config(args.out_dir)["norm_head"].get<bool>());
  EXPECT_TRUE(prefill(args.out_dir) == prefill(pre));
}

// A quantized lm_head (mlx_lm convert -q normalized it before quantizing) is read as it is
// whatever norm_head says: the logits equal those of the same checkpoint with norm_head false.
// mlx-lm 0.32.2 would "normalize" its packed words again on every load (docs/families.md,
// bailing_moe); moex does not follow it there.
TEST(OriginalLayout, LingQuantizedHeadIsNotNormalizedAgain) {
  testing::TempDir tmp("moex_layout");
  const CheckpointPlan plan =
      plan_preset_checkpoint(*find_preset("tiny-bailing-moe"), 0, SynthQuant{}, DType::F32);
  SynthArgs args;
  args.out_dir = tmp.file("norm_head");
  write_synthetic_checkpoint(plan, args);
  const std::vector<Tensor> ts = read_all(args.out_dir);
  ASSERT_EQ(find(ts, "lm_head.weight").spec.dtype, DType::U32);  // quantized
  const std::string plain = tmp.file("plain");
  std::filesystem::create_directories(plain);
  write_all(plain, ts);
  nlohmann::json j = test::read_config(args.out_dir);
  ASSERT_TRUE(j["norm_head"].get<bool>());
  j["norm_head"] = false;
  test::write_config(plain, j);
  EXPECT_TRUE(prefill(args.out_dir) == prefill(plain));
}

}  // namespace
}  // namespace moex::model::engine
