// The server's prompt cache: finished sequences' KV rows (and, for models with recurrent
// layers, their recurrent states at checkpoints) kept in RAM under a byte budget, least
// recently used first out, so that a request whose prompt starts with a cached sequence's
// tokens loads that prefix into its slot instead of running it, whichever slot it lands on.
//
// An attention-only sequence can be cut anywhere, so any prefix of an entry serves. A
// recurrent state (short conv, Gated DeltaNet, Mamba-2) mixes every past position and cannot be
// rewound: an entry of such a model serves only at the lengths it holds a state for (the end
// of each request's prompt and the end of its sequence).
//
// Lookup hashes the prompt token by token (a chain: each position's hash covers every token
// before it) and stops at the first block (kDefaultBlock tokens) that no entry shares: its time
// grows with the prompt's length, whatever the cache holds; the chosen entry's tokens are then
// compared with the prompt, so a hash collision costs a miss, never a wrong state.
// Scheduler thread only (not thread-safe).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <unordered_map>
#include <vector>

#include "model/engine/sequence.h"
#include "model/engine/sequence_state.h"

namespace moex::serve {

struct PromptCacheStats {
  int64_t budget_bytes = 0;
  int64_t bytes = 0;        // held now
  int64_t entries = 0;      // held now
  int64_t hits = 0;         // lookups that loaded a prefix
  int64_t misses = 0;       // lookups that found none (or none longer than the slot's own)
  int64_t hit_tokens = 0;   // prompt tokens loaded instead of run
  int64_t saved = 0;        // sequences saved (new entries or extensions of one)
  int64_t evictions = 0;    // entries dropped for room
  int64_t too_large = 0;    // sequences not saved: larger than the whole budget
};

// With --spec mtp: the MTP module's sequence that followed a saved sequence, and how many of
// its rows to keep (at most the saved tokens less one: each row's next token is among them).
struct ModuleRows {
  const model::engine::Sequence* seq = nullptr;
  int64_t rows = 0;
};

class PromptCache {
 public:
  // Entries of at least one block are indexed by block; shorter sequences are not kept.
  static constexpr int64_t kDefaultBlock = 16;
  // States kept per entry of a recurrent model (the longest ones stay).
  static constexpr int64_t kMaxCheckpoints = 8;

  // budget_bytes 0: the cache holds nothing. block: tokens per index block (tests use less).
  explicit PromptCache(int64_t budget_bytes, int64_t block = kDefaultBlock);

  struct Match {
    int64_t length = 0;  // tokens of the prompt the entry serves (0: none)
    int64_t entry = -1;
  };
  // The longest prefix of prompt, at most `limit` tokens, that an entry serves.
  Match lookup(const std::vector<int32_t>& prompt, int64_t limit) const;
  // Loads m's prefix into seq (which must be a sequence of the engine the entries came from)
  // and marks the entry most recently used. Counts a hit. With `module` (the MTP module's
  // sequence that follows seq, --spec mtp), its first m.length rows too: moex::Error unless the
  // entry holds that many (module_rows).
  void load(const Match& m, model::engine::Sequence& seq,
            model::engine::Sequence* module = nullptr);
  // Rows of the MTP module's sequence entry `entry` holds (0 when saved without one). A module
  // row p takes the main hidden state at p and token p + 1, so a prompt that shares L tokens
  // with the entry can load min(L - 1, module_rows) positions of both sequences.
  int64_t module_rows(int64_t entry) const;
  void count_miss() { ++stats_.misses; }

  // A state of the sequence at `length` tokens, taken while it ran (the end of its prompt).
  struct Checkpoint {
    int64_t length = 0;
    std::vector<std::vector<float>> states;
  };
  // Saves seq, which holds `tokens`; `checkpoints` are earlier states of it (recurrent models;
  // each length at most tokens.size()). An entry whose tokens begin `tokens` grows into it
  // (only the new rows are copied) and keeps its states; then the least recently used entries
  // go until the budget holds. A sequence larger than the budget is not kept.
  // With --spec mtp, `module` names the MTP module's rows to keep beside the KV rows (an
  // extension copies only the new ones).
  void save(const std::vector<int32_t>& tokens, const model::engine::Sequence& seq,
            std::vector<Checkpoint> checkpoints = {}, ModuleRows module = {});

  const PromptCacheStats& stats() const { return stats_; }
  int64_t block() const { return block_; }

 private:
  struct Entry {
    int64_t id = 0;
    std::vector<int32_t> tokens;
    std::vector<model::engine::KvChunk> kv;  // rows for every token, one chunk per save
    std::vector<model::engine::KvChunk> module_kv;  // the MTP module's rows (--spec mtp)
    int64_t module_rows = 0;
    std::map<int64_t, std::vector<std::vector<float>>> states;  // by length (recurrent)
    std::vector<uint64_t> blocks;  // chain hashes at block ends, as indexed
    std::vector<uint64_t> state_hashes;  // chain hashes at the states' lengths
    uint64_t end_hash = 0;         // chain hash of all its tokens (ends_ index)
    int64_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first

  // Bytes an entry of `tokens` tokens, `states` recurrent states and `module_rows` rows of the
  // MTP module holds (with its index).
  int64_t entry_bytes(int64_t tokens, int64_t states, int64_t module_rows) const;
  void index(Entry& e);  // its blocks, end and states into the indexes
  void unindex(const Entry& e);
  void erase(Lru::iterator it);
  void evict_to_budget();
  Lru::iterator find(int64_t id) const;

  int64_t budget_, block_;
  int64_t next_id_ = 0;
  int64_t kv_bytes_ = 0;      // per position (the caches' element types), from the first save
  int64_t module_bytes_ = 0;  // per row of the MTP module, from the first save with one
  int64_t state_floats_ = 0;  // per state, from the first save
  mutable Lru lru_;
  std::unordered_map<int64_t, Lru::iterator> by_id_;
  // Chain hash of a block-aligned prefix -> entries holding it (most recent last).
  std::unordered_map<uint64_t, std::vector<int64_t>> blocks_;
  // Chain hash of a whole entry's tokens -> entries (to find the ones a new sequence extends).
  std::unordered_map<uint64_t, std::vector<int64_t>> ends_;
  // Chain hash of a prefix a state is held for -> (entry, length) (recurrent models).
  std::unordered_multimap<uint64_t, std::pair<int64_t, int64_t>> states_;
  PromptCacheStats stats_;
};

}  // namespace moex::serve
