// Conformance cases of the position ops: kv_append + attention (GQA, causal prefill rows,
// decode, sliding window, chunk, sinks), mla_attention over a keys-only cache, rope (default,
// traditional + linear, llama3, yarn) and the norms (rms_norm, layer_norm).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "backend/conformance.h"

namespace moex::backend::conformance {
namespace {

// Bound on |softmax-weighted sum at one ISA - exact| for query q against keys/values at
// positions [first, p]: each score moves by at most delta (its dot's rounding plus the scale
// product's), so each weight by a factor within e^(+-2 delta); the softmax's own rounding
// (exp, the sum of n, the division: (n + 4) u) and the weighted sum's ((n + 1) u) add to it.
// Returns the factor of max_t |v_t[i]| (sum p <= 1 with or without a sink).
double weights_bound(const float* q, int64_t d, float scale, int64_t n,
                     const std::function<const float*(int64_t t)>& key) {
  double delta = 0;
  for (int64_t t = 0; t < n; ++t) {
    const float* k = key(t);
    double mag = 0, s = 0;
    for (int64_t i = 0; i < d; ++i) {
      mag += std::fabs(double(q[i]) * k[i]);
      s += double(q[i]) * k[i];
    }
    delta = std::max(delta, std::fabs(scale) * (dot_rounding(d) * mag) + kU * std::fabs(scale * s));
  }
  return std::expm1(2 * delta) + double(2 * n + 5) * kU;
}

struct AttnSpec {
  int64_t heads, kv_heads, head_dim, len, rows;  // rows: query rows ending at position len - 1
  int64_t window = 0, chunk = 0;
  bool sinks = false;
};

void add_attention(std::vector<Case>& cases, const AttnSpec& s, uint64_t seed) {
  const int64_t hd = s.head_dim, kvh = s.kv_heads, pos0 = s.len - s.rows;
  auto k = std::make_shared<std::vector<float>>(random_vec(s.len * kvh * hd, seed));
  auto v = std::make_shared<std::vector<float>>(random_vec(s.len * kvh * hd, seed + 1));
  auto q =
      std::make_shared<std::vector<float>>(random_vec(s.rows * s.heads * hd, seed + 2, -2.f, 2.f));
  auto sinks = std::make_shared<std::vector<float>>(random_vec(s.heads, seed + 3));
  const float scale = 1.f / std::sqrt(float(hd));
  Case c;
  c.id = "attention/f32/heads=" + std::to_string(s.heads) + ",kv=" + std::to_string(kvh) +
         ",dim=" + std::to_string(hd) + ",len=" + std::to_string(s.len) +
         ",rows=" + std::to_string(s.rows) +
         (s.window ? ",window=" + std::to_string(s.window) : "") +
         (s.chunk ? ",chunk=" + std::to_string(s.chunk) : "") + (s.sinks ? ",sinks" : "");
  // Parts: the attention output, then every cached key and value read back (kv_append).
  c.parts = {s.rows * s.heads * hd, s.len * kvh * hd, s.len * kvh * hd};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    ops::KvCache cache = b.new_kv_cache(kvh, hd, s.len + 3);
    const int64_t first = pos0 > 0 ? pos0 : s.len;  // two appends when there is a prefix
    const float* ks = st(*k);
    const float* vs = st(*v);
    b.kv_append(cache, ks, vs, first);
    if (first < s.len)
      b.kv_append(cache, ks + first * kvh * hd, vs + first * kvh * hd, s.len - first);
    b.attention({.q = st(*q),
                 .cache = &cache,
                 .rows = s.rows,
                 .pos0 = pos0,
                 .heads = s.heads,
                 .scale = scale,
                 .out = outs[0],
                 .chunk = s.chunk,
                 .window = s.window,
                 .sinks = s.sinks ? st(*sinks) : nullptr});
    for (int64_t p = 0; p < s.len; ++p)
      for (int64_t h = 0; h < kvh; ++h)
        for (int64_t i = 0; i < hd; ++i) {
          outs[1][(p * kvh + h) * hd + i] = cache.key(p, h)[i];
          outs[2][(p * kvh + h) * hd + i] = cache.value(p, h)[i];
        }
  };
  c.bound = [=](Isa) {
    std::vector<double> out;
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t h = 0; h < s.heads; ++h) {
        const int64_t p = pos0 + r, g = h / (s.heads / kvh);
        int64_t first = s.chunk > 0 ? p - p % s.chunk : 0;
        if (s.window > 0) first = std::max(first, p - s.window + 1);
        const int64_t n = p + 1 - first;
        const float* qh = q->data() + (r * s.heads + h) * hd;
        const double f = weights_bound(
            qh, hd, scale, n, [&](int64_t t) { return k->data() + ((first + t) * kvh + g) * hd; });
        for (int64_t i = 0; i < hd; ++i) {
          double vmax = 0;
          for (int64_t t = first; t <= p; ++t)
            vmax = std::max(vmax, double(std::fabs((*v)[size_t((t * kvh + g) * hd + i)])));
          out.push_back(f * vmax);
        }
      }
    out.resize(out.size() + size_t(2 * s.len * kvh * hd), 0.0);  // the cache: copies
    return out;
  };
  c.rule = "scores within dot rounding, weights within e^(2 delta), softmax and sum rounding";
  cases.push_back(std::move(c));
}

void add_mla(std::vector<Case>& cases, int64_t heads, int64_t latent, int64_t rope, int64_t len,
             int64_t rows, uint64_t seed) {
  const int64_t d = latent + rope, pos0 = len - rows;
  auto cache_rows = std::make_shared<std::vector<float>>(random_vec(len * d, seed));
  auto q = std::make_shared<std::vector<float>>(random_vec(rows * heads * d, seed + 1, -2.f, 2.f));
  const float scale = 1.f / std::sqrt(float(d));
  Case c;
  c.id = "mla_attention/f32/heads=" + std::to_string(heads) + ",latent=" + std::to_string(latent) +
         ",rope=" + std::to_string(rope) + ",len=" + std::to_string(len) +
         ",rows=" + std::to_string(rows);
  c.parts = {rows * heads * latent};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    ops::KvCache cache = b.new_kv_cache(1, d, len, /*values=*/false);
    b.kv_append(cache, st(*cache_rows), nullptr, len);
    b.mla_attention({.q = st(*q),
                     .cache = &cache,
                     .latent_dim = latent,
                     .rows = rows,
                     .pos0 = pos0,
                     .heads = heads,
                     .scale = scale,
                     .out = outs[0]});
  };
  c.bound = [=](Isa) {
    std::vector<double> out;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t n = pos0 + r + 1;
        const double f = weights_bound(q->data() + (r * heads + h) * d, d, scale, n,
                                       [&](int64_t t) { return cache_rows->data() + t * d; });
        for (int64_t i = 0; i < latent; ++i) {
          double vmax = 0;
          for (int64_t t = 0; t < n; ++t)
            vmax = std::max(vmax, double(std::fabs((*cache_rows)[size_t(t * d + i)])));
          out.push_back(f * vmax);
        }
      }
    return out;
  };
  c.rule = "as attention, the latent rows as values";
  cases.push_back(std::move(c));
}

void add_rope(std::vector<Case>& cases, const std::string& name, const ops::RopeSpec& spec,
              int64_t rows, int64_t heads, int64_t hd, int64_t pos0, uint64_t seed) {
  auto rope = std::make_shared<ops::Rope>(spec);
  auto x = std::make_shared<std::vector<float>>(random_vec(rows * heads * hd, seed));
  Case c;
  c.id = "rope/" + name + "/rows=" + std::to_string(rows) + ",heads=" + std::to_string(heads) +
         ",dim=" + std::to_string(hd) + ",rotated=" + std::to_string(spec.dims) +
         ",pos0=" + std::to_string(pos0);
  c.parts = {rows * heads * hd};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    st.fill(outs[0], *x);
    b.rope(*rope, outs[0], rows, heads, hd, pos0);
  };
  c.bound = shared_code(c.parts[0]);
  c.rule = "bit-equal: rope.cc is compiled once for every ISA";
  cases.push_back(std::move(c));
}

void add_norm(std::vector<Case>& cases, bool layer, int64_t rows, int64_t dim, bool weighted,
              uint64_t seed) {
  auto x = std::make_shared<std::vector<float>>(random_vec(rows * dim, seed, -3.f, 3.f));
  auto w = std::make_shared<std::vector<float>>(random_vec(dim, seed + 1));
  auto bias = std::make_shared<std::vector<float>>(random_vec(dim, seed + 2));
  Case c;
  c.id = std::string(layer ? "layer_norm" : "rms_norm") + "/f32/rows=" + std::to_string(rows) +
         ",dim=" + std::to_string(dim) + (weighted ? ",weight" : "");
  c.parts = {rows * dim};
  c.run = [=](const ModelBackend& b, Stage& st, float* const* outs) {
    if (layer)
      b.layer_norm({.x = st(*x),
                    .out = outs[0],
                    .weight = weighted ? st(*w) : nullptr,
                    .bias = weighted ? st(*bias) : nullptr,
                    .rows = rows,
                    .dim = dim});
    else
      b.rms_norm({.x = st(*x),
                  .out = outs[0],
                  .weight = weighted ? st(*w) : nullptr,
                  .rows = rows,
                  .dim = dim});
  };
  c.bound = shared_code(c.parts[0]);
  c.rule = "bit-equal: norm.cc is compiled once for every ISA";
  cases.push_back(std::move(c));
}

}  // namespace

void add_attention_cases(std::vector<Case>& cases) {
  add_attention(cases, {.heads = 8, .kv_heads = 2, .head_dim = 64, .len = 37, .rows = 1}, 600);
  add_attention(cases, {.heads = 4, .kv_heads = 4, .head_dim = 32, .len = 9, .rows = 9}, 610);
  add_attention(cases, {.heads = 6, .kv_heads = 1, .head_dim = 20, .len = 1, .rows = 1}, 620);
  add_attention(cases, {.heads = 12, .kv_heads = 2, .head_dim = 72, .len = 70, .rows = 5}, 630);
  add_attention(cases,
                {.heads = 8,
                 .kv_heads = 2,
                 .head_dim = 64,
                 .len = 40,
                 .rows = 3,
                 .window = 16,
                 .sinks = true},
                640);
  add_attention(
      cases, {.heads = 4, .kv_heads = 2, .head_dim = 32, .len = 45, .rows = 6, .chunk = 16}, 650);
  add_mla(cases, 4, 64, 16, 23, 1, 700);
  add_mla(cases, 3, 40, 8, 11, 4, 710);

  add_rope(cases, "default", {.dims = 64}, 3, 4, 64, 0, 800);
  add_rope(cases, "traditional,linear",
           {.kind = ops::RopeKind::kLinear, .dims = 32, .traditional = true, .factor = 2.0}, 2, 3,
           48, 1000, 810);
  add_rope(cases, "llama3",
           {.kind = ops::RopeKind::kLlama3, .dims = 64, .base = 500000.0, .factor = 8.0}, 1, 2, 64,
           20000, 820);
  add_rope(cases, "yarn",
           {.kind = ops::RopeKind::kYarn, .dims = 32, .factor = 4.0, .original_max_position = 4096},
           4, 2, 32, 5000, 830);

  add_norm(cases, false, 3, 513, true, 900);
  add_norm(cases, false, 1, 1, false, 910);
  add_norm(cases, false, 2, 64, false, 920);
  add_norm(cases, true, 3, 257, true, 930);
  add_norm(cases, true, 1, 7, false, 940);
}

}  // namespace moex::backend::conformance
