// The tokenizer and chat template of a GGUF file (tokenizer.ggml.*, tokenizer.chat_template),
// on a four-token byte-level vocabulary written key by key.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "io/gguf/gguf_test_util.h"
#include "model/gguf/gguf_model.h"

namespace moex::model {
namespace {

using gguf::testing::Bytes;

struct Vocab {
  std::string pre = "qwen2", model = "gpt2";
  std::vector<std::string> tokens = {"a", "b", "ab", "<|end|>"};
  std::vector<int32_t> types = {1, 1, 1, 3};
  std::vector<std::string> merges = {"a b"};
  bool with_template = true;

  std::string write(const std::string& name) const {
    Bytes b;
    const uint64_t n_kv = 6 + (with_template ? 1 : 0);
    b.header(0, n_kv);
    b.kv_str("general.architecture", "qwen3moe");
    b.kv_str("tokenizer.ggml.model", model);
    b.kv_str("tokenizer.ggml.pre", pre);
    b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(tokens.size());
    for (const std::string& t : tokens) b.str(t);
    b.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(types.size());
    for (int32_t t : types) b.u32(uint32_t(t));
    b.str("tokenizer.ggml.merges").u32(9).u32(8).u64(merges.size());
    for (const std::string& m : merges) b.str(m);
    if (with_template) b.kv_str("tokenizer.chat_template", "{{ messages[0]['content'] }}");
    b.pad_to(32);
    const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
    std::ofstream(path, std::ios::binary) << b.out;
    return path;
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufTokenizer, EncodesWithMergesAndSpecialTokens) {
  const std::string path = Vocab().write("tok");
  const Tokenizer t = load_gguf_tokenizer(path);
  EXPECT_EQ(t.encode("abab<|end|>a", true), (std::vector<int32_t>{2, 2, 3, 0}));
  EXPECT_EQ(t.decode({2, 1}, false), "abb");
  EXPECT_TRUE(t.is_special(3));
  EXPECT_EQ(load_model_tokenizer(path).encode("ba", true), (std::vector<int32_t>{1, 0}));
}

TEST(GgufTokenizer, ChatTemplateFromMetadata) {
  const std::string path = Vocab().write("tmpl");
  const chat::ChatTemplateSource s = load_model_chat_template(path, false);
  EXPECT_EQ(s.source, "{{ messages[0]['content'] }}");
  EXPECT_NE(s.origin.find("tokenizer.chat_template"), std::string::npos);
  Vocab v;
  v.with_template = false;
  const std::string none = v.write("no_tmpl");
  EXPECT_NE(error_of([&] { load_gguf_chat_template(none, false); })
                .find("key 'tokenizer.chat_template' is missing"),
            std::string::npos);
}

TEST(GgufTokenizer, RefusalsNameTheKey) {
  Vocab bert;
  bert.model = "bert";
  EXPECT_NE(error_of([&] { load_gguf_tokenizer(bert.write("bert")); })
                .find("'tokenizer.ggml.model' = \"bert\""),
            std::string::npos);
  Vocab pre;
  pre.pre = "default";
  EXPECT_NE(error_of([&] { load_gguf_tokenizer(pre.write("pre")); })
                .find("'tokenizer.ggml.pre' = \"default\""),
            std::string::npos);
  Vocab types;
  types.types = {1, 1};
  EXPECT_NE(error_of([&] { load_gguf_tokenizer(types.write("types")); })
                .find("tokenizer.ggml.token_type"),
            std::string::npos);
  Vocab merge;
  merge.merges = {"a c"};
  EXPECT_NE(error_of([&] { load_gguf_tokenizer(merge.write("merge")); }).find("\"c\""),
            std::string::npos);
  Vocab utf8;
  utf8.tokens[1] = std::string("\xff", 1);
  EXPECT_NE(error_of([&] { load_gguf_tokenizer(utf8.write("utf8")); }).find("token 1"),
            std::string::npos);
}

}  // namespace
}  // namespace moex::model
