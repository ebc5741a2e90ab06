// Copies of a Sequence's state out and back in, for a prompt cache that keeps finished
// sequences (serve/prompt_cache.h): a prefix of every layer's KV rows, as the cache holds them,
// and the recurrent states (short conv, Gated DeltaNet, Mamba-2) at the sequence's position.
#pragma once

#include <cstdint>
#include <vector>

#include "model/engine/sequence.h"

namespace moex::model::engine {

// One layer's KV rows [0, rows) in the cache's own element type (f32, or the halves of an F16
// cache: a copy neither widens nor rounds, and takes what the cache takes), head-major
// ([kv_heads][rows][head_dim] elements, one contiguous copy per head): the bytes of the key
// plane's rows and of the value plane's. v is empty for a keys-only cache (MLA) and both are
// empty for a layer without a KV cache.
struct KvRows {
  std::vector<char> k, v;
};
// Rows of consecutive positions, one KvRows per layer: a cache grows by chunks, so that
// extending what it holds never copies the rows it has.
struct KvChunk {
  int64_t rows = 0;
  std::vector<KvRows> layers;
};

// Bytes of one position's keys and values over every layer of `seq`, in its caches' element
// types (what copy_kv_rows takes per position).
int64_t kv_bytes_per_position(const Sequence& seq);
// Floats of seq's recurrent states over every layer (0: attention only).
int64_t recurrent_state_floats(const Sequence& seq);

// Positions [from, to) of every layer's KV cache, as one chunk. moex::Error unless
// 0 <= from <= to <= seq.position().
KvChunk copy_kv_rows(const Sequence& seq, int64_t from, int64_t to);

// seq's recurrent states at its position, per layer (empty vectors for the other layers; no
// layers at all when seq has no recurrent state).
std::vector<std::vector<float>> copy_recurrent_states(const Sequence& seq);
// The same into `out`, whose vectors keep their capacity (a copy per speculative pass allocates
// nothing once the first is made).
void copy_recurrent_states(const Sequence& seq, std::vector<std::vector<float>>& out);

// Makes seq hold `length` positions: each layer's KV cache the first `length` rows of the
// chunks in order, its recurrent states `states` (per layer, as copy_recurrent_states gave
// them; empty when seq has none). moex::Error, seq unchanged, when the layer counts or sizes do
// not match seq's, the chunks hold fewer rows, or length exceeds the context.
void load_state(Sequence& seq, const std::vector<KvChunk>& chunks, int64_t length,
                const std::vector<std::vector<float>>& states);

// For speculative decoding over recurrent states, which cannot be truncated (short conv, Gated
// DeltaNet, Mamba-2): makes seq hold its first `position` positions (0..seq.position()), every
// KV cache keeping its first `position` rows and the recurrent states becoming `states` (as
// copy_recurrent_states gave them when seq was at `position`; empty when seq has none).
// moex::Error, seq unchanged, for a position outside 0..position() or states whose layer count
// or sizes are not seq's.
void rewind_with_states(Sequence& seq, int64_t position,
                        const std::vector<std::vector<float>>& states);

}  // namespace moex::model::engine
