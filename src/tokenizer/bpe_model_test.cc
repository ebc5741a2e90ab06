// Unit tests: BPE merge order, byte fallback, fused unknowns, ignore_merges, and the
// SentencePiece-style pipeline on a handcrafted tokenizer.json (expected ids are what the
// `tokenizers` package returns for the same file).
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"

namespace moex {
namespace {

using tok_test::sp_json;
using tok_test::write_tokenizer;
using Ids = std::vector<int32_t>;

TEST(BpeModel, SentencePieceStyleMatchesReference) {
  const Tokenizer t = Tokenizer::load(write_tokenizer("sp", sp_json()));
  EXPECT_EQ(t.encode("abc"), (Ids{1, 14}));
  EXPECT_EQ(t.encode("abc abc"), (Ids{1, 14, 14}));
  EXPECT_EQ(t.encode("ab"), (Ids{1, 12, 10}));  // "b c" outranks "a b": ▁a wins first
  EXPECT_EQ(t.encode("\xC3\xA9\xE2\x82\xAC"), (Ids{1, 8, 3, 4, 5, 6, 7}));  // é€ byte fallback
  EXPECT_EQ(t.encode("x"), (Ids{1, 8, 0}));
  // Unknowns fuse, and a pending unknown is emitted after byte-fallback tokens.
  EXPECT_EQ(t.encode("xy\xC3\xA9"), (Ids{1, 8, 3, 4, 0}));
  EXPECT_EQ(t.encode("<s>abc</s>"), (Ids{1, 1, 14, 2}));
  EXPECT_EQ(t.encode("  a"), (Ids{1, 8, 8, 12}));
  EXPECT_EQ(t.encode("zz<s>q"), (Ids{1, 8, 0, 1, 8, 0}));  // Prepend applies to each piece
  EXPECT_EQ(t.encode("abc", false), (Ids{14}));
  EXPECT_EQ(t.decode({1, 14}), "<s> abc");
  EXPECT_EQ(t.decode({1, 14}, true), "abc");
  EXPECT_EQ(t.decode({1, 8, 3, 4, 5, 6, 7}, true), "\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(t.decode({1, 8, 0, 1, 8, 0}, true), " ");
  // Invalid byte runs decode to one U+FFFD per byte (the reference's ByteFallback).
  EXPECT_EQ(t.decode({3, 9, 5, 6, 7, 5, 6}),
            "\xEF\xBF\xBD" "a" "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(t.decode({999, -5, 14}), "abc");  // unknown ids are skipped
  EXPECT_EQ(t.bos_id(), std::nullopt);        // no tokenizer_config.json
  EXPECT_TRUE(t.is_special(1));
  EXPECT_FALSE(t.is_special(14));
}

TEST(BpeModel, IgnoreMergesTakesWholeWordsFromTheVocab) {
  // With merges "b c" then "a b", "abc" would become a+bc; the vocab holds "abc" whole.
  const std::string json = R"({"model": {"type": "BPE", "ignore_merges": IGNORE,
    "vocab": {"a": 0, "b": 1, "c": 2, "bc": 3, "ab": 4, "abc": 5},
    "merges": [["b", "c"], ["a", "b"]]}})";
  auto with = [&](const char* v) {
    std::string j = json;
    j.replace(j.find("IGNORE"), 6, v);
    return Tokenizer::load(write_tokenizer(v, j));
  };
  EXPECT_EQ(with("false").encode("abc"), (Ids{0, 3}));
  EXPECT_EQ(with("true").encode("abc"), (Ids{5}));
  EXPECT_EQ(with("true").encode("abcab"), (Ids{0, 3, 4}));  // not whole: merges run
}

TEST(BpeModel, EqualRanksMergeLeftmostFirst) {
  const Tokenizer t = Tokenizer::load(write_tokenizer(
      "aaa", R"({"model": {"type": "BPE", "vocab": {"a": 0, "aa": 1}, "merges": ["a a"]}})"));
  EXPECT_EQ(t.encode("aaa"), (Ids{1, 0}));
  EXPECT_EQ(t.encode("aaaaa"), (Ids{1, 1, 0}));
  EXPECT_EQ(t.decode({1, 0}), "aa a");  // no decoder: tokens joined by spaces
}

TEST(BpeModel, MissingCharacterWithoutUnkOrFallbackIsDropped) {
  const Tokenizer t = Tokenizer::load(write_tokenizer(
      "drop", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"));
  EXPECT_EQ(t.encode("axa"), (Ids{0, 0}));
}

}  // namespace
}  // namespace moex
