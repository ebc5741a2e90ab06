// Small weights in the backend's memory (see small_weights.h).
#include "model/engine/small_weights.h"

namespace moex::model::engine {

void place_small_weight(const backend::ModelBackend& be, ops::FloatVec& v) {
  if (be.memory() == backend::Memory::kHost || v.empty() || v.placed()) return;
  const int64_t bytes = v.size() * int64_t(sizeof(float));
  backend::Buffer b = be.alloc(bytes);
  be.upload(b.data(), v.host(), bytes);
  v.set_placed(std::move(b));
}

ops::FloatVec placed(const backend::ModelBackend& be, ops::FloatVec v) {
  place_small_weight(be, v);
  return v;
}

void place_small_weights(const backend::ModelBackend& be, ModelWeights& w) {
  if (be.memory() == backend::Memory::kHost) return;
  auto place = [&](ops::FloatVec& v) { place_small_weight(be, v); };
  auto place_norm = [&](NormWeights& n) {
    place(n.weight);
    place(n.bias);
  };
  place_norm(w.final_norm);
  for (LayerWeights& l : w.layers) {
    for (NormWeights* n :
         {&l.input_norm, &l.post_norm, &l.attn_out_norm, &l.ffn_out_norm, &l.dense_out_norm})
      place_norm(*n);
    for (ops::FloatVec* v : {&l.attn.q_norm, &l.attn.k_norm, &l.attn.sinks}) place(*v);
    for (ops::FloatVec* v : {&l.conv.conv, &l.conv.bias}) place(*v);
    for (ops::FloatVec* v : {&l.gdn.dt_bias, &l.gdn.a_log, &l.gdn.norm}) place(*v);
    for (ops::FloatVec* v : {&l.mamba.conv_bias, &l.mamba.dt_bias, &l.mamba.d, &l.mamba.norm})
      place(*v);
    for (ops::FloatVec* v : {&l.mla.q_a_norm, &l.mla.kv_a_norm}) place(*v);
  }
}

}  // namespace moex::model::engine
