// gather_qmm on CPU (MLX semantics, transpose=True): out[b] = x[lhs[b]] . W[rhs[b]]^T.
// Entries are grouped by expert; work units are (expert run, row tile) pairs, split across
// threads by cost, and inside a unit the tile's rows stay in cache while every entry of the
// run uses them (up to four entries per pass, which also share each block's unpacking), so
// each weight byte comes from memory once per call.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/parallel.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"

namespace moex::kernels {
namespace {

constexpr int64_t kTileBytes = 32 * 1024;  // packed bytes per row tile (L1/L2 resident)

struct GatherWorkspace {
  PreparedVectors x;
  std::vector<int64_t> order;      // batch entries sorted by (expert, entry)
  std::vector<int64_t> run_start;  // start of each expert run in `order`, plus the end
  std::vector<int64_t> unit_cost;  // prefix sums of unit costs (rows x entries)
};

GatherWorkspace& workspace() {
  thread_local GatherWorkspace ws;
  return ws;
}

}  // namespace

void gather_qmm(const GatherQmmArgs& a) {
  const QuantWeightsView& w = *a.w;
  if (a.batch <= 0 || w.n <= 0) return;
  const QdotKernel& kern =
      qdot_kernel(active_isa(), w, a.exact ? Precision::kExact : active_precision());
  GatherWorkspace& ws = workspace();
  ws.x.prepare(kern, a.x, a.x_rows, w.k, w.k, w.group_size);

  auto expert_of = [&](int64_t b) -> int64_t { return a.rhs_indices[b]; };
  auto x_row_of = [&](int64_t b) -> int64_t { return a.lhs_indices ? a.lhs_indices[b] : b; };
  ws.order.resize(size_t(a.batch));
  std::iota(ws.order.begin(), ws.order.end(), int64_t{0});
  // The fallback MoE path passes pairs already sorted by expert (as mlx-lm's SwitchGLU does):
  // a linear check then replaces the second sort.
  if (!std::is_sorted(a.rhs_indices, a.rhs_indices + a.batch))
    std::stable_sort(ws.order.begin(), ws.order.end(),
                     [&](int64_t p, int64_t q) { return expert_of(p) < expert_of(q); });
  ws.run_start.clear();
  for (int64_t i = 0; i < a.batch; ++i)
    if (i == 0 || expert_of(ws.order[size_t(i)]) != expert_of(ws.order[size_t(i - 1)]))
      ws.run_start.push_back(i);
  ws.run_start.push_back(a.batch);
  const int64_t runs = int64_t(ws.run_start.size()) - 1;

  const int64_t row_bytes = w.k * w.bits / 8;
  // At least 4 rows per tile, at most all of them (a 1-row shared-expert gate has fewer than
  // 4: std::clamp(v, 4, n) with n < 4 was undefined behaviour).
  const int64_t tile = std::min(w.n, std::max<int64_t>(kTileBytes / row_bytes / 4 * 4, 4));
  const int64_t tiles = (w.n + tile - 1) / tile;
  ws.unit_cost.assign(size_t(runs * tiles + 1), 0);
  for (int64_t r = 0; r < runs; ++r) {
    const int64_t entries = ws.run_start[size_t(r + 1)] - ws.run_start[size_t(r)];
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t u = r * tiles + t, rows = std::min(tile, w.n - t * tile);
      ws.unit_cost[size_t(u + 1)] = ws.unit_cost[size_t(u)] + rows * entries;
    }
  }
  const int64_t total = ws.unit_cost.back();
  const int nt = num_threads();

  // Thread t runs the units whose cost starts in [total*t/nt, total*(t+1)/nt).
  parallel_for(nt, [&](int64_t lo, int64_t hi) {
    const auto begin = ws.unit_cost.begin(), last = ws.unit_cost.end() - 1;
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t c0 = total * t / nt, c1 = total * (t + 1) / nt;
      int64_t u = std::lower_bound(begin, last, c0) - begin;
      const int64_t u_end = [&] {
        int64_t v = u;
        while (v < runs * tiles && ws.unit_cost[size_t(v)] < c1) ++v;
        return v;
      }();
      while (u < u_end) {
        const int64_t r = u / tiles, r0 = (u % tiles) * tile;
        const int64_t i0 = ws.run_start[size_t(r)], i1 = ws.run_start[size_t(r + 1)];
        // A run of one entry reuses nothing: its consecutive tiles on this thread become one
        // call (one prefetch stream instead of one per tile). Several entries go tile by tile
        // so that each tile stays in cache while every entry reads it.
        int64_t u1 = u + 1;
        if (i1 - i0 == 1)
          while (u1 < u_end && u1 / tiles == r) ++u1;
        const int64_t r1 = std::min(w.n, ((u1 - 1) % tiles) * tile + tile);
        // Up to kQdotMaxVectors entries per pass over the tile: the kernel unpacks each weight
        // block once for all of them (bit-identical to one entry at a time).
        for (int64_t i = i0; i < i1; i += kQdotMaxVectors) {
          const int nx = int(std::min<int64_t>(kQdotMaxVectors, i1 - i));
          const void* xs[kQdotMaxVectors];
          float* outs[kQdotMaxVectors];
          for (int j = 0; j < nx; ++j) {
            const int64_t b = ws.order[size_t(i + j)];
            xs[j] = ws.x.at(x_row_of(b));
            outs[j] = a.out + b * w.n + r0;
          }
          qdot_rows_multi(kern, {&w, expert_of(ws.order[size_t(i)]), r0, r1, xs, outs, nx});
        }
        u = u1;
      }
    }
  });
}

}  // namespace moex::kernels
