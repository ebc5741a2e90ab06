// Bytes read per decoded token, against a hand computation for tiny-qwen3-moe and for a
// tied-embedding model; per-expert layouts count like stacked ones.
#include <gtest/gtest.h>

#include "model/checkpoint_plan.h"
#include "model/presets.h"
#include "model/weight_bytes.h"

namespace moex::model {
namespace {

// A [out, in] matrix at `bits`, group 64, bf16 scales + biases: packed bytes + 2 x 2 bytes
// per group of 64.
constexpr int64_t qbytes(int64_t out, int64_t in, int bits) {
  return out * in * bits / 8 + 2 * out * (in / 64) * 2;
}

TEST(WeightBytes, TinyQwen3MoeByHand) {
  // hidden 256, vocab 1024, 3 layers (0 dense 512, 1-2 MoE 8 x 128 top-4), 4 heads x 64,
  // 2 kv heads, untied head; 4-bit g64 with an 8-bit router, bf16.
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-qwen3-moe"), 0, {}, DType::BF16);
  const WeightBytes b = compute_weight_bytes(plan.config, plan.tensors);
  const int64_t embed = qbytes(1024, 256, 4);                   // 147456
  const int64_t lm_head = qbytes(1024, 256, 4);
  const int64_t attn = qbytes(256, 256, 4) * 2 + qbytes(128, 256, 4) * 2;  // q, o, k, v
  const int64_t norms = 2 * 256 * 2 + 2 * 64 * 2;               // layer norms + q/k norms
  const int64_t dense = 3 * qbytes(512, 256, 4);
  const int64_t router = qbytes(8, 256, 8);
  const int64_t experts = 3 * qbytes(8 * 128, 256, 4);          // gate, up, down: 8 x 128 x 256 each
  const int64_t final_norm = 256 * 2;
  EXPECT_EQ(b.embedding_row, embed / 1024);                     // 144
  EXPECT_EQ(b.lm_head, lm_head);
  EXPECT_EQ(b.non_expert, 3 * (attn + norms) + dense + 2 * router + final_norm);
  EXPECT_EQ(b.experts_total, 2 * experts);
  EXPECT_EQ(b.routed_experts, 2 * experts * 4 / 8);
  EXPECT_EQ(b.shared_experts, 0);
  EXPECT_EQ(b.per_token, embed / 1024 + lm_head + 3 * (attn + norms) + dense + 2 * router +
                             final_norm + 2 * experts / 2);
  EXPECT_EQ(b.per_token, 1151632);
  EXPECT_EQ(b.total, embed + lm_head + 3 * (attn + norms) + dense + 2 * router + final_norm + 2 * experts);
}

TEST(WeightBytes, TiedEmbeddingIsReadFullyAsTheHead) {
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-lfm2-moe"), 0, {}, DType::BF16);
  ASSERT_TRUE(plan.config.tie_word_embeddings);
  const WeightBytes b = compute_weight_bytes(plan.config, plan.tensors);
  EXPECT_EQ(b.lm_head, qbytes(1024, 256, 4));
  EXPECT_EQ(b.embedding_row, qbytes(1024, 256, 4) / 1024);
  EXPECT_EQ(b.total, plan.total_bytes());
}

TEST(WeightBytes, SharedExpertCountsFullyAndPerExpertLayoutLikeStacked) {
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("tiny-qwen2-moe"), 0, {}, DType::BF16);
  const WeightBytes b = compute_weight_bytes(plan.config, plan.tensors);
  // 2 layers x (shared gate/up/down 512 wide + the 1-row gate).
  EXPECT_EQ(b.shared_experts, 2 * (3 * qbytes(512, 256, 4) + qbytes(1, 256, 4)));
  // Split every stacked expert tensor into 8 per-expert records: the same per-token bytes.
  std::vector<TensorRecord> split;
  for (const TensorRecord& t : plan.tensors) {
    if (t.role != TensorRole::kExperts) {
      split.push_back(t);
      continue;
    }
    for (int64_t e = 0; e < t.shape[0]; ++e) {
      TensorRecord r = t;
      r.shape.erase(r.shape.begin());
      r.num_experts = 1;
      split.push_back(r);
    }
  }
  const WeightBytes s = compute_weight_bytes(plan.config, split);
  EXPECT_EQ(s.per_token, b.per_token);
  EXPECT_EQ(s.total, b.total);
}

TEST(WeightBytes, FullQwen3ShapeIsAbout1p7GBPerToken) {
  // docs/background.md §5: about 1.76 GB read per token at 4.5 bits per weight (llama.cpp).
  const CheckpointPlan plan = plan_preset_checkpoint(*find_preset("qwen3-30b-a3b"), 0, {}, DType::BF16);
  const WeightBytes b = compute_weight_bytes(plan.config, plan.tensors);
  EXPECT_GT(b.per_token, int64_t(1.5e9));
  EXPECT_LT(b.per_token, int64_t(1.9e9));
  EXPECT_GT(b.total, int64_t(16e9));
  EXPECT_LT(b.total, int64_t(18e9));
}

}  // namespace
}  // namespace moex::model
