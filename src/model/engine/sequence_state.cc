// Sequence state copies (see sequence_state.h).
#include "model/engine/sequence_state.h"

#include <algorithm>

#include "core/error.h"

namespace moex::model::engine {

int64_t kv_bytes_per_position(const Sequence& seq) {
  int64_t n = 0;
  for (int64_t l = 0; l < seq.layers(); ++l) {
    const ops::KvCache& c = seq.kv_cache(l);
    n += c.kv_heads() * c.head_dim() * c.element_bytes() * (c.has_values() ? 2 : 1);
  }
  return n;
}

int64_t recurrent_state_floats(const Sequence& seq) {
  int64_t n = 0;
  for (int64_t l = 0; l < seq.layers(); ++l) n += int64_t(seq.recurrent_state(l).size());
  return n;
}

namespace {

// Positions [from, from + rows) of one plane (keys or values) of c, head-major as the cache
// holds them: one download per head, whose positions are contiguous.
void download_plane(const backend::ModelBackend& be, const ops::KvCache& c, const char* plane,
                    int64_t from, int64_t rows, std::vector<char>& out) {
  const int64_t head_bytes = rows * c.head_dim() * c.element_bytes();
  out.resize(size_t(c.kv_heads() * head_bytes));
  for (int64_t h = 0; h < c.kv_heads() && rows > 0; ++h)
    be.download(out.data() + h * head_bytes, plane + c.offset(from, h) * c.element_bytes(),
                head_bytes);
}

// The inverse: the first m of a chunk's `rows` positions (head-major, as download_plane gave
// them) written at the cache's length (the caller checks room and counts them).
void upload_plane(const backend::ModelBackend& be, const ops::KvCache& c, char* plane,
                  const char* in, int64_t rows, int64_t m) {
  const int64_t row_bytes = c.head_dim() * c.element_bytes();
  for (int64_t h = 0; h < c.kv_heads() && m > 0; ++h)
    be.upload(plane + c.offset(c.length(), h) * c.element_bytes(), in + h * rows * row_bytes,
              m * row_bytes);
}

}  // namespace

KvChunk copy_kv_rows(const Sequence& seq, int64_t from, int64_t to) {
  if (from < 0 || from > to || to > seq.position())
    fail("copy_kv_rows: positions [", from, ", ", to, ") outside the ", seq.position(),
         " the sequence holds");
  KvChunk chunk;
  chunk.rows = to - from;
  chunk.layers.resize(size_t(seq.layers()));
  for (int64_t l = 0; l < seq.layers(); ++l) {
    const ops::KvCache& c = seq.kv_cache(l);
    const int64_t heads = c.kv_heads(), hd = c.head_dim();
    if (heads * hd == 0) continue;
    KvRows& out = chunk.layers[size_t(l)];
    download_plane(seq.backend(), c, c.key_bytes(), from, chunk.rows, out.k);
    if (c.has_values())
      download_plane(seq.backend(), c, c.value_bytes(), from, chunk.rows, out.v);
  }
  return chunk;
}

namespace {

// Whether seq has recurrent states; moex::Error (naming `who`) unless `states` has one per layer
// of seq's sizes (or none, for a sequence without them).
bool check_states(const Sequence& seq, const std::vector<std::vector<float>>& states,
                  const char* who) {
  const size_t layers = size_t(seq.layers());
  const bool recurrent = recurrent_state_floats(seq) > 0;
  if (recurrent ? states.size() != layers : !states.empty())
    fail(who, ": recurrent states of ", states.size(), " layers, the sequence has ",
         recurrent ? layers : 0);
  for (size_t l = 0; recurrent && l < layers; ++l)
    if (int64_t(states[l].size()) != seq.recurrent_state(int64_t(l)).size())
      fail(who, ": layer ", l, "'s recurrent state has ", states[l].size(),
           " floats, the sequence's ", seq.recurrent_state(int64_t(l)).size());
  return recurrent;
}

void put_state(Sequence& seq, size_t l, const std::vector<float>& state) {
  if (state.empty()) return;  // a layer without a recurrent state
  seq.backend().upload(seq.recurrent_state(int64_t(l)).data(), state.data(),
                       int64_t(state.size() * sizeof(float)));
}

}  // namespace

std::vector<std::vector<float>> copy_recurrent_states(const Sequence& seq) {
  std::vector<std::vector<float>> out;
  copy_recurrent_states(seq, out);
  return out;
}

void copy_recurrent_states(const Sequence& seq, std::vector<std::vector<float>>& out) {
  if (recurrent_state_floats(seq) == 0) {
    out.clear();
    return;
  }
  out.resize(size_t(seq.layers()));
  for (int64_t l = 0; l < seq.layers(); ++l) {
    const ActivationBuffer& s = seq.recurrent_state(l);
    out[size_t(l)].resize(size_t(s.size()));
    if (s.empty()) continue;  // a layer without a recurrent state
    seq.backend().download(out[size_t(l)].data(), s.data(), s.size() * int64_t(sizeof(float)));
  }
}

void load_state(Sequence& seq, const std::vector<KvChunk>& chunks, int64_t length,
                const std::vector<std::vector<float>>& states) {
  const size_t layers = size_t(seq.layers());
  if (length < 0 || length > seq.context())
    fail("load_state: ", length, " positions, the context holds ", seq.context());
  int64_t rows = 0;
  for (const KvChunk& ch : chunks) {
    if (ch.layers.size() != layers)
      fail("load_state: KV rows of ", ch.layers.size(), " layers, the sequence has ", layers);
    for (size_t l = 0; l < layers; ++l) {
      const ops::KvCache& c = seq.caches_[l];
      const size_t need = size_t(ch.rows * c.kv_heads() * c.head_dim() * c.element_bytes());
      if (ch.layers[l].k.size() != need || (c.has_values() && ch.layers[l].v.size() != need))
        fail("load_state: layer ", l, "'s KV rows do not have its ", c.kv_heads(), " x ",
             c.head_dim(), " elements of ", c.element_bytes(), " bytes per position");
    }
    rows += ch.rows;
  }
  if (rows < length) fail("load_state: KV rows for ", rows, " positions, not ", length);
  // Every check before anything changes.
  const bool recurrent = check_states(seq, states, "load_state");
  for (size_t l = 0; l < layers; ++l) {
    ops::KvCache& c = seq.caches_[l];
    c.clear();
    if (c.kv_heads() * c.head_dim() > 0)
      for (int64_t left = length, i = 0; left > 0; left -= chunks[size_t(i++)].rows) {
        const KvRows& r = chunks[size_t(i)].layers[l];
        const int64_t m = std::min(left, chunks[size_t(i)].rows);
        c.check_room(m);
        const int64_t rows = chunks[size_t(i)].rows;
        upload_plane(seq.backend(), c, c.key_bytes(), r.k.data(), rows, m);
        if (c.has_values()) upload_plane(seq.backend(), c, c.value_bytes(), r.v.data(), rows, m);
        c.grow(m);
      }
    if (recurrent) put_state(seq, l, states[l]);
  }
  seq.pos_ = length;
}


void rewind_with_states(Sequence& seq, int64_t position,
                        const std::vector<std::vector<float>>& states) {
  if (position < 0 || position > seq.pos_)
    fail("rewind_with_states: position ", position, " outside the ", seq.pos_, " tokens held");
  const bool recurrent = check_states(seq, states, "rewind_with_states");
  for (size_t l = 0; l < size_t(seq.layers()); ++l) {
    seq.caches_[l].truncate(position);
    if (recurrent) put_state(seq, l, states[l]);
  }
  seq.pos_ = position;
}

}  // namespace moex::model::engine
