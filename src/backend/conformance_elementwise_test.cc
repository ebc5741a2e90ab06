// Conformance cases of the elementwise ops: the residual stream's (stream_ops), swiglu,
// gated_activation (every kind), gated_rms_norm (both gate orders) and causal_conv_silu.
// Bound: bit equality for the stream ops; for the others the activation kernels' own
// (kernels_test_util.h activation_error_bound), propagated through what follows it.
#include <algorithm>
#include <utility>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "kernels/kernels_test_util.h"
#include "backend/conformance.h"

namespace moex::backend::conformance {
namespace {

using kernels::Activation;
using kernels::testing::activation_error_bound;

void add_activation(std::vector<Case>& cases, Activation act, bool via_swiglu, int64_t n,
                    uint64_t seed) {
  auto g = std::make_shared<std::vector<float>>(random_vec(n, seed, -9.f, 9.f));
  auto u = std::make_shared<std::vector<float>>(random_vec(n, seed + 1, -9.f, 9.f));
  Case c;
  c.id = std::string(via_swiglu ? "swiglu" : "gated_activation") + "/" +
         kernels::activation_name(act) + "/n=" + std::to_string(n);
  c.parts = {n};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    if (via_swiglu)
      b.swiglu(st(*g), st(*u), outs[0], n);
    else
      b.gated_activation(act, st(*g), st(*u), outs[0], n);
  };
  if (act == Activation::kSwiGLU) {
    c.bound = shared_code(n);
    c.rule = "bit-equal: ops::swiglu is compiled once for every ISA";
  } else {
    c.bound = [=](Isa) {
      std::vector<double> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(activation_error_bound(act, (*g)[i], (*u)[i]));
      return v;
    };
    c.rule = "activation_error_bound, per side";
  }
  cases.push_back(std::move(c));
}

void add_gated_norm(std::vector<Case>& cases, ops::GateOrder order, int64_t rows, int64_t dim,
                    int64_t groups, uint64_t seed) {
  auto x = std::make_shared<std::vector<float>>(random_vec(rows * dim, seed, -3.f, 3.f));
  auto gate = std::make_shared<std::vector<float>>(random_vec(rows * dim, seed + 1, -6.f, 6.f));
  auto w = std::make_shared<std::vector<float>>(random_vec(dim, seed + 2));
  const bool norm_first = order == ops::GateOrder::kNormThenGate;
  const float eps = 1e-6f;
  Case c;
  c.id = std::string("gated_rms_norm/") + (norm_first ? "norm_then_gate" : "gate_then_norm") +
         "/rows=" + std::to_string(rows) + ",dim=" + std::to_string(dim) +
         ",groups=" + std::to_string(groups);
  c.parts = {rows * dim};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    b.gated_rms_norm({.order = order,
                      .x = st(*x),
                      .gate = st(*gate),
                      .weight = st(*w),
                      .out = outs[0],
                      .rows = rows,
                      .dim = dim,
                      .groups = groups,
                      .eps = eps});
  };
  // Norm then gate: the norm's bits are shared, only silu(gate) * normed differs. Gate then
  // norm: each y = silu(g) x moves by e_i, the group's rms by sum |y| e / (m rms), and the
  // norm then rounds different inputs ((m + 5) u of each output).
  c.bound = [=](Isa) {
    std::vector<double> v(size_t(rows * dim));
    const int64_t m = dim / groups;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g0 = 0; g0 < dim; g0 += m) {
        const float* xr = x->data() + r * dim + g0;
        const float* gr = gate->data() + r * dim + g0;
        double ss = 0, moved = 0;
        std::vector<double> y(static_cast<size_t>(m)), e(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) {
          const double s = gr[i] / (1.0 + std::exp(-double(gr[i])));
          y[size_t(i)] = norm_first ? xr[i] : s * xr[i];
          ss += y[size_t(i)] * y[size_t(i)];
        }
        const double rms = std::sqrt(ss / double(m) + eps);
        for (int64_t i = 0; i < m; ++i) {
          const double normed = (*w)[size_t(g0 + i)] * y[size_t(i)] / rms;
          if (norm_first) {
            v[size_t(r * dim + g0 + i)] =
                activation_error_bound(Activation::kSwiGLU, gr[i], normed);
            continue;
          }
          e[size_t(i)] = activation_error_bound(Activation::kSwiGLU, gr[i], xr[i]);
          moved += std::fabs(y[size_t(i)]) * e[size_t(i)];
        }
        if (norm_first) continue;
        const double rel = moved / (double(m) * rms * rms);
        for (int64_t i = 0; i < m; ++i) {
          const double out = std::fabs((*w)[size_t(g0 + i)] * y[size_t(i)] / rms);
          v[size_t(r * dim + g0 + i)] = std::fabs((*w)[size_t(g0 + i)]) * e[size_t(i)] / rms +
                                        out * (rel + double(m + 5) * kU);
        }
      }
    return v;
  };
  c.rule = "activation_error_bound through the norm, per side";
  cases.push_back(std::move(c));
}

void add_conv(std::vector<Case>& cases, int64_t steps, int64_t channels, int64_t taps, bool bias,
              uint64_t seed) {
  auto x = std::make_shared<std::vector<float>>(random_vec((taps - 1 + steps) * channels, seed));
  auto w = std::make_shared<std::vector<float>>(random_vec(taps * channels, seed + 1));
  auto bs = std::make_shared<std::vector<float>>(random_vec(channels, seed + 2));
  Case c;
  c.id = "causal_conv_silu/f32/steps=" + std::to_string(steps) +
         ",channels=" + std::to_string(channels) + ",taps=" + std::to_string(taps) +
         (bias ? ",bias" : "");
  c.parts = {steps * channels};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    b.causal_conv_silu({.x = st(*x),
                        .w = st(*w),
                        .bias = bias ? st(*bs) : nullptr,
                        .out = outs[0],
                        .steps = steps,
                        .channels = channels,
                        .taps = taps});
  };
  // The sums are the same bits at every ISA (ops/causal_conv.h); SiLU's exp is not.
  c.bound = [=](Isa) {
    std::vector<double> v;
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t ch = 0; ch < channels; ++ch) {
        double acc = bias ? (*bs)[size_t(ch)] : 0.0;
        for (int64_t j = 0; j < taps; ++j)
          acc += double((*w)[size_t(j * channels + ch)]) * (*x)[size_t((t + j) * channels + ch)];
        v.push_back(activation_error_bound(Activation::kSwiGLU, acc, 1.0));
      }
    return v;
  };
  c.rule = "sums bit-equal; activation_error_bound of SiLU, per side";
  cases.push_back(std::move(c));
}

// The residual stream's ops (ops/stream_ops.h): compiled once for every ISA, so bit-equal.
// In-place ops start from a copy of their input in the output buffer.
void add_stream_cases(std::vector<Case>& cases, uint64_t seed) {
  const int64_t n = 1037;
  auto x = std::make_shared<std::vector<float>>(random_vec(n, seed, -30.f, 30.f));
  auto y = std::make_shared<std::vector<float>>(random_vec(n, seed + 1, -6.f, 6.f));
  auto add = [&](std::string id, std::vector<int64_t> parts,
                 std::function<void(const ModelBackend&, Stage&, float* const*)> run) {
    Case c;
    c.id = std::move(id);
    int64_t total = 0;
    for (int64_t p : parts) total += p;
    c.parts = std::move(parts);
    c.run = std::move(run);
    c.bound = shared_code(total);
    c.rule = "bit-equal: ops/stream_ops.cc is compiled once for every ISA";
    cases.push_back(std::move(c));
  };
  for (float scale : {1.f, 0.5f})
    add("add_scaled/scale=" + std::to_string(scale).substr(0, 3) + "/n=1037", {n},
        [=](const ModelBackend& b, Stage& st, float* const* o) {
          st.fill(o[0], *x);
          b.add_scaled(o[0], st(*y), n, scale);
        });
  add("scale/f32/n=1037", {n}, [=](const ModelBackend& b, Stage& st, float* const* o) {
    st.fill(o[0], *x);
    b.scale(o[0], n, 0.37f);
  });
  add("sigmoid_gate/f32/n=1037", {n}, [=](const ModelBackend& b, Stage& st, float* const* o) {
    st.fill(o[0], *x);
    b.sigmoid_gate(o[0], st(*y), n);
  });
  const struct { float divisor, cap; } softcaps[] = {{2.5f, 30.f}, {1.f, 15.f}, {8.f, 0.f}};
  for (const auto& sc : softcaps)
    add("divide_and_softcap/divisor=" + std::to_string(int(sc.divisor * 10)) +
            "e-1,cap=" + std::to_string(int(sc.cap)) + "/n=1037",
        {n}, [=](const ModelBackend& b, Stage& st, float* const* o) {
          st.fill(o[0], *x);
          b.divide_and_softcap(o[0], n, sc.divisor, sc.cap);
        });
  add("query_temperature/f32/rows=5,width=48,pos0=8190", {5 * 48},
      [=](const ModelBackend& b, Stage& st, float* const* o) {
        st.fill(o[0], *x, 5 * 48);
        b.query_temperature({.q = o[0], .rows = 5, .width = 48, .pos0 = 8190,
                             .floor_scale = 8192.f, .attn_scale = 0.1f});
      });
  add("split_halves/f32/rows=7,half=16", {7 * 16, 7 * 16},
      [=](const ModelBackend& b, Stage& st, float* const* o) { b.split_halves(st(*x), o[0], o[1], 7, 16); });
  add("copy/f32/n=1037", {n}, [=](const ModelBackend& b, Stage& st, float* const* o) { b.copy(o[0], st(*x), n); });
  // Columns 9..9+23 of 11 rows of stride 37 (x holds 1037 >= 11 * 37 floats), into stride 29.
  add("copy_columns/f32/rows=11,cols=23,src_stride=37,dst_stride=29", {11 * 29},
      [=](const ModelBackend& b, Stage& st, float* const* o) {
        b.copy_columns({.src = st(*x) + 9, .dst = o[0], .rows = 11, .cols = 23, .src_stride = 37,
                        .dst_stride = 29});
        b.copy_columns({.src = st(*y), .dst = o[0] + 23, .rows = 11, .cols = 6, .src_stride = 37,
                        .dst_stride = 29});
      });
  // Qwen3-Next's de-interleave: 4 blocks of 5 columns, 9 apart, from rows of stride 41 into
  // blocks 5 apart (a head's q out of its [q, k, v, z] group), and the last block of each row.
  add("copy_columns/f32/rows=6,blocks=4,cols=5,src_block_stride=9,dst_block_stride=5", {6 * 23},
      [=](const ModelBackend& b, Stage& st, float* const* o) {
        b.copy_columns({.src = st(*x) + 2, .dst = o[0], .rows = 6, .cols = 5, .src_stride = 41,
                        .dst_stride = 23, .blocks = 4, .src_block_stride = 9,
                        .dst_block_stride = 5});
        b.copy_columns({.src = st(*y) + 1, .dst = o[0] + 20, .rows = 6, .cols = 3,
                        .src_stride = 41, .dst_stride = 23});
      });
  // a from x in [-30, 30) (softplus's both branches), b from y; A = -exp(A_log) with A_log
  // spanning [-6, 6), so the decay runs from ~1 down to underflow.
  auto neg_a = std::make_shared<std::vector<float>>(*y);
  for (float& v : *neg_a) v = -std::exp(v);
  add("delta_gates/f32/rows=7,heads=32", {7 * 32, 7 * 32},
      [=](const ModelBackend& b, Stage& st, float* const* o) {
        st.fill(o[0], *x, 7 * 32);
        st.fill(o[1], *y, 7 * 32);
        b.delta_gates({.a = o[0], .b = o[1], .neg_exp_a_log = st(*neg_a) + 500,
                       .dt_bias = st(*x) + 700, .rows = 7, .heads = 32});
      });
  // x spans [-30, 30): softplus's both branches, and the clamp at both ends.
  for (const auto& lim : {std::pair{0.f, 1e30f}, std::pair{1e-3f, 4.f}})
    add("dt_softplus/f32/rows=9,heads=32,x_stride=110,lo=" + std::to_string(lim.first).substr(0, 5) +
            ",hi=" + std::to_string(int(std::min(lim.second, 1e9f))),
        {9 * 32}, [=](const ModelBackend& b, Stage& st, float* const* o) {
          b.dt_softplus({.x = st(*x) + 3, .bias = st(*y), .out = o[0], .rows = 9, .heads = 32,
                         .x_stride = 110, .lo = lim.first, .hi = lim.second});
        });
}

}  // namespace

void add_elementwise_cases(std::vector<Case>& cases) {
  add_stream_cases(cases, 1500);
  add_activation(cases, Activation::kSwiGLU, true, 1, 1000);
  add_activation(cases, Activation::kSwiGLU, true, 1037, 1010);
  uint64_t seed = 1020;
  for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSquaredReLU,
                         Activation::kSwiGLUOai}) {
    add_activation(cases, act, false, 1037, seed += 10);
    add_activation(cases, act, false, 5, seed += 10);
  }
  for (ops::GateOrder o : {ops::GateOrder::kNormThenGate, ops::GateOrder::kGateThenNorm}) {
    add_gated_norm(cases, o, 3, 256, 2, seed += 10);
    add_gated_norm(cases, o, 1, 17, 1, seed += 10);
  }
  add_conv(cases, 1, 130, 4, true, seed += 10);
  add_conv(cases, 5, 67, 4, false, seed += 10);
  add_conv(cases, 3, 8, 2, true, seed += 10);
}

}  // namespace moex::backend::conformance
