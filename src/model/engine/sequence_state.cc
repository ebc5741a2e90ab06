// Sequence state copies (see sequence_state.h).
#include "model/engine/sequence_state.h"

#include <algorithm>

#include "core/error.h"

namespace moex::model::engine {

int64_t kv_floats_per_position(const Sequence& seq) {
  int64_t n = 0;
  for (int64_t l = 0; l < seq.layers(); ++l) {
    const ops::KvCache& c = seq.kv_cache(l);
    n += c.kv_heads() * c.head_dim() * (c.has_values() ? 2 : 1);
  }
  return n;
}

int64_t recurrent_state_floats(const Sequence& seq) {
  int64_t n = 0;
  for (int64_t l = 0; l < seq.layers(); ++l) n += int64_t(seq.recurrent_state(l).size());
  return n;
}

void append_kv_rows(const Sequence& seq, int64_t from, int64_t to, std::vector<KvRows>& kv) {
  if (from < 0 || from > to || to > seq.position())
    fail("append_kv_rows: positions [", from, ", ", to, ") outside the ", seq.position(),
         " the sequence holds");
  if (kv.empty()) kv.resize(size_t(seq.layers()));
  if (int64_t(kv.size()) != seq.layers())
    fail("append_kv_rows: ", kv.size(), " layers given, the sequence has ", seq.layers());
  for (int64_t l = 0; l < seq.layers(); ++l) {
    const ops::KvCache& c = seq.kv_cache(l);
    const int64_t heads = c.kv_heads(), hd = c.head_dim();
    if (heads * hd == 0) continue;
    KvRows& out = kv[size_t(l)];
    out.k.reserve(size_t(to * heads * hd));
    if (c.has_values()) out.v.reserve(size_t(to * heads * hd));
    for (int64_t p = from; p < to; ++p)
      for (int64_t h = 0; h < heads; ++h) {
        out.k.insert(out.k.end(), c.key(p, h), c.key(p, h) + hd);
        if (c.has_values()) out.v.insert(out.v.end(), c.value(p, h), c.value(p, h) + hd);
      }
  }
}

std::vector<std::vector<float>> copy_recurrent_states(const Sequence& seq) {
  std::vector<std::vector<float>> out(size_t(seq.layers()));
  for (int64_t l = 0; l < seq.layers(); ++l) out[size_t(l)] = seq.recurrent_state(l);
  return out;
}

void load_state(Sequence& seq, const std::vector<KvRows>& kv, int64_t length,
                const std::vector<std::vector<float>>& states) {
  const size_t layers = size_t(seq.layers());
  if (length < 0 || length > seq.context())
    fail("load_state: ", length, " positions, the context holds ", seq.context());
  if (kv.size() != layers)
    fail("load_state: KV rows of ", kv.size(), " layers, the sequence has ", layers);
  const bool recurrent = recurrent_state_floats(seq) > 0;
  if (recurrent ? states.size() != layers : !states.empty())
    fail("load_state: recurrent states of ", states.size(), " layers, the sequence has ",
         recurrent ? layers : 0);
  // Every check before anything changes.
  for (size_t l = 0; l < layers; ++l) {
    const ops::KvCache& c = seq.caches_[l];
    const size_t need = size_t(length * c.kv_heads() * c.head_dim());
    if (kv[l].k.size() < need || (c.has_values() && kv[l].v.size() < need))
      fail("load_state: layer ", l, " has KV rows for fewer than ", length, " positions");
    if (recurrent && states[l].size() != seq.conv_state_[l].size())
      fail("load_state: layer ", l, "'s recurrent state has ", states[l].size(),
           " floats, the sequence's ", seq.conv_state_[l].size());
  }
  for (size_t l = 0; l < layers; ++l) {
    ops::KvCache& c = seq.caches_[l];
    c.clear();
    if (c.kv_heads() * c.head_dim() > 0 && length > 0)
      c.append(kv[l].k.data(), c.has_values() ? kv[l].v.data() : nullptr, length);
    if (recurrent) std::copy(states[l].begin(), states[l].end(), seq.conv_state_[l].begin());
  }
  seq.pos_ = length;
}

}  // namespace moex::model::engine
