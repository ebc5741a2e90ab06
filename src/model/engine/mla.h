// Multi-head latent attention, the mixer of DeepSeek-V3 / Kimi-K2 (mlx-lm deepseek_v3.py
// DeepseekV3Attention): q = q_b(RMSNorm(q_a(x))) (or q_proj(x)), split per head into q_nope and
// q_pe; kv_a_proj_with_mqa(x) = [latent; k_pe], the latent RMSNormed; q_pe and k_pe rotated
// (decoupled RoPE, YaRN as configured). The sequence caches only [latent; k_pe] per position.
// Attention runs in the absorbed form mlx-lm uses at decode, for prefill too: q_nope times the
// key up-projection (embed_q) attends over the latents, the result is mapped to each head's
// values by unembed_out, then o_proj.
#pragma once

#include "model/engine/scratch_grow.h"

#include <cstdint>
#include <vector>

#include "kernels/moe_contract.h"
#include "backend/model_backend.h"
#include "model/model_config.h"
#include "backend/cpu/float_vec.h"
#include "backend/cpu/linear.h"
#include "backend/cpu/rope.h"

namespace moex::model::engine {

struct MlaWeights {
  ops::Linear q;                       // [heads * (nope + rope)][H] without a q LoRA
  ops::Linear q_a, q_b;                // [q_lora][H], [heads * (nope + rope)][q_lora]
  ops::FloatVec q_a_norm, kv_a_norm;   // [q_lora], [kv_lora]
  ops::Linear kv_a;                    // [kv_lora + rope][H]
  kernels::QuantWeightsView embed_q;     // [heads][kv_lora][nope]
  kernels::QuantWeightsView unembed_out; // [heads][v_head_dim][kv_lora]
  ops::Linear o;                       // [H][heads * v_head_dim]
};

// Scratch of Mla, shared by every MLA layer of one engine; rows = the chunk's rows.
struct MlaScratch {
  ActivationBuffer qa, q, kv, nope, qabs, pe, kpe, qcat, cache_rows, latent_out, heads_out;
};

class Mla {
 public:
  // `rope` rotates rope_dim features (traditional pairs, as mlx-lm's deepseek_v3).
  Mla(const backend::ModelBackend& be, const MlaWeights& w, const MlaParams& p, int64_t heads,
      float scale, const ops::Rope& rope);
  // The projections of x [n][H], all rows at once: q, the normed latent with k_pe, and the
  // absorbed no-RoPE queries.
  void project(const float* x, int64_t n, MlaScratch& s) const;
  // Rows [row0, row0 + rows) of the chunk, consecutive positions of one sequence from pos0:
  // rotates their q_pe and k_pe, appends [latent; k_pe] to `cache` and attends.
  void attend(int64_t row0, int64_t rows, int64_t pos0, ops::KvCache& cache,
              MlaScratch& s) const;
  // The attended latents of all n rows to values (unembed_out), then o_proj into out [n][H].
  void output(int64_t n, float* out, MlaScratch& s) const;
  // The keys-only cache of one sequence (capacity positions).
  ops::KvCache new_cache(int64_t capacity) const {
    return be_.new_kv_cache(1, p_.cache_dim(), capacity, false);
  }

 private:
  const backend::ModelBackend& be_;
  const MlaWeights& w_;
  MlaParams p_;
  int64_t heads_;
  float scale_;
  const ops::Rope& rope_;
};

}  // namespace moex::model::engine
