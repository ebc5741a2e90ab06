// Mla: projections, decoupled RoPE, the compressed cache, absorbed attention, output.
#include "model/engine/mla.h"


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
  be_.copy_columns({.src = s.q.data(), .dst = s.nope.data(), .rows = n * heads_,
                    .cols = p_.nope_dim, .src_stride = qd, .dst_stride = p_.nope_dim});
  be_.multi_linear({.w = &w_.embed_q, .x = s.nope.data(), .rows = n, .out = s.qabs.data()});
}

void Mla::attend(int64_t row0, int64_t rows, int64_t pos0, ops::KvCache& cache,
                 MlaScratch& s) const {
  const int64_t qd = p_.q_head_dim(), L = p_.kv_lora_rank, R = p_.rope_dim, C = p_.cache_dim();
  grow(be_, s.pe, rows * heads_ * R);
  grow(be_, s.kpe, rows * R);
  grow(be_, s.qcat, rows * heads_ * C);
  grow(be_, s.cache_rows, rows * C);
  // The rope part of each query head and of each kv row.
  be_.copy_columns({.src = s.q.data() + row0 * heads_ * qd + p_.nope_dim, .dst = s.pe.data(),
                    .rows = rows * heads_, .cols = R, .src_stride = qd, .dst_stride = R});
  be_.copy_columns({.src = s.kv.data() + row0 * C + L, .dst = s.kpe.data(), .rows = rows,
                    .cols = R, .src_stride = C, .dst_stride = R});
  be_.rope(rope_, s.pe.data(), rows, heads_, R, pos0);
  be_.rope(rope_, s.kpe.data(), rows, 1, R, pos0);
  // qcat = [absorbed q, roped q_pe] per head; cache rows = [normed latent, roped k_pe].
  const struct { const float* src; int64_t rows, cols, src_stride; float* dst; } joins[] = {
      {s.qabs.data() + row0 * heads_ * L, rows * heads_, L, L, s.qcat.data()},
      {s.pe.data(), rows * heads_, R, R, s.qcat.data() + L},
      {s.kv.data() + row0 * C, rows, L, C, s.cache_rows.data()},
      {s.kpe.data(), rows, R, R, s.cache_rows.data() + L},
  };
  for (const auto& j : joins)
    be_.copy_columns({.src = j.src, .dst = j.dst, .rows = j.rows, .cols = j.cols,
                      .src_stride = j.src_stride, .dst_stride = C});
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
