// DictObj: lookups through a hash index (a 50k-entry dict literal stays linear to build), and
// hash_value, Python's hash for the values templates use as keys.
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

#include "chat/budget.h"
#include "chat/limits.h"
#include "chat/value.h"
#include "core/error.h"

namespace moex::chat {

namespace {

// Dicts this small are searched by scanning: cheaper than hashing the key.
constexpr size_t kScanEntries = 16;

uint64_t mix(uint64_t h) {  // splitmix64's finalizer
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

uint64_t hash_string(std::string_view s) {
  charge_bytes(s.size());
  return std::hash<std::string_view>{}(s);
}

}  // namespace

uint64_t hash_value(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0x11;
    case Kind::kNone:
      return 0x22;
    case Kind::kBool:
    case Kind::kInt:
      return mix(uint64_t(v.as_int()));
    case Kind::kFloat: {
      const double d = v.as_double();
      // An integral float equals the int of the same value, so it must hash as that int.
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18)
        return mix(uint64_t(int64_t(d)));
      return mix(std::bit_cast<uint64_t>(d == 0 ? 0.0 : d));
    }
    case Kind::kString:
      return hash_string(v.str());
    case Kind::kList: {
      if (v.is_iterator()) return mix(uint64_t(reinterpret_cast<uintptr_t>(v.identity())));
      charge(int64_t(v.items().size()));
      uint64_t h = 0x33;
      for (const Value& x : v.items()) h = mix(h ^ hash_value(x));
      return h;
    }
    case Kind::kDict:
      // Equal dicts may list their keys in any order; namespaces compare by identity.
      if (v.is_namespace()) return mix(uint64_t(reinterpret_cast<uintptr_t>(v.identity())));
      return 0x44;
    case Kind::kCallable:
      return mix(uint64_t(reinterpret_cast<uintptr_t>(v.identity())));
  }
  return 0;
}

void DictObj::index_entries() const {
  if (indexed_ > entries.size()) {  // not expected (entries only grow), but never stale
    index_.clear();
    indexed_ = 0;
  }
  for (; indexed_ < entries.size(); ++indexed_)
    index_.emplace(hash_value(entries[indexed_].first), indexed_);
}

const Value* DictObj::find(const Value& key) const {
  if (entries.size() <= kScanEntries) {
    for (const auto& [k, v] : entries)
      if (equals(k, key)) return &v;
    return nullptr;
  }
  index_entries();
  const auto [lo, hi] = index_.equal_range(hash_value(key));
  for (auto it = lo; it != hi; ++it) {
    charge(1);
    if (equals(entries[it->second].first, key)) return &entries[it->second].second;
  }
  return nullptr;
}

const Value* DictObj::find_str(std::string_view key) const {
  if (entries.size() <= kScanEntries) {
    for (const auto& [k, v] : entries)
      if (k.is_string() && k.str() == key) return &v;
    return nullptr;
  }
  index_entries();
  const auto [lo, hi] = index_.equal_range(hash_string(key));
  for (auto it = lo; it != hi; ++it) {
    charge(1);
    const Value& k = entries[it->second].first;
    if (k.is_string() && k.str() == key) return &entries[it->second].second;
  }
  return nullptr;
}

void DictObj::note_depth(const Value& key, const Value& v) {
  if (is_namespace) return;
  depth = std::max({depth, 1 + key.depth(), 1 + v.depth()});
  if (depth > kMaxValueDepth)
    throw RenderError(str_cat("a dict nested ", depth, " deep would pass ", kMaxValueDepth,
                              " levels (kMaxValueDepth)"));
}

void DictObj::set(const Value& key, Value v) {
  note_depth(key, v);
  if (const Value* old = find(key)) {
    *const_cast<Value*>(old) = std::move(v);
    return;
  }
  entries.emplace_back(key, std::move(v));
}

void DictObj::append(Value key, Value v) {
  note_depth(key, v);
  charge(1);
  entries.emplace_back(std::move(key), std::move(v));
}

}  // namespace moex::chat
