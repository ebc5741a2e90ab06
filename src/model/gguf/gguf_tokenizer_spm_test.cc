// The SentencePiece tokenizer of a GGUF file (tokenizer.ggml.model "llama"), on a vocabulary
// written key by key: byte tokens, score-ordered merges, the space prefix after every special
// token, parse_special, decoding, the settings keys, and refusals that name the key. Expected
// ids worked out by hand from llama.cpp's rules (docs/gguf.md, "SentencePiece tokenizers");
// gguf_model_test.py --peer compares a trained vocabulary with llama.cpp itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "io/gguf/gguf_test_util.h"
#include "model/gguf/gguf_model.h"

namespace moex::model {
namespace {

using gguf::testing::Bytes;
using Ids = std::vector<int32_t>;

constexpr int32_t kByte0 = 3;  // id of <0x00>
constexpr int32_t kSp = 259, kA = 260, kB = 261, kSpA = 263, kAb = 264, kBc = 265, kInst = 267,
                  kUser = 268;

struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::optional<uint32_t> bos = 1, eos = 2;
  std::optional<bool> space_prefix, add_bos;

  SpmVocab() {
    add("<unk>", 0, 2);
    add("<s>", 0, 3);
    add("</s>", 0, 3);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      add(name, 0, 6);
    }
    add("\xE2\x96\x81", -100, 1);  // 259
    add("a", -100, 1);             // 260
    add("b", -100, 1);             // 261
    add("c", -100, 1);             // 262
    add("\xE2\x96\x81" "a", -1, 1);  // 263: outscores "ab"
    add("ab", -2, 1);              // 264
    add("bc", -3, 1);              // 265
    add("abc", -4, 1);             // 266
    add("[INST]", 0, 3);           // 267 control
    add("<|u|>", 0, 4);            // 268 user-defined
  }
  void add(const std::string& t, float s, int32_t type) {
    tokens.push_back(t);
    scores.push_back(s);
    types.push_back(type);
  }
  std::string write(const std::string& name) const {
    Bytes b;
    const uint64_t n_kv = 5 + bos.has_value() + eos.has_value() + space_prefix.has_value() +
                          add_bos.has_value();
    b.header(0, n_kv);
    b.kv_str("general.architecture", "llama");
    b.kv_str("tokenizer.ggml.model", "llama");
    b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(tokens.size());
    for (const std::string& t : tokens) b.str(t);
    b.str("tokenizer.ggml.scores").u32(9).u32(6).u64(scores.size());
    for (float s : scores) b.f32(s);
    b.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(types.size());
    for (int32_t t : types) b.u32(uint32_t(t));
    if (bos) b.kv_u32("tokenizer.ggml.bos_token_id", *bos);
    if (eos) b.kv_u32("tokenizer.ggml.eos_token_id", *eos);
    if (space_prefix) b.str("tokenizer.ggml.add_space_prefix").u32(7).u8(*space_prefix);
    if (add_bos) b.str("tokenizer.ggml.add_bos_token").u32(7).u8(*add_bos);
    b.pad_to(32);
    const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
    std::ofstream(path, std::ios::binary) << b.out;
    return path;
  }
};

std::string spm_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufSpmTokenizer, EncodesAsLlamaCpp) {
  const Tokenizer t = load_gguf_tokenizer(SpmVocab().write("spm"));
  EXPECT_EQ(t.encode("ab"), (Ids{1, kSpA, kB}));  // "▁a" (-1) merges before "ab" (-2)
  EXPECT_EQ(t.encode("bc a"), (Ids{1, kSp, kBc, kSpA}));
  EXPECT_EQ(t.encode("  a"), (Ids{1, kSp, kSp, kSpA}));
  EXPECT_EQ(t.encode("\xC3\xA9"), (Ids{1, kSp, kByte0 + 0xC3, kByte0 + 0xA9}));  // byte fallback
  EXPECT_EQ(t.encode(""), (Ids{1}));
  EXPECT_EQ(t.encode("", false), (Ids{}));
  EXPECT_EQ(t.encode("ab", false), (Ids{kSpA, kB}));
  // A control token is matched with parse_special only; text after it gets the space prefix.
  EXPECT_EQ(t.encode("[INST]a"), (Ids{1, kInst, kSpA}));
  Ids plain = {1, kSp};
  for (char c : std::string("[INST]")) plain.push_back(kByte0 + c);
  plain.push_back(kA);
  EXPECT_EQ(t.encode("[INST]a", true, false), plain);
  // A user-defined token is matched either way.
  for (bool parse : {true, false})
    EXPECT_EQ(t.encode("a<|u|>b", true, parse), (Ids{1, kSpA, kUser, kSp, kB}));
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_ids(), (Ids{2}));
  EXPECT_TRUE(t.is_special(kInst));
  EXPECT_FALSE(t.is_special(kUser));
}

TEST(GgufSpmTokenizer, DecodeInvertsEncode) {
  const Tokenizer t = load_gguf_tokenizer(SpmVocab().write("spm_dec"));
  for (const char* text : {"ab", "bc a", "  a", "\xC3\xA9 abc", "a\tb\nc  "})
    EXPECT_EQ(t.decode(t.encode(text), true), text) << text;
  EXPECT_EQ(t.decode({kSp, kBc, kSpA}), "bc a");  // the first token's space is dropped
  EXPECT_EQ(t.decode({kByte0 + 0xC3, kByte0 + 0xA9}), "\xC3\xA9");
}

TEST(GgufSpmTokenizer, SettingsKeys) {
  SpmVocab no_prefix;
  no_prefix.space_prefix = false;
  const Tokenizer a = load_gguf_tokenizer(no_prefix.write("spm_noprefix"));
  EXPECT_EQ(a.encode("ab"), (Ids{1, kAb}));
  EXPECT_EQ(a.decode({kSp, kA}), " a");
  SpmVocab no_bos;
  no_bos.add_bos = false;
  EXPECT_EQ(load_gguf_tokenizer(no_bos.write("spm_nobos")).encode("ab"), (Ids{kSpA, kB}));
  SpmVocab defaults;  // no bos / eos keys: llama.cpp's defaults 1 and 2
  defaults.bos.reset();
  defaults.eos.reset();
  const Tokenizer d = load_gguf_tokenizer(defaults.write("spm_defaults"));
  EXPECT_EQ(d.bos_id(), 1);
  EXPECT_EQ(d.eos_ids(), (Ids{2}));
}

TEST(GgufSpmTokenizer, RefusalsNameTheKey) {
  SpmVocab count;
  count.scores.pop_back();
  EXPECT_NE(spm_error([&] { load_gguf_tokenizer(count.write("spm_count")); })
                .find("'tokenizer.ggml.scores' is array<float32> of 268 elements; expected 269"),
            std::string::npos);
  SpmVocab nan;
  nan.scores[kAb] = std::nanf("");
  EXPECT_NE(spm_error([&] { load_gguf_tokenizer(nan.write("spm_nan")); })
                .find("'tokenizer.ggml.scores': element 264"),
            std::string::npos);
  SpmVocab bos;
  bos.bos = 270;
  EXPECT_NE(spm_error([&] { load_gguf_tokenizer(bos.write("spm_bos")); })
                .find("'tokenizer.ggml.bos_token_id' = 270"),
            std::string::npos);
  SpmVocab types;
  types.types.pop_back();
  EXPECT_NE(spm_error([&] { load_gguf_tokenizer(types.write("spm_types")); })
                .find("tokenizer.ggml.token_type"),
            std::string::npos);
  SpmVocab unreachable;  // "qa" merges from "q" + "a" in llama.cpp, but "q" is no token
  unreachable.add("qa", -5, 1);
  EXPECT_NE(spm_error([&] { load_gguf_tokenizer(unreachable.write("spm_unreach")); })
                .find("\"qa\""),
            std::string::npos);
}

}  // namespace
}  // namespace moex::model
