// Merges from SentencePiece scores (see spm_merges.h).
#include "tokenizer/spm_merges.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace moex::tok {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
}

size_t char_length(std::string_view s, size_t i) {
  return std::min(utf8_lead_length(static_cast<unsigned char>(s[i])), s.size() - i);
}

}  // namespace

std::vector<MergeTable::Entry> merges_from_scores(const StringIdMap& vocab,
                                                  const std::vector<double>& scores,
                                                  const std::string& where) {
  for (size_t id = 0; id < scores.size(); ++id)
    if (std::isnan(scores[id])) fail(where, ": the score of token ", id, " is NaN");
  // Dense ranks: the highest score is rank 0, equal scores share a rank.
  std::vector<double> distinct = scores;
  std::sort(distinct.begin(), distinct.end(), std::greater<>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const auto rank_of = [&](int32_t id) {
    const auto it =
        std::lower_bound(distinct.begin(), distinct.end(), scores[id], std::greater<>());
    return static_cast<int32_t>(it - distinct.begin());
  };

  int64_t work = 0;
  std::vector<MergeTable::Entry> out;
  for (const auto& [text, id] : vocab) {
    if (id < 0 || static_cast<size_t>(id) >= scores.size())
      fail(where, ": token \"", text, "\" has id ", id, " but there are ", scores.size(),
           " scores");
    const std::string_view t(text);
    const size_t first = char_length(t, 0);
    if (first >= t.size()) continue;  // one character: nothing merges into it
    size_t n_chars = 0;
    for (size_t i = 0; i < t.size(); i += char_length(t, i)) ++n_chars;
    work += static_cast<int64_t>(n_chars) * static_cast<int64_t>(t.size());
    if (work > kMaxSpmSplitWork)
      fail(where, ": the tokens are too long to derive SentencePiece merges from (more than ",
           kMaxSpmSplitWork, " bytes to hash; the longest real vocabularies need far less)");
    // llama.cpp's symbols are tokens or single characters; BPE's are tokens (a character that
    // is no token becomes byte tokens first). A token whose first or last character is no
    // token but whose other part is one would be reachable only in llama.cpp.
    size_t last = t.size() - 1;
    while (last > 0 && (static_cast<unsigned char>(t[last]) & 0xC0) == 0x80) --last;
    const bool head_is_token = vocab.find(t.substr(0, first)) != vocab.end();
    const bool tail_is_token = vocab.find(t.substr(last)) != vocab.end();
    const bool rest_after_head = vocab.find(t.substr(first)) != vocab.end() || first == last;
    const bool rest_before_tail = vocab.find(t.substr(0, last)) != vocab.end() || first == last;
    if ((!head_is_token && rest_after_head) || (!tail_is_token && rest_before_tail))
      fail(where, ": token ", id, " \"", text, "\" can be merged from a character that is not "
           "a token itself; moex's BPE (byte fallback before merging) would tokenize it "
           "differently from llama.cpp");
    const int32_t rank = rank_of(id);
    for (size_t cut = first; cut < t.size(); cut += char_length(t, cut)) {
      const auto a = vocab.find(t.substr(0, cut));
      if (a == vocab.end()) continue;
      const auto b = vocab.find(t.substr(cut));
      if (b == vocab.end()) continue;
      out.push_back({pair_key(a->second, b->second), rank, id});
    }
  }
  return out;
}

}  // namespace moex::tok
