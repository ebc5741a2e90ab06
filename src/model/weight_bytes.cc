// Weight-byte accounting per decoded token (see weight_bytes.h for what is counted).
#include "model/weight_bytes.h"

#include <cstdio>

#include "core/error.h"

namespace moex::model {

WeightBytes compute_weight_bytes(const ModelConfig& cfg, const std::vector<TensorRecord>& tensors) {
  WeightBytes b;
  for (const TensorRecord& t : tensors) {
    const int64_t n = t.bytes();
    b.total += n;
    switch (t.role) {
      case TensorRole::kEmbedding: {
        const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
        if (rows > 0) b.embedding_row += n / rows;
        if (cfg.tie_word_embeddings) b.lm_head += n;
        break;
      }
      case TensorRole::kLmHead: b.lm_head += n; break;
      case TensorRole::kExperts: b.experts_total += n; break;
      case TensorRole::kSharedExpert:
      case TensorRole::kSharedExpertGate: b.shared_experts += n; break;
      default: b.non_expert += n; break;
    }
  }
  if (b.experts_total > 0) {
    if (cfg.moe.num_experts <= 0) fail(cfg.source, ": expert tensors but no experts in the config");
    b.routed_experts = b.experts_total / cfg.moe.num_experts * cfg.moe.top_k +
                       b.experts_total % cfg.moe.num_experts * cfg.moe.top_k / cfg.moe.num_experts;
  }
  b.per_token = b.embedding_row + b.lm_head + b.non_expert + b.routed_experts + b.shared_experts;
  return b;
}

std::string human_bytes(int64_t n) {
  char buf[64];
  const double d = double(n);
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.3f GB", d / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f MB", d / 1e6);
  else if (n >= 1000)
    std::snprintf(buf, sizeof buf, "%.1f KB", d / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  return buf;
}

std::string format_weight_bytes(const WeightBytes& b) {
  std::string s;
  s += str_cat("total weights:         ", human_bytes(b.total), " (", b.total, " bytes)\n");
  s += str_cat("routed experts (all):  ", human_bytes(b.experts_total), "\n");
  s += str_cat("read per token:        ", human_bytes(b.per_token), " (", b.per_token, " bytes)\n");
  s += str_cat("  embedding row:       ", human_bytes(b.embedding_row), "\n");
  s += str_cat("  lm head:             ", human_bytes(b.lm_head), "\n");
  s += str_cat("  non-expert layers:   ", human_bytes(b.non_expert), "\n");
  s += str_cat("  routed experts:      ", human_bytes(b.routed_experts), "\n");
  s += str_cat("  shared experts:      ", human_bytes(b.shared_experts), "\n");
  return s;
}

}  // namespace moex::model
