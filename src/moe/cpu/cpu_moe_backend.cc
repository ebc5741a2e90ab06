// The CPU implementation of MoeBackend: the fused decode kernel and mlx-lm's SwitchGLU
// fallback composed from moex_kernels' gather_qmm, activation and weighted sum (each op
// writing its intermediate, as MLX runs it), on host memory.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/moe_kernels.h"
#include "moe/moe_backend.h"

namespace moex::moe {
namespace {

using kernels::MoeExpertsView;
using kernels::QuantWeightsView;

// On the CPU the prepared experts are the host views.
class HostExperts final : public PreparedExperts {
 public:
  explicit HostExperts(const MoeExpertsView& v) : PreparedExperts(v) {}
};

void gather(const QuantWeightsView& w, const float* x, int64_t x_rows, const int32_t* lhs,
            const int32_t* rhs, int64_t batch, float* out) {
  kernels::GatherQmmArgs a;
  a.x = x;
  a.x_rows = x_rows;
  a.w = &w;
  a.lhs_indices = lhs;
  a.rhs_indices = rhs;
  a.batch = batch;
  a.out = out;
  kernels::gather_qmm(a);
}

// out[i][:] += bias[rhs[i]][:] (mlx-lm SwitchLinear: the bias of each pair's expert), when the
// layer has that bias.
void add_expert_bias(float* out, const float* bias, const int32_t* rhs, int64_t pairs, int64_t n) {
  if (!bias) return;
  for (int64_t i = 0; i < pairs; ++i) {
    const float* b = bias + int64_t(rhs[i]) * n;
    float* o = out + i * n;
    for (int64_t j = 0; j < n; ++j) o[j] += b[j];
  }
}

class CpuMoeBackend final : public MoeBackend {
 public:
  Backend kind() const override { return Backend::kCpu; }
  CalibrationKey calibration_key() const override { return host_cpu_calibration_key(); }

  std::unique_ptr<PreparedExperts> prepare(const MoeExpertsView& experts,
                                           const char* /*what*/) const override {
    return std::make_unique<HostExperts>(experts);
  }

  // Not a device: the experts are the host views themselves.
  std::optional<int64_t> device_free_bytes() const override { return std::nullopt; }

  // The CPU fused kernel runs every format the fallback runs.
  bool has_fused_kernel(const PreparedExperts& /*experts*/) const override { return true; }

  void fused(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& ws) const override {
    const MoeExpertsView& ex = p.host();
    const int64_t din = ex.din();
    kernels::FusedDecodeArgs a;
    a.experts = &ex;
    a.top_k = c.top_k;
    a.act = ws.floats(kSlotGateOut, c.top_k * ex.dff());
    a.partials = ws.floats(kSlotUpOut, c.top_k * din);
    for (int64_t t = 0; t < c.tokens; ++t) {
      a.x = c.x + t * din;
      a.expert_ids = c.expert_ids + t * c.top_k;
      a.scores = c.scores + t * c.top_k;
      a.out = c.out + t * din;
      kernels::moe_decode_fused(a);
    }
  }

  void fallback(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& ws) const override;
};

void CpuMoeBackend::fallback(const PreparedExperts& p, const RoutedCall& c,
                             MoeWorkspace& ws) const {
  const MoeExpertsView& ex = p.host();
  const int64_t m = c.tokens, k = c.top_k, pairs = m * k;
  const int64_t din = ex.din(), dff = ex.dff(), experts = ex.up.experts;
  const int32_t* ids = c.expert_ids;
  const bool sorted = pairs >= kSortPairsThreshold;
  int32_t* lhs = ws.ints(kSlotLhs, pairs);
  const int32_t* rhs = ids;
  int32_t* order = nullptr;
  if (sorted) {
    // Stable counting sort of the pairs by expert: the order of MLX's argsort (stable, ties by
    // position). order[i] = the pair at sorted position i.
    int32_t* counts = ws.ints(kSlotCounts, experts + 1);
    std::fill(counts, counts + experts + 1, 0);
    for (int64_t q = 0; q < pairs; ++q) ++counts[ids[q] + 1];
    for (int64_t e = 0; e < experts; ++e) counts[e + 1] += counts[e];
    order = ws.ints(kSlotOrder, pairs);
    for (int64_t q = 0; q < pairs; ++q) order[counts[ids[q]]++] = int32_t(q);
    int32_t* rhs_sorted = ws.ints(kSlotRhs, pairs);
    for (int64_t i = 0; i < pairs; ++i) {
      rhs_sorted[i] = ids[order[i]];
      lhs[i] = int32_t(order[i] / k);
    }
    rhs = rhs_sorted;
  } else {
    for (int64_t q = 0; q < pairs; ++q) lhs[q] = int32_t(q / k);
  }

  float* up_out = ws.floats(kSlotUpOut, pairs * dff);
  gather(ex.up, c.x, m, lhs, rhs, pairs, up_out);
  add_expert_bias(up_out, ex.up_bias, rhs, pairs, dff);
  float* gate_out = nullptr;
  if (ex.act != kernels::Activation::kSquaredReLU) {
    gate_out = ws.floats(kSlotGateOut, pairs * dff);
    gather(ex.gate, c.x, m, lhs, rhs, pairs, gate_out);
    add_expert_bias(gate_out, ex.gate_bias, rhs, pairs, dff);
  }
  kernels::ActivationArgs act;
  act.act = ex.act;
  act.gate = gate_out;
  act.up = up_out;
  act.rows = pairs;
  act.n = dff;
  act.out = up_out;
  kernels::apply_activation(act);

  float* y = ws.floats(kSlotDownOut, pairs * din);
  gather(ex.down, up_out, pairs, nullptr, rhs, pairs, y);
  add_expert_bias(y, ex.down_bias, rhs, pairs, din);
  if (sorted) {  // scatter back to (token, k) order
    float* unsorted = ws.floats(kSlotUnsorted, pairs * din);
    parallel_for(pairs, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        std::memcpy(unsorted + int64_t(order[i]) * din, y + i * din, size_t(din) * sizeof(float));
    });
    y = unsorted;
  }
  kernels::WeightedSumArgs sum;
  sum.y = y;
  sum.scores = c.scores;
  sum.tokens = m;
  sum.top_k = int(k);
  sum.n = din;
  sum.out = c.out;
  kernels::weighted_sum(sum);
}

}  // namespace

const MoeBackend& cpu_moe_backend() {
  static const CpuMoeBackend backend;
  return backend;
}

}  // namespace moex::moe
