// gather_qmm on every instruction set vs per-entry scalar reference dots: decode (one x row,
// repeated experts), prefill (M tokens x K experts, sorted and unsorted expert ids, shuffled
// x rows), every bit width, canaries after the output, thread-count invariance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/parallel.h"
#include "kernels/kernels_test_util.h"
#include "quant/format.h"

namespace moex::kernels {
namespace {

using testing::make_random_quant;
using testing::random_normal;

struct Problem {
  testing::RandomQuant w;
  std::vector<float> x;
  int64_t x_rows = 0;
  std::vector<int32_t> lhs, rhs;  // lhs empty: nullptr (entry b uses x row b)
};

std::vector<float> run_gather(const Problem& p) {
  const int64_t batch = int64_t(p.rhs.size()), n = p.w.view.n;
  std::vector<float> out(size_t(batch * n + 16), -777.f);
  GatherQmmArgs a;
  a.x = p.x.data();
  a.x_rows = p.x_rows;
  a.w = &p.w.view;
  a.lhs_indices = p.lhs.empty() ? nullptr : p.lhs.data();
  a.rhs_indices = p.rhs.data();
  a.batch = batch;
  a.out = out.data();
  gather_qmm(a);
  for (size_t i = size_t(batch * n); i < out.size(); ++i) EXPECT_EQ(out[i], -777.f) << "canary";
  out.resize(size_t(batch * n));
  return out;
}

// Every entry and row against the scalar reference kernel, within the data-derived bound.
void check_against_scalar(const Problem& p, const std::vector<float>& got) {
  const QuantWeightsView& w = p.w.view;
  const QdotKernel& ref = qdot_kernel(Isa::kScalar, w);
  const QdotKernel& used = qdot_kernel(active_isa(), w);
  for (size_t b = 0; b < p.rhs.size(); ++b) {
    const float* x = p.x.data() + (p.lhs.empty() ? int64_t(b) : p.lhs[b]) * w.k;
    PreparedVectors px;
    px.prepare(ref, x, 1, w.k, w.k, w.group_size);
    std::vector<float> want(size_t(w.n));
    ref.dot_rows({&w, p.rhs[b], 0, w.n, px.at(0), want.data()});
    for (int64_t r = 0; r < w.n; ++r) {
      const double bound = testing::qdot_error_bound(used, w, p.rhs[b], r, x);
      ASSERT_LE(std::fabs(double(got[b * size_t(w.n) + size_t(r)]) - want[size_t(r)]), bound)
          << "entry " << b << " expert " << p.rhs[b] << " row " << r;
    }
  }
}

using testing::IsaGuard;

TEST(GatherQmm, DecodeEveryBitWidth) {
  IsaGuard guard;
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (int bits : quant::kValidBits) {
      SCOPED_TRACE(
          gather_qmm_name({nullptr, nullptr, nullptr, DType::BF16, 0, 0, 0, bits, 64}, isa));
      Problem p;
      p.w = make_random_quant(9, 70, 320, bits, 64, DType::BF16, uint64_t(bits));
      p.x = random_normal(320, 1.f, 2);
      p.x_rows = 1;
      p.lhs.assign(8, 0);
      p.rhs = {3, 1, 4, 1, 5, 8, 2, 6};  // expert 1 twice
      check_against_scalar(p, run_gather(p));
    }
  }
}

TEST(GatherQmm, PrefillSortedAndUnsorted) {
  IsaGuard guard;
  const int64_t m = 37, top_k = 4, experts = 6, k = 384;
  std::mt19937_64 rng(11);
  Problem p;
  p.w = make_random_quant(experts, 90, k, 4, 128, DType::F16, 12);
  p.x = random_normal(m * k, 1.f, 13);
  p.x_rows = m;
  for (int64_t b = 0; b < m * top_k; ++b) {
    p.lhs.push_back(int32_t(b / top_k));
    p.rhs.push_back(int32_t(rng() % experts));
  }
  Problem sorted = p;  // MLX's sorted-indices form: entries ordered by expert
  std::vector<size_t> order(p.rhs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.rhs[a] < p.rhs[b]; });
  for (size_t i = 0; i < order.size(); ++i) {
    sorted.lhs[i] = p.lhs[order[i]];
    sorted.rhs[i] = p.rhs[order[i]];
  }
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    SCOPED_TRACE(gather_qmm_name(p.w.view, isa));
    set_num_threads(2);
    const auto got = run_gather(p);
    check_against_scalar(p, got);
    const auto got_sorted = run_gather(sorted);
    check_against_scalar(sorted, got_sorted);
    for (size_t i = 0; i < order.size(); ++i)  // same entry, same bits, wherever it sits
      ASSERT_EQ(0, std::memcmp(&got_sorted[i * 90], &got[order[i] * 90], 90 * 4)) << "entry " << i;
    for (int threads : {1, 3}) {
      set_num_threads(threads);
      const auto again = run_gather(p);
      EXPECT_EQ(0, std::memcmp(again.data(), got.data(), got.size() * 4)) << "threads " << threads;
    }
  }
}

// Rows spanning several 32 KB tiles (k = 2048 at 8 bits: 16-row tiles, n = 70: 5 tiles, a
// 6-row tail): a one-entry run's consecutive tiles on a thread become one kernel call, a
// repeated expert goes tile by tile. Either way every row matches the scalar reference and the
// bits do not depend on the thread count.
TEST(GatherQmm, MultiTileRunsAtEveryThreadCount) {
  IsaGuard guard;
  Problem p;
  p.w = make_random_quant(6, 70, 2048, 8, 64, DType::BF16, 31);
  p.x = random_normal(2048, 1.f, 32);
  p.x_rows = 1;
  p.lhs.assign(5, 0);
  p.rhs = {4, 0, 2, 0, 5};  // expert 0 twice
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    SCOPED_TRACE(gather_qmm_name(p.w.view, isa));
    set_num_threads(1);
    const auto one = run_gather(p);
    check_against_scalar(p, one);
    for (int threads : {2, 3}) {
      set_num_threads(threads);
      const auto again = run_gather(p);
      EXPECT_EQ(0, std::memcmp(again.data(), one.data(), one.size() * 4)) << "threads " << threads;
    }
  }
}

TEST(GatherQmm, NullLhsMeansEntryIndexAndTails) {
  IsaGuard guard;
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (int bits : {3, 6}) {
      Problem p;
      p.w = make_random_quant(3, 13, 96, bits, 32, DType::F32, 21);
      p.x = random_normal(5 * 96, 1.f, 22);
      p.x_rows = 5;
      p.rhs = {2, 0, 2, 1, 0};
      check_against_scalar(p, run_gather(p));
    }
  }
}

// Fewer than 4 output rows (Qwen2-MoE's 1-row shared-expert gate): the row tile is all of them.
// (std::clamp(v, 4, n) with n < 4 was undefined; the -D_GLIBCXX_ASSERTIONS build aborted here.)
TEST(GatherQmm, FewerRowsThanATile) {
  IsaGuard guard;
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    for (int64_t n : {1, 2, 3, 5}) {
      SCOPED_TRACE(n);
      Problem p;
      p.w = make_random_quant(2, n, 128, 8, 64, DType::BF16, uint64_t(30 + n));
      p.x = random_normal(2 * 128, 1.f, 31);
      p.x_rows = 2;
      p.lhs = {0, 1, 1};
      p.rhs = {1, 0, 1};
      check_against_scalar(p, run_gather(p));
    }
  }
}

}  // namespace
}  // namespace moex::kernels
