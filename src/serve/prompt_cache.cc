// PromptCache (see prompt_cache.h): entries in LRU order, three hash indexes over their
// tokens, loads and saves through model/engine/sequence_state.h.
#include "serve/prompt_cache.h"

#include <algorithm>
#include <iterator>

#include "core/error.h"

namespace moex::serve {

namespace eng = model::engine;

namespace {

constexpr uint64_t kSeed = 0x6d6f65782d706331ull;
// Candidates compared past the deepest shared block (most recently indexed first).
constexpr size_t kCandidates = 16;
// Index bytes counted per block, state and entry (hash map nodes and ids).
constexpr int64_t kIndexBytes = 64;

// The chain hash: h(prefix + t) from h(prefix) (splitmix64's finalizer over both).
uint64_t extend(uint64_t h, int32_t t) {
  uint64_t z = h ^ (uint64_t(uint32_t(t)) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool same_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int64_t n) {
  return int64_t(a.size()) >= n && int64_t(b.size()) >= n &&
         std::equal(a.begin(), a.begin() + n, b.begin());
}

void remove_id(std::unordered_map<uint64_t, std::vector<int64_t>>& m, uint64_t h, int64_t id) {
  auto it = m.find(h);
  if (it == m.end()) return;
  std::erase(it->second, id);
  if (it->second.empty()) m.erase(it);
}

}  // namespace

PromptCache::PromptCache(int64_t budget_bytes, int64_t block) : budget_(budget_bytes), block_(block) {
  if (budget_bytes < 0) fail("prompt cache: budget must be >= 0 bytes, got ", budget_bytes);
  if (block < 1) fail("prompt cache: block must be >= 1 token, got ", block);
  stats_.budget_bytes = budget_bytes;
}

int64_t PromptCache::entry_bytes(int64_t tokens, int64_t states, int64_t module_rows) const {
  return tokens * int64_t(sizeof(int32_t)) + tokens * kv_bytes_ + module_rows * module_bytes_ +
         states * state_floats_ * int64_t(sizeof(float)) +
         kIndexBytes * (tokens / block_ + states + 1);
}

PromptCache::Lru::iterator PromptCache::find(int64_t id) const {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) fail("prompt cache: no entry ", id);
  return it->second;
}

void PromptCache::index(Entry& e) {
  e.blocks.clear();
  e.state_hashes.clear();
  uint64_t h = kSeed;
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    h = extend(h, e.tokens[i]);
    const int64_t len = int64_t(i) + 1;
    if (len % block_ == 0) {
      blocks_[h].push_back(e.id);
      e.blocks.push_back(h);
    }
    if (e.states.count(len)) {
      states_.emplace(h, std::make_pair(e.id, len));
      e.state_hashes.push_back(h);
    }
  }
  e.end_hash = h;
  ends_[h].push_back(e.id);
}

void PromptCache::unindex(const Entry& e) {
  for (uint64_t h : e.blocks) remove_id(blocks_, h, e.id);
  remove_id(ends_, e.end_hash, e.id);
  for (uint64_t h : e.state_hashes) {
    auto [lo, hi] = states_.equal_range(h);
    for (auto it = lo; it != hi;) it = it->second.first == e.id ? states_.erase(it) : std::next(it);
  }
}

void PromptCache::erase(Lru::iterator it) {
  unindex(*it);
  stats_.bytes -= it->bytes;
  --stats_.entries;
  by_id_.erase(it->id);
  lru_.erase(it);
}

void PromptCache::evict_to_budget() {
  while (stats_.bytes > budget_ && !lru_.empty()) {
    erase(std::prev(lru_.end()));
    ++stats_.evictions;
  }
}

PromptCache::Match PromptCache::lookup(const std::vector<int32_t>& prompt, int64_t limit) const {
  Match m;
  limit = std::min<int64_t>(limit, int64_t(prompt.size()));
  if (lru_.empty() || limit <= 0) return m;
  const bool recurrent = state_floats_ > 0;
  uint64_t h = kSeed, block_hash = 0;
  int64_t block_len = 0;
  Match state;  // the deepest state whose prefix hash matches (recurrent models)
  for (int64_t len = 1; len <= limit; ++len) {
    h = extend(h, prompt[size_t(len - 1)]);
    if (recurrent) {
      auto [lo, hi] = states_.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (it->second.second == len) state = {len, it->second.first};
    }
    if (len % block_ == 0) {
      // An entry holding any longer prefix (or a state past here) holds this block too.
      if (!blocks_.count(h)) break;
      block_len = len, block_hash = h;
    }
  }
  if (recurrent) {
    if (state.length > 0 && same_prefix(find(state.entry)->tokens, prompt, state.length))
      m = state;
    return m;
  }
  if (block_len == 0) return m;
  // Among the entries sharing the deepest block, the one that shares most of the next.
  const std::vector<int64_t>& ids = blocks_.at(block_hash);
  int64_t best_len = -1, best = -1;
  for (size_t k = 0; k < ids.size() && k < kCandidates; ++k) {
    const int64_t id = ids[ids.size() - 1 - k];
    const std::vector<int32_t>& t = find(id)->tokens;
    int64_t len = block_len;
    while (len < limit && len < int64_t(t.size()) && t[size_t(len)] == prompt[size_t(len)]) ++len;
    if (len > best_len) best_len = len, best = id;
  }
  if (best >= 0 && same_prefix(find(best)->tokens, prompt, block_len)) m = {best_len, best};
  return m;
}

int64_t PromptCache::module_rows(int64_t entry) const { return find(entry)->module_rows; }

void PromptCache::load(const Match& m, eng::Sequence& seq, eng::Sequence* module) {
  const Lru::iterator it = find(m.entry);
  if (m.length < 1 || m.length > int64_t(it->tokens.size()))
    fail("prompt cache: entry ", m.entry, " holds ", it->tokens.size(), " tokens, not ", m.length);
  if (module && m.length > it->module_rows)
    fail("prompt cache: entry ", m.entry, " holds ", it->module_rows,
         " rows of the MTP module, not ", m.length);
  // The module first: a failure there leaves seq as it was.
  if (module) eng::load_state(*module, it->module_kv, m.length, {});
  if (state_floats_ > 0) {
    const auto s = it->states.find(m.length);
    if (s == it->states.end())
      fail("prompt cache: entry ", m.entry, " has no recurrent state at ", m.length, " tokens");
    eng::load_state(seq, it->kv, m.length, s->second);
  } else {
    eng::load_state(seq, it->kv, m.length, {});
  }
  lru_.splice(lru_.begin(), lru_, it);
  ++stats_.hits;
  stats_.hit_tokens += m.length;
}

void PromptCache::save(const std::vector<int32_t>& tokens, const eng::Sequence& seq,
                       std::vector<Checkpoint> checkpoints, ModuleRows module) {
  const int64_t n = int64_t(tokens.size());
  if (budget_ == 0 || n < block_) return;
  if (n != seq.position())
    fail("prompt cache: ", n, " tokens given for a sequence at position ", seq.position());
  if (module.seq &&
      (module.rows < 0 || module.rows > n - 1 || module.rows > module.seq->position()))
    fail("prompt cache: ", module.rows, " rows of the MTP module for ", n,
         " tokens, with the module at ", module.seq->position());
  kv_bytes_ = eng::kv_bytes_per_position(seq);
  if (module.seq) module_bytes_ = eng::kv_bytes_per_position(*module.seq);
  state_floats_ = eng::recurrent_state_floats(seq);
  const bool recurrent = state_floats_ > 0;

  // The entries this sequence extends (their tokens begin it), the longest last.
  std::vector<std::pair<int64_t, int64_t>> base;  // (length, id)
  uint64_t h = kSeed;
  for (int64_t len = 1; len <= n; ++len) {
    h = extend(h, tokens[size_t(len - 1)]);
    const auto e = ends_.find(h);
    if (e == ends_.end()) continue;
    for (int64_t id : e->second)
      if (int64_t(find(id)->tokens.size()) == len && same_prefix(find(id)->tokens, tokens, len))
        base.emplace_back(len, id);
  }
  // The states the entry will hold: the base entries', the given ones and the current one,
  // the longest kMaxCheckpoints of them. Sized before anything moves.
  std::vector<int64_t> lengths;
  if (recurrent) {
    for (auto& [len, id] : base)
      for (auto& [at, s] : find(id)->states) lengths.push_back(at);
    for (const Checkpoint& c : checkpoints)
      if (c.length >= 1 && c.length <= n) lengths.push_back(c.length);
    lengths.push_back(n);
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    if (int64_t(lengths.size()) > kMaxCheckpoints)
      lengths.erase(lengths.begin(), lengths.end() - kMaxCheckpoints);
  }
  // The module rows the entry will hold: the base's, or the given ones where they are more.
  const int64_t base_module_rows = base.empty() ? 0 : find(base.back().second)->module_rows;
  const int64_t module_rows = std::max(base_module_rows, module.seq ? module.rows : 0);
  if (entry_bytes(n, int64_t(lengths.size()), module_rows) > budget_) {
    ++stats_.too_large;
    return;
  }
  // The copies before anything changes: one that fails (out of memory) leaves the cache as it
  // was.
  const int64_t have = base.empty() ? 0 : base.back().first;
  eng::KvChunk rows, module_chunk;
  if (n > have) rows = eng::copy_kv_rows(seq, have, n);
  if (module_rows > base_module_rows)
    module_chunk = eng::copy_kv_rows(*module.seq, base_module_rows, module_rows);
  std::vector<std::vector<float>> current;
  if (recurrent) current = eng::copy_recurrent_states(seq);
  std::map<int64_t, std::vector<std::vector<float>>> states;
  if (recurrent) {
    for (auto& [len, id] : base)
      for (auto& [at, s] : find(id)->states) states[at] = std::move(s);
    for (Checkpoint& c : checkpoints)
      if (c.length >= 1 && c.length <= n) states[c.length] = std::move(c.states);
    states[n] = std::move(current);
    std::erase_if(states, [&](const auto& kv) {
      return !std::binary_search(lengths.begin(), lengths.end(), kv.first);
    });
  }

  Lru::iterator it;
  if (!base.empty()) {  // grow the longest base; the others' states moved over above
    it = find(base.back().second);
    for (size_t i = 0; i + 1 < base.size(); ++i) erase(find(base[i].second));
    unindex(*it);
    stats_.bytes -= it->bytes;
    lru_.splice(lru_.begin(), lru_, it);
  } else {
    lru_.emplace_front();
    it = lru_.begin();
    it->id = next_id_++;
    by_id_[it->id] = it;
    ++stats_.entries;
  }
  if (n > have) it->kv.push_back(std::move(rows));
  if (module_rows > base_module_rows) it->module_kv.push_back(std::move(module_chunk));
  it->module_rows = module_rows;
  it->tokens = tokens;
  it->states = std::move(states);
  index(*it);
  it->bytes = entry_bytes(n, int64_t(it->states.size()), module_rows);
  stats_.bytes += it->bytes;
  ++stats_.saved;
  evict_to_budget();
}

}  // namespace moex::serve
