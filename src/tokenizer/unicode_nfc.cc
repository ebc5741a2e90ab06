// NFC normalization from generated tables (unicode_nfc_data.inc, see gen_unicode_nfc_data.py).
#include "tokenizer/unicode_nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tokenizer/utf8.h"

namespace moex::tok {

namespace {

#include "tokenizer/unicode_nfc_data.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;
constexpr char32_t kBitmapLimit = 0x30000;

struct Tables {
  std::vector<uint64_t> unsafe_bits;  // code points below kBitmapLimit that may change
  std::unordered_map<char32_t, const char32_t*> decomp;
  std::unordered_map<char32_t, uint8_t> ccc;
  std::unordered_map<uint64_t, char32_t> compose;

  Tables() : unsafe_bits(kBitmapLimit / 64, 0) {
    for (const auto& r : kUnsafe) {
      for (char32_t c = r[0]; c <= r[1] && c < kBitmapLimit; ++c) {
        unsafe_bits[c >> 6] |= uint64_t{1} << (c & 63);
      }
    }
    decomp.reserve(std::size(kDecomp));
    for (const auto& d : kDecomp) decomp.emplace(d[0], &d[1]);
    ccc.reserve(std::size(kCcc));
    for (const auto& c : kCcc) ccc.emplace(c[0], static_cast<uint8_t>(c[1]));
    compose.reserve(std::size(kCompose));
    for (const auto& c : kCompose) compose.emplace((uint64_t{c[0]} << 32) | c[1], c[2]);
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

bool is_unsafe(const Tables& t, char32_t c) {
  if (c < kBitmapLimit) return (t.unsafe_bits[c >> 6] >> (c & 63)) & 1;
  for (const auto& r : kUnsafe) {
    if (c >= r[0] && c <= r[1]) return true;
  }
  return false;
}

uint8_t combining_class(const Tables& t, char32_t c) {
  if (c < 0x300) return 0;
  auto it = t.ccc.find(c);
  return it == t.ccc.end() ? 0 : it->second;
}

void decompose(const Tables& t, char32_t c, std::vector<char32_t>& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const int s = static_cast<int>(c - kSBase);
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  auto it = t.decomp.find(c);
  if (it == t.decomp.end()) {
    out.push_back(c);
    return;
  }
  for (int k = 0; k < 4 && it->second[k] != 0; ++k) out.push_back(it->second[k]);
}

// The composite of (a, b), or 0 when they do not compose.
char32_t compose_pair(const Tables& t, char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  auto it = t.compose.find((uint64_t{a} << 32) | b);
  return it == t.compose.end() ? 0 : it->second;
}

}  // namespace

bool nfc_quick_check(std::string_view s) {
  const Tables& t = tables();
  size_t i = 0;
  char32_t cp;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) return false;
    if (is_unsafe(t, cp)) return false;
    i += n;
  }
  return true;
}

namespace {

// Full NFC of one segment, appended to res.
void nfc_segment(std::string_view s, std::string& res) {
  const Tables& t = tables();
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  char32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) {  // not expected (input is validated); keep going safely
      cp = kReplacementChar;
      n = utf8_invalid_run(s, i);
    }
    decompose(t, cp, cps);
    i += n;
  }
  // Canonical ordering: stable sort each run of non-starters by combining class.
  std::vector<uint8_t> cls(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) cls[i] = combining_class(t, cps[i]);
  for (size_t i = 0; i < cps.size();) {
    if (cls[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && cls[j] != 0) ++j;
    if (j - i > 1) {
      std::vector<std::pair<uint8_t, char32_t>> run;
      for (size_t k = i; k < j; ++k) run.emplace_back(cls[k], cps[k]);
      std::stable_sort(run.begin(), run.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t k = i; k < j; ++k) {
        cls[k] = run[k - i].first;
        cps[k] = run[k - i].second;
      }
    }
    i = j;
  }
  // Canonical composition.
  std::vector<char32_t> out;
  out.reserve(cps.size());
  std::vector<uint8_t> out_cls;
  out_cls.reserve(cps.size());
  ptrdiff_t starter = -1;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const uint8_t k = cls[i];
    if (starter >= 0) {
      const uint8_t last = out_cls.back();
      const bool blocked = static_cast<size_t>(starter) != out.size() - 1 && (last == 0 || last >= k);
      if (!blocked) {
        const char32_t comp = compose_pair(t, out[starter], c);
        if (comp != 0) {
          out[starter] = comp;
          continue;
        }
      }
    }
    if (k == 0) starter = static_cast<ptrdiff_t>(out.size());
    out.push_back(c);
    out_cls.push_back(k);
  }
  for (char32_t c : out) append_utf8(res, c);
}

}  // namespace

// NFC can be computed piecewise: a code point that is NFC_QC=Yes with combining class 0 never
// composes with what precedes it and is never reordered across, so only the stretch from the
// starter before an unsafe code point up to the next safe one needs the full algorithm.
std::string nfc_normalize(std::string_view s) {
  const Tables& t = tables();
  std::string res;
  res.reserve(s.size() + 16);
  size_t copied = 0;      // s[0, copied) is already in res
  size_t last_safe = 0;   // start of the last safe code point seen (a starter)
  bool have_safe = false;
  char32_t cp;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i, &cp);
    if (n != 0 && !is_unsafe(t, cp)) {
      last_safe = i;
      have_safe = true;
      i += n;
      continue;
    }
    const size_t begin = have_safe && last_safe >= copied ? last_safe : std::max(copied, i);
    size_t end = i + (n ? n : 1);
    while (end < s.size()) {
      const size_t m = utf8_sequence(s, end, &cp);
      if (m != 0 && !is_unsafe(t, cp)) break;
      end += m ? m : 1;
    }
    res.append(s.data() + copied, begin - copied);
    nfc_segment(s.substr(begin, end - begin), res);
    copied = end;
    have_safe = false;
    i = end;
  }
  res.append(s.data() + copied, s.size() - copied);
  return res;
}

}  // namespace moex::tok
