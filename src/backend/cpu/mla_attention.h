// The core of multi-head latent attention (DeepSeek-V3, mlx-lm deepseek_v3.py at decode) in
// its absorbed form: every head attends over one shared cache row per position, the latent
// c_t [latent_dim] followed by the rotated decoupled key k_pe_t [rope_dim]. A query row is
// [heads][latent_dim + rope_dim]: the head's no-RoPE query already multiplied by its key
// up-projection (embed_q), then its rotated q_pe. Per head:
//   s_t = scale * (q . [c_t; k_pe_t]),  p = softmax(s over t <= pos),  out = sum_t p_t c_t,
// the attention output in latent space (the caller applies unembed_out). This is mlx-lm's
// scaled_dot_product_attention(embed_q(q_nope), latent, latent, mask = q_pe . k_pe * scale).
#pragma once

#include "backend/op_args.h"

#include <cstdint>

#include "backend/cpu/attention.h"

namespace moex::ops {

// The plain reference: one thread, sums in index order. The oracle of mla_attention().
void mla_attention_scalar(const MlaAttentionArgs& a);

// The same with the f32 vector primitives of the active instruction set (kernels/vector_f32.h),
// parallel over (row, block of heads); each cache row is read once per block. A head's result
// does not depend on the blocking, so rows run alone or together give the same bits.
void mla_attention(const MlaAttentionArgs& a);

// Name of the variant mla_attention() runs ("mla_attention_f32__avx512", ...), for logs.
const char* mla_attention_name();

}  // namespace moex::ops
