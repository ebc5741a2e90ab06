// BPE model loading and word encoding (see bpe_model.h).
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tokenizer/byte_level.h"
#include "tokenizer/spm_merges.h"
#include "tokenizer/utf8.h"

namespace moex::tok {

namespace {

constexpr uint64_t kEmpty = ~uint64_t{0};

inline uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

// Splits a merges entry ("a b" or ["a", "b"]) into its two tokens.
std::pair<std::string, std::string> parse_merge(const Json& m, const std::string& where) {
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
      fail(where, ": expected \"left right\" (two tokens separated by one space), got \"", s, "\"");
    }
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  if (m.is_array() && m.size() == 2) {
    return {as_string(m[0], index_path(where, 0)), as_string(m[1], index_path(where, 1))};
  }
  fail(where, ": expected a string \"left right\" or an array of two strings, got ", json_kind(m));
}

}  // namespace

void MergeTable::build(const std::vector<Entry>& entries) {
  size_t cap = 16;
  while (cap < entries.size() * 2) cap <<= 1;
  slots_.assign(cap, Entry{kEmpty, 0, 0});
  mask_ = cap - 1;
  for (const Entry& e : entries) {
    for (uint64_t h = mix(e.key) & mask_;; h = (h + 1) & mask_) {
      if (slots_[h].key == kEmpty || slots_[h].key == e.key) {
        slots_[h] = e;  // a repeated pair keeps the later rank, like the reference's map
        break;
      }
    }
  }
}

const MergeTable::Entry* MergeTable::find(int32_t a, int32_t b) const {
  if (slots_.empty()) return nullptr;
  const uint64_t k = key(a, b);
  for (uint64_t h = mix(k) & mask_;; h = (h + 1) & mask_) {
    const Entry& e = slots_[h];
    if (e.key == k) return &e;
    if (e.key == kEmpty) return nullptr;
  }
}

std::unique_ptr<BpeModel> BpeModel::from_json(const Json& j, const std::string& where) {
  auto m = std::make_unique<BpeModel>();
  const std::string type = j.contains("type") ? type_field(j, where) : "BPE";
  if (type != "BPE") {
    fail(field_path(where, "type"), ": unsupported model type \"", type,
         "\" (supported: BPE; WordPiece, Unigram and WordLevel are not)");
  }
  if (const Json* d = optional_field(j, "dropout")) {
    if (!d->is_number() || d->get<double>() != 0.0) {
      fail(field_path(where, "dropout"), ": BPE dropout is not supported (expected null)");
    }
  }
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto v = opt_string_field(j, k, where); v && !v->empty()) {
      fail(field_path(where, k), ": not supported (expected null or \"\"), got \"", *v, "\"");
    }
  }
  m->cache_.resize(kCacheSlots);
  m->fuse_unk_ = bool_field(j, "fuse_unk", where, false);
  m->byte_fallback_ = bool_field(j, "byte_fallback", where, false);
  m->ignore_merges_ = bool_field(j, "ignore_merges", where, false);

  const std::string vw = field_path(where, "vocab");
  const Json& vocab = require_object(require_field(j, "vocab", where), vw);
  m->vocab_.reserve(vocab.size());
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int64_t id = as_int(it.value(), str_cat(vw, "[\"", it.key(), "\"]"));
    if (id < 0 || id > INT32_MAX - 1) fail(vw, "[\"", it.key(), "\"]: id ", id, " out of range");
    m->vocab_[it.key()] = static_cast<int32_t>(id);
    max_id = std::max(max_id, id);
  }
  // Ids index a table, so they must be nearly dense (every real tokenizer's are 0..n-1); a
  // sparse id such as 300000000 would otherwise allocate gigabytes of empty entries.
  const int64_t id_limit = static_cast<int64_t>(vocab.size()) + kMaxVocabIdGap;
  if (max_id >= id_limit) {
    fail(vw, ": id ", max_id, " leaves more than ", kMaxVocabIdGap, " unused ids above the ",
         vocab.size(), " entries (expected ids below ", id_limit, ")");
  }
  m->id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
  std::vector<bool> has(m->id_to_token_.size(), false);
  for (const auto& [tok, id] : m->vocab_) {
    m->id_to_token_[id] = tok;
    has[id] = true;
  }

  const std::string mw = field_path(where, "merges");
  const Json& merges = array_field(j, "merges", where);
  if (const Json* sc = optional_field(j, "merge_scores")) {
    // moex's own field (GGUF SentencePiece vocabularies): merges derived from token scores.
    const std::string sw = field_path(where, "merge_scores");
    if (!merges.empty()) fail(sw, ": given together with a non-empty \"merges\"");
    if (!sc->is_array() || sc->size() != m->id_to_token_.size())
      fail(sw, ": expected an array of ", m->id_to_token_.size(), " numbers (one per id)");
    std::vector<double> scores(sc->size());
    for (size_t i = 0; i < scores.size(); ++i) {
      if (!(*sc)[i].is_number()) fail(index_path(sw, i), ": expected a number");
      scores[i] = (*sc)[i].get<double>();
    }
    m->merges_.build(merges_from_scores(m->vocab_, scores, sw));
  }
  std::vector<MergeTable::Entry> entries;
  entries.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string iw = index_path(mw, i);
    auto [a, b] = parse_merge(merges[i], iw);
    auto ia = m->vocab_.find(a), ib = m->vocab_.find(b), ic = m->vocab_.find(a + b);
    if (ia == m->vocab_.end()) fail(iw, ": token \"", a, "\" is not in model.vocab");
    if (ib == m->vocab_.end()) fail(iw, ": token \"", b, "\" is not in model.vocab");
    if (ic == m->vocab_.end()) fail(iw, ": merged token \"", a + b, "\" is not in model.vocab");
    const uint64_t key = (uint64_t{static_cast<uint32_t>(ia->second)} << 32) |
                         static_cast<uint32_t>(ib->second);
    entries.push_back({key, static_cast<int32_t>(i), ic->second});
  }
  if (!optional_field(j, "merge_scores")) m->merges_.build(entries);

  if (auto unk = opt_string_field(j, "unk_token", where)) {
    auto it = m->vocab_.find(*unk);
    if (it == m->vocab_.end()) {
      fail(field_path(where, "unk_token"), ": \"", *unk, "\" is not in model.vocab");
    }
    m->unk_id_ = it->second;
  }
  const auto& bl = byte_to_utf8_table();
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = m->vocab_.find(std::string_view(name));
    m->byte_fallback_ids_[b] = it == m->vocab_.end() ? -1 : it->second;
    auto jt = m->vocab_.find(bl[b]);
    m->byte_level_ids_[b] = jt == m->vocab_.end() ? -1 : jt->second;
  }
  return m;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id > max_id()) return nullptr;
  const std::string& s = id_to_token_[id];
  if (s.empty()) {
    auto it = vocab_.find(std::string_view());
    return (it != vocab_.end() && it->second == id) ? &s : nullptr;
  }
  return &s;
}

void BpeModel::clear_cache() const {
  std::lock_guard<std::mutex> lk(cache_mu_);
  for (CacheSlot& s : cache_) s = CacheSlot();
}

namespace {

inline uint64_t word_hash(std::string_view w) {
  uint64_t h = 0xcbf29ce484222325ull ^ w.size();
  size_t i = 0;
  for (; i + 8 <= w.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, w.data() + i, 8);
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, w.data() + i, w.size() - i);
  h = (h ^ tail) * 0x9E3779B97F4A7C15ull;
  return (h ^ (h >> 32)) | 1;  // never 0: 0 marks an empty slot
}

}  // namespace

// One character of the word (its vocab string): its id, else its <0xNN> byte tokens when
// byte_fallback has all of them, else the unknown token (fused runs when fuse_unk), else
// nothing, as the reference does. pending_unk is -1 or an unk id not yet emitted.
void BpeModel::add_char(std::string_view ch, std::vector<int32_t>& syms,
                        int32_t& pending_unk) const {
  auto it = vocab_.find(ch);
  if (it != vocab_.end()) {
    if (pending_unk >= 0) syms.push_back(pending_unk), pending_unk = -1;
    syms.push_back(it->second);
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (unsigned char c : ch) all &= byte_fallback_ids_[c] >= 0;
    if (all) {  // a pending unknown stays pending (the reference emits it after these)
      for (unsigned char c : ch) syms.push_back(byte_fallback_ids_[c]);
      return;
    }
  }
  if (!unk_id_) return;
  if (pending_unk >= 0 && !fuse_unk_) syms.push_back(pending_unk);
  pending_unk = *unk_id_;
}

void BpeModel::merge(std::vector<int32_t>& ids) const {
  const int n = static_cast<int>(ids.size());
  if (n < 2) return;
  struct Sym {
    int32_t id, prev, next;
    bool alive;
  };
  struct Cand {
    int32_t rank, pos, new_id;
  };
  // Heap ordered so the top is the lowest rank, then the leftmost position.
  auto worse = [](const Cand& a, const Cand& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  thread_local std::vector<Sym> sym;
  thread_local std::vector<Cand> heap;
  sym.resize(n);
  heap.clear();
  for (int i = 0; i < n; ++i) sym[i] = {ids[i], i - 1, i + 1 < n ? i + 1 : -1, true};
  for (int i = 0; i + 1 < n; ++i) {
    if (const auto* e = merges_.find(ids[i], ids[i + 1])) heap.push_back({e->rank, i, e->id});
  }
  std::make_heap(heap.begin(), heap.end(), worse);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), worse);
    const Cand top = heap.back();
    heap.pop_back();
    Sym& cur = sym[top.pos];
    if (!cur.alive || cur.next < 0) continue;
    Sym& right = sym[cur.next];
    const auto* e = merges_.find(cur.id, right.id);
    if (e == nullptr || e->id != top.new_id) continue;  // stale entry
    cur.id = top.new_id;
    right.alive = false;
    cur.next = right.next;
    if (cur.next >= 0) sym[cur.next].prev = top.pos;
    if (cur.prev >= 0) {
      if (const auto* p = merges_.find(sym[cur.prev].id, cur.id)) {
        heap.push_back({p->rank, cur.prev, p->id});
        std::push_heap(heap.begin(), heap.end(), worse);
      }
    }
    if (cur.next >= 0) {
      if (const auto* q = merges_.find(cur.id, sym[cur.next].id)) {
        heap.push_back({q->rank, top.pos, q->id});
        std::push_heap(heap.begin(), heap.end(), worse);
      }
    }
  }
  ids.clear();
  for (int i = 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);
}

void BpeModel::encode_word(std::string_view word, bool map_bytes,
                           std::vector<int32_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  const uint64_t hash = cacheable ? word_hash(word) : 0;
  if (cacheable) {
    std::unique_lock<std::mutex> lk(cache_mu_, std::try_to_lock);
    if (lk.owns_lock()) {
      const CacheSlot& slot = cache_[hash & (kCacheSlots - 1)];
      if (slot.hash == hash && slot.word == word) {
        out.insert(out.end(), slot.ids.begin(), slot.ids.end());
        return;
      }
    }
  }
  thread_local std::vector<int32_t> ids;
  ids.clear();
  bool done = false;
  if (ignore_merges_) {
    std::string mapped;
    if (map_bytes) append_byte_level(mapped, word);
    auto it = vocab_.find(map_bytes ? std::string_view(mapped) : word);
    if (it != vocab_.end()) ids.push_back(it->second), done = true;
  }
  if (!done) {
    int32_t pending_unk = -1;
    if (map_bytes) {
      const auto& bl = byte_to_utf8_table();
      for (unsigned char c : word) {
        if (byte_level_ids_[c] >= 0 && pending_unk < 0) {
          ids.push_back(byte_level_ids_[c]);
        } else {
          add_char(bl[c], ids, pending_unk);
        }
      }
    } else {
      for (size_t i = 0; i < word.size();) {
        size_t n = utf8_lead_length(static_cast<unsigned char>(word[i]));
        n = std::min(n, word.size() - i);
        add_char(word.substr(i, n), ids, pending_unk);
        i += n;
      }
    }
    if (pending_unk >= 0) ids.push_back(pending_unk);
    merge(ids);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::unique_lock<std::mutex> lk(cache_mu_, std::try_to_lock);
    if (lk.owns_lock()) {
      CacheSlot& slot = cache_[hash & (kCacheSlots - 1)];
      slot.hash = hash;
      slot.word.assign(word);
      slot.ids.assign(ids.begin(), ids.end());
    }
  }
}

}  // namespace moex::tok
