// Merges derived from SentencePiece scores (spm_merges.h) against a direct implementation of
// the score-ordered merge llama.cpp's SPM tokenizer runs (written here from its description:
// join the adjacent pair whose text is a token of the highest score, leftmost on ties, then
// spell every symbol that is no token as <0xNN> byte tokens), on hand cases and on random
// vocabularies with tied scores. A merge order by id, by ascending score, with distinct ranks
// for tied scores or with byte fallback skipped fails these.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>

#include "core/error.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/spm_merges.h"
#include "tokenizer/utf8.h"

namespace moex::tok {
namespace {

using Ids = std::vector<int32_t>;

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<double> scores;

  Vocab() {  // the 256 byte tokens first, as SentencePiece's byte_fallback puts them
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      add(name, 0);
    }
  }
  void add(const std::string& t, double score) {
    tokens.push_back(t);
    scores.push_back(score);
  }
  int32_t id(const std::string& t) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == t) return static_cast<int32_t>(i);
    return -1;
  }
  std::unique_ptr<BpeModel> model() const {
    Json vocab = Json::object();
    for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
    const Json j = {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()},
                    {"merge_scores", scores}, {"byte_fallback", true}};
    return BpeModel::from_json(j, "test model");
  }
  // The direct algorithm.
  Ids reference(std::string_view text) const {
    std::map<std::string, int32_t, std::less<>> ids;
    for (size_t i = 0; i < tokens.size(); ++i) ids[tokens[i]] = static_cast<int32_t>(i);
    std::vector<std::string> sym;
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::min(utf8_lead_length(static_cast<unsigned char>(text[i])),
                                text.size() - i);
      sym.emplace_back(text.substr(i, n));
      i += n;
    }
    for (;;) {
      int best = -1;
      double best_score = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        const auto it = ids.find(sym[i] + sym[i + 1]);
        if (it == ids.end()) continue;
        const double s = scores[it->second];
        if (best < 0 || s > best_score) best = static_cast<int>(i), best_score = s;
      }
      if (best < 0) break;
      sym[best] += sym[best + 1];
      sym.erase(sym.begin() + best + 1);
    }
    Ids out;
    for (const std::string& s : sym) {
      if (const auto it = ids.find(s); it != ids.end()) {
        out.push_back(it->second);
        continue;
      }
      for (unsigned char c : s) out.push_back(c);  // byte token <0xNN> has id c
    }
    return out;
  }
};

Ids encode(const BpeModel& m, std::string_view text) {
  Ids out;
  m.encode_word(text, false, out);
  return out;
}

TEST(SpmMerges, HighestScoreFirstNotIdOrLength) {
  Vocab v;
  for (const char* c : {"a", "b", "c", "d"}) v.add(c, -100);
  v.add("ab", -5);   // lower id, lower score
  v.add("bc", -1);   // wins over "ab" in "abc"
  v.add("cd", -3);
  v.add("abcd", -50);  // from "ab" + "cd" only
  const auto m = v.model();
  EXPECT_EQ(encode(*m, "abc"), (Ids{v.id("a"), v.id("bc")}));
  EXPECT_EQ(encode(*m, "abd"), (Ids{v.id("ab"), v.id("d")}));
  EXPECT_EQ(encode(*m, "bcd"), (Ids{v.id("bc"), v.id("d")}));  // -1 before -3
  EXPECT_EQ(encode(*m, "abcd"), (Ids{v.id("a"), v.id("bc"), v.id("d")}));
  EXPECT_EQ(encode(*m, "abdcd"), (Ids{v.id("ab"), v.id("d"), v.id("cd")}));
  for (const char* t : {"abc", "abd", "bcd", "abcd", "dcba", "aabbccdd"})
    EXPECT_EQ(encode(*m, t), v.reference(t)) << t;
}

TEST(SpmMerges, EqualScoresMergeLeftmostFirst) {
  Vocab v;
  v.add("x", -10);
  v.add("y", -10);
  v.add("xy", -2);
  v.add("yx", -2);  // the same score as "xy": position decides, not id
  const auto m = v.model();
  EXPECT_EQ(encode(*m, "xyx"), (Ids{v.id("xy"), v.id("x")}));
  EXPECT_EQ(encode(*m, "yxy"), (Ids{v.id("yx"), v.id("y")}));
}

TEST(SpmMerges, CharactersThatAreNoTokenBecomeBytes) {
  Vocab v;
  v.add("a", -1);
  const auto m = v.model();
  // U+00E9 and U+1F642 are not tokens: their UTF-8 bytes, each as its <0xNN> token.
  EXPECT_EQ(encode(*m, "a\xC3\xA9"), (Ids{v.id("a"), 0xC3, 0xA9}));
  EXPECT_EQ(encode(*m, "\xF0\x9F\x99\x82"), (Ids{0xF0, 0x9F, 0x99, 0x82}));
}

TEST(SpmMerges, RandomVocabulariesMatchTheDirectMerge) {
  std::mt19937 rng(7);
  const std::vector<std::string> chars = {"a", "b", "c", "\xE2\x96\x81", "\xC3\xA9"};
  for (int round = 0; round < 40; ++round) {
    Vocab v;
    for (const std::string& c : chars)
      if (c != "\xC3\xA9" || round % 2) v.add(c, -1000);  // é a token in odd rounds only
    while (v.tokens.size() < 256 + 40) {
      std::string t;
      const int len = 2 + int(rng() % 4);
      for (int k = 0; k < len; ++k) t += chars[rng() % (round % 2 ? 5 : 4)];
      if (v.id(t) < 0) v.add(t, -double(rng() % 8));  // scores 0..-7: many ties
    }
    const auto m = v.model();
    for (int k = 0; k < 50; ++k) {
      std::string text;
      const int len = 1 + int(rng() % 14);
      for (int i = 0; i < len; ++i) text += chars[rng() % 5];
      ASSERT_EQ(encode(*m, text), v.reference(text)) << "round " << round << " text " << text;
    }
  }
}

std::string error_of(const Vocab& v) {
  try {
    v.model();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SpmMerges, Refusals) {
  Vocab nan;
  nan.add("a", std::nan(""));
  EXPECT_NE(error_of(nan).find("NaN"), std::string::npos);
  Vocab unreachable;  // "qa" merges from "q" + "a" in llama.cpp, but "q" is no token
  unreachable.add("a", -1);
  unreachable.add("qa", -2);
  EXPECT_NE(error_of(unreachable).find("\"qa\""), std::string::npos);
  Vocab long_token;  // 40000 characters x 40000 bytes: above kMaxSpmSplitWork
  long_token.add("a", -1);
  long_token.add(std::string(40000, 'a'), -2);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of(long_token).find("too long"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  Vocab count;
  count.add("a", -1);
  count.scores.pop_back();
  EXPECT_NE(error_of(count).find("merge_scores"), std::string::npos);
  Vocab both;
  both.add("a", -1);
  Json vocab = Json::object();
  for (size_t i = 0; i < both.tokens.size(); ++i) vocab[both.tokens[i]] = i;
  const Json j = {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array({"a a"})},
                  {"merge_scores", both.scores}};
  EXPECT_THROW(BpeModel::from_json(j, "both"), Error);
}

}  // namespace
}  // namespace moex::tok
