// The fused decode-MoE path on CPU (docs/background.md §1): stage A over all (expert, Dff row) pairs,
// stage B over all (expert, Din row) pairs with the f32 K-sum, one parallel region each. Each
// output value is produced by exactly one kernel call whose arithmetic does not depend on the
// split, so the result is bit-identical for any thread count.
#include "core/parallel.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"

namespace moex::kernels {
namespace {

// Gate/up rows per kernel call in stage A (stack scratch). Each call starts a new stream
// whose first prefetch distance is fetched on demand: 512 rows instead of 64 measured +3-9%
// at 1 thread (Qwen3 layer, huge pages, 2026-11-29).
constexpr int64_t kSubRows = 512;

struct FusedWorkspace {
  PreparedVectors x_up, x_gate;
};

FusedWorkspace& workspace() {
  thread_local FusedWorkspace ws;
  return ws;
}

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// v[i] += bias[i]: one f32 addition per value, as the fallback path does after gather_qmm.
inline void add_row_bias(float* v, const float* bias, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] += bias[i];
}

}  // namespace

void moe_decode_fused(const FusedDecodeArgs& a) {
  const MoeExpertsView& ex = *a.experts;
  const Isa isa = active_isa();
  const bool has_gate = ex.act != Activation::kSquaredReLU;
  const QdotKernel& k_up = qdot_kernel(isa, ex.up);
  const QdotKernel& k_gate = qdot_kernel(isa, has_gate ? ex.gate : ex.up);
  const QdotKernel& k_down = qdot_kernel(isa, ex.down);
  const ActSpanFn act_fn = act_span_fn(isa);
  const int64_t din = ex.din(), dff = ex.dff(), top_k = a.top_k;
  if (top_k <= 0 || din <= 0) return;
  FusedWorkspace& ws = workspace();

  // x is prepared once and shared by gate and up when their formats agree.
  ws.x_up.prepare(k_up, a.x, 1, din, din, ex.up.group_size);
  const bool share = !has_gate || (&k_gate == &k_up && ex.gate.group_size == ex.up.group_size);
  if (!share) ws.x_gate.prepare(k_gate, a.x, 1, din, din, ex.gate.group_size);
  const void* xu = ws.x_up.at(0);
  const void* xg = share ? xu : ws.x_gate.at(0);

  // Stage A: act[k][f] = act(gate_k(x)[f], up_k(x)[f]).
  parallel_for(top_k * dff, [&](int64_t lo, int64_t hi) {
    alignas(64) float g[kSubRows], u[kSubRows];
    for (int64_t i = lo; i < hi;) {
      const int64_t k = i / dff, f0 = i % dff;
      const int64_t f1 = min64(dff, f0 + min64(hi - i, kSubRows));
      const int64_t e = a.expert_ids[k];
      if (has_gate) k_gate.dot_rows({&ex.gate, e, f0, f1, xg, g});
      k_up.dot_rows({&ex.up, e, f0, f1, xu, u});
      if (has_gate && ex.gate_bias) add_row_bias(g, ex.gate_bias + e * dff + f0, f1 - f0);
      if (ex.up_bias) add_row_bias(u, ex.up_bias + e * dff + f0, f1 - f0);
      act_fn(ex.act, g, u, a.act + k * dff + f0, f1 - f0);
      i += f1 - f0;
    }
  });

  // Stage B: partials[k][h] = score_k * down_k(act[k])[h], then out[h] = sum over k in order
  // in f32 (the same additions as weighted_sum). Threads split the output rows h and run all
  // experts for them, so each sums only partials it wrote itself: no barrier between the two.
  // Each thread prepares the K act vectors itself (a few microseconds, cheaper than a join).
  parallel_for(din, [&](int64_t h0, int64_t h1) {
    static thread_local PreparedVectors acts;
    acts.prepare(k_down, a.act, top_k, dff, dff, ex.down.group_size, /*threaded=*/false);
    for (int64_t k = 0; k < top_k; ++k) {
      float* p = a.partials + k * din;
      k_down.dot_rows({&ex.down, a.expert_ids[k], h0, h1, acts.at(k), p + h0});
      if (ex.down_bias) add_row_bias(p + h0, ex.down_bias + a.expert_ids[k] * din + h0, h1 - h0);
      const float s = a.scores[k];
      for (int64_t h = h0; h < h1; ++h) p[h] *= s;
    }
    for (int64_t h = h0; h < h1; ++h) {
      float acc = 0.f;
      for (int64_t k = 0; k < top_k; ++k) acc += a.partials[k * din + h];
      a.out[h] = acc;
    }
  });
}

}  // namespace moex::kernels
