// Mla: projections, decoupled RoPE, the compressed cache, absorbed attention, output.
#include "model/engine/mla.h"

#include <algorithm>

#include "model/engine/scratch_grow.h"

namespace moex::model::engine {

namespace {

// mlx-lm builds q_a_layernorm and kv_a_layernorm with eps 1e-6 whatever rms_norm_eps says.
constexpr float kLoraNormEps = 1e-6f;

}  // namespace

Mla::Mla(const backend::ModelBackend& be, const MlaWeights& w, const MlaParams& p, int64_t heads,
         float scale, const ops::Rope& rope)
    : be_(be), w_(w), p_(p), heads_(heads), scale_(scale), rope_(rope) {}

void Mla::project(const float* x, int64_t n, MlaScratch& s) const {
  const int64_t qd = p_.q_head_dim(), L = p_.kv_lora_rank, C = p_.cache_dim();
  grow(be_, s.q, n * heads_ * qd);
  grow(be_, s.kv, n * C);
  grow(be_, s.nope, n * heads_ * p_.nope_dim);
  grow(be_, s.qabs, n * heads_ * L);
  grow(be_, s.latent_out, n * heads_ * L);
  if (p_.q_lora_rank > 0) {
    grow(be_, s.qa, n * p_.q_lora_rank);
    const ops::Linear* lins[] = {&w_.q_a, &w_.kv_a};
    float* outs[] = {s.qa.data(), s.kv.data()};
    be_.linear_same_input(lins, outs, 2, x, n);
    be_.rms_norm({.x = s.qa.data(), .out = s.qa.data(), .weight = w_.q_a_norm.data(), .rows = n,
                  .dim = p_.q_lora_rank, .eps = kLoraNormEps});
    be_.linear({.lin = &w_.q_b, .x = s.qa.data(), .rows = n, .out = s.q.data()});
  } else {
    const ops::Linear* lins[] = {&w_.q, &w_.kv_a};
    float* outs[] = {s.q.data(), s.kv.data()};
    be_.linear_same_input(lins, outs, 2, x, n);
  }
  // The latent part of each kv row, normed in place (the k_pe part follows it).
  for (int64_t r = 0; r < n; ++r)
    be_.rms_norm({.x = s.kv.data() + r * C, .out = s.kv.data() + r * C,
                  .weight = w_.kv_a_norm.data(), .rows = 1, .dim = L, .eps = kLoraNormEps});
  for (int64_t i = 0; i < n * heads_; ++i)
    std::copy_n(s.q.data() + i * qd, p_.nope_dim, s.nope.data() + i * p_.nope_dim);
  be_.multi_linear({.w = &w_.embed_q, .x = s.nope.data(), .rows = n, .out = s.qabs.data()});
}

void Mla::attend(int64_t row0, int64_t rows, int64_t pos0, ops::KvCache& cache,
                 MlaScratch& s) const {
  const int64_t qd = p_.q_head_dim(), L = p_.kv_lora_rank, R = p_.rope_dim, C = p_.cache_dim();
  grow(be_, s.pe, rows * heads_ * R);
  grow(be_, s.kpe, rows * R);
  grow(be_, s.qcat, rows * heads_ * C);
  grow(be_, s.cache_rows, rows * C);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads_; ++h)
      std::copy_n(s.q.data() + ((row0 + r) * heads_ + h) * qd + p_.nope_dim, R,
                  s.pe.data() + (r * heads_ + h) * R);
    std::copy_n(s.kv.data() + (row0 + r) * C + L, R, s.kpe.data() + r * R);
  }
  be_.rope(rope_, s.pe.data(), rows, heads_, R, pos0);
  be_.rope(rope_, s.kpe.data(), rows, 1, R, pos0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads_; ++h) {
      float* qc = s.qcat.data() + (r * heads_ + h) * C;
      std::copy_n(s.qabs.data() + ((row0 + r) * heads_ + h) * L, L, qc);
      std::copy_n(s.pe.data() + (r * heads_ + h) * R, R, qc + L);
    }
    float* cr = s.cache_rows.data() + r * C;
    std::copy_n(s.kv.data() + (row0 + r) * C, L, cr);
    std::copy_n(s.kpe.data() + r * R, R, cr + L);
  }
  be_.kv_append(cache, s.cache_rows.data(), nullptr, rows);
  be_.mla_attention({.q = s.qcat.data(), .cache = &cache, .latent_dim = L, .rows = rows,
                     .pos0 = pos0, .heads = heads_, .scale = scale_,
                     .out = s.latent_out.data() + row0 * heads_ * L});
}

void Mla::output(int64_t n, float* out, MlaScratch& s) const {
  grow(be_, s.heads_out, n * heads_ * p_.v_head_dim);
  be_.multi_linear(
      {.w = &w_.unembed_out, .x = s.latent_out.data(), .rows = n, .out = s.heads_out.data()});
  be_.linear({.lin = &w_.o, .x = s.heads_out.data(), .rows = n, .out = out});
}

}  // namespace moex::model::engine
