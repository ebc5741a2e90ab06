// Unit tests: pre-tokenizer split behaviors, Metaspace prepend "first", added tokens
// (lstrip/rstrip/single_word, special skipping, id assignment) and decoders. Expected values
// are what the `tokenizers` package returns for the same inputs.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/synthetic_vocab.h"
#include "tokenizer/test_util.h"
#include "tokenizer/unicode_nfc.h"
#include "tokenizer/utf8.h"

namespace moex {
namespace {

using Ids = std::vector<int32_t>;

std::vector<std::string> split(const std::string& text, const std::string& pattern,
                               tok::SplitBehavior b, bool invert = false) {
  tok::Words w;
  w.buf = text;
  w.spans.push_back({0, text.size(), true});
  tok::Regex re(pattern, "test");
  tok::split_words(w, re, b, invert);
  std::vector<std::string> out;
  for (const auto& s : w.spans) out.push_back(w.buf.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(PreTokenizer, SplitBehaviorsMatchReference) {
  using B = tok::SplitBehavior;
  using V = std::vector<std::string>;
  const std::string t = "a  b c ";
  EXPECT_EQ(split(t, " ", B::kRemoved), (V{"a", "b", "c"}));
  EXPECT_EQ(split(t, " ", B::kIsolated), (V{"a", " ", " ", "b", " ", "c", " "}));
  EXPECT_EQ(split(t, " ", B::kMergedWithPrevious), (V{"a ", " ", "b ", "c "}));
  EXPECT_EQ(split(t, " ", B::kMergedWithNext), (V{"a", " ", " b", " c", " "}));
  EXPECT_EQ(split(t, " ", B::kContiguous), (V{"a", "  ", "b", " ", "c", " "}));
  EXPECT_EQ(split(t, " ", B::kRemoved, true), (V{" ", " ", " ", " "}));
}

TEST(PreTokenizer, WhiteSpaceClassIncludesNextLine) {
  // Oniguruma's \s (the reference's regex engine) matches U+0085; PCRE2's does not.
  EXPECT_EQ(split("a\xC2\x85" "b", "\\s+", tok::SplitBehavior::kIsolated),
            (std::vector<std::string>{"a", "\xC2\x85", "b"}));
  EXPECT_EQ(tok::onig_compatible_pattern("[^\\s\\p{L}]\\S"), "[^\\s\\x{85}\\p{L}][^\\s\\x{85}]");
}

const char* kMetaspaceJson = R"({"version": "1.0",
  "normalizer": null, "post_processor": null,
  "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                    "split": true},
  "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
              "split": true},
  "added_tokens": [
    {"id": ID0, "content": "[MASK]", "lstrip": true, "rstrip": true, "normalized": false,
     "special": false, "single_word": false},
    {"id": ID1, "content": "ab", "single_word": true, "normalized": false, "special": true,
     "lstrip": false, "rstrip": false},
    {"id": ID2, "content": "</s>", "normalized": false, "special": true, "single_word": false,
     "lstrip": false, "rstrip": false}],
  "model": {"type": "BPE", "merges": [], "vocab": {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4,
    "f": 5, "g": 6, "h": 7, "i": 8, "j": 9, "k": 10, "l": 11, "m": 12, "n": 13, "o": 14,
    "p": 15, "q": 16, "r": 17, "s": 18, "t": 19, "u": 20, "v": 21, "w": 22, "x": 23, "y": 24,
    "z": 25, "\u2581": 26, " ": 27, "\u0120": 28, "[": 29, "]": 30, "M": 31, "A": 32, "S": 33,
    "K": 34, "<": 35, ">": 36, "/": 37}}})";

std::string metaspace_json(int id0, int id1, int id2) {
  std::string j = kMetaspaceJson;
  for (auto [key, id] : {std::pair{"ID0", id0}, {"ID1", id1}, {"ID2", id2}}) {
    j.replace(j.find(key), 3, std::to_string(id));
  }
  return j;
}

TEST(Pipeline, MetaspaceFirstAndAddedTokenOptions) {
  const Tokenizer t = Tokenizer::load(tok_test::write_tokenizer("ms", metaspace_json(38, 39, 40)));
  EXPECT_EQ(t.encode("hi  there"), (Ids{26, 7, 8, 26, 26, 19, 7, 4, 17, 4}));
  EXPECT_EQ(t.encode("x [MASK]  y"), (Ids{26, 23, 38, 24}));  // spaces absorbed, no prepend
  EXPECT_EQ(t.encode("ab cab ab."), (Ids{39, 26, 2, 0, 1, 26, 39}));  // single_word; "." dropped
  EXPECT_EQ(t.encode("</s>go on"), (Ids{40, 6, 14, 26, 14, 13}));
  EXPECT_EQ(t.encode("a\xE2\x96\x81" "b"), (Ids{26, 0, 26, 1}));
  EXPECT_EQ(t.decode({26, 23, 38, 24}), "x[MASK]y");
  EXPECT_EQ(t.decode({39, 26, 2, 0, 1, 26, 39}), "ab cab ab");
  EXPECT_EQ(t.decode({39, 26, 2, 0, 1, 26, 39}, true), "cab ");
  EXPECT_EQ(t.decode({40, 6, 14, 26, 14, 13}, true), "go on");
}

TEST(Pipeline, AddedTokenIdsAreAssignedLikeTheReference) {
  // The file says 100..102 but the model has 38 entries: the reference uses 38..40.
  const Tokenizer t = Tokenizer::load(tok_test::write_tokenizer("ids", metaspace_json(100, 101, 102)));
  EXPECT_EQ(t.token_to_id("[MASK]"), 38);
  EXPECT_EQ(t.token_to_id("</s>"), 40);
  EXPECT_EQ(t.vocab_size(), 41);
}

TEST(Pipeline, ByteLevelDecodeRepairsInvalidUtf8) {
  const std::string dir = tok_test::temp_dir("syn").string();
  write_synthetic_tokenizer(dir, 1000);
  const Tokenizer t = Tokenizer::load(dir);
  // Byte tokens: id b is byte b. 0xE4 0xBD alone is a truncated sequence -> one U+FFFD.
  EXPECT_EQ(t.decode({'a', 0xE4, 0xBD, 'b'}), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(t.decode({0xE4, 0xBD, 0xA0}), "\xE4\xBD\xA0");
  // Invalid input bytes are encoded as their U+FFFD replacement.
  EXPECT_EQ(t.encode("x\xFFy", false), t.encode("x\xEF\xBF\xBDy", false));
  EXPECT_EQ(t.decode(t.encode("x\xFFy")), "x\xEF\xBF\xBDy");
}

TEST(Pipeline, RandomBytesRoundTripAndNeverCrash) {
  const std::string dir = tok_test::temp_dir("syn").string();
  write_synthetic_tokenizer(dir, 3000);
  const Tokenizer bl = Tokenizer::load(dir);
  const Tokenizer sp = Tokenizer::load(tok_test::write_tokenizer("sp", tok_test::sp_json()));
  std::mt19937 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 0x20 + rng() % 0x60);
    // Byte-level BPE loses nothing: decode(encode(x)) is NFC(x with invalid bytes replaced).
    EXPECT_EQ(bl.decode(bl.encode(s, false)), tok::nfc_normalize(tok::utf8_lossy(s)));
    EXPECT_TRUE(tok::is_valid_utf8(sp.decode(sp.encode(s))));
  }
}

TEST(Pipeline, ConcurrentEncodesAgree) {
  const std::string dir = tok_test::temp_dir("syn").string();
  write_synthetic_tokenizer(dir, 3000);
  const Tokenizer t = Tokenizer::load(dir);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    texts.push_back("word" + std::to_string(i * 7919) + " the rain in spain " + std::to_string(i));
  }
  std::vector<std::vector<int32_t>> want;
  for (const auto& x : texts) want.push_back(t.encode(x));
  t.encode("warm");  // cache state differs between runs; results must not
  std::vector<int> bad(2, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) bad[k] += t.encode(texts[i]) != want[i];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad[0] + bad[1], 0);
}

}  // namespace
}  // namespace moex
