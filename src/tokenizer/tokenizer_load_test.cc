// Unit tests: malformed or unsupported tokenizer files fail with moex::Error naming the file
// and the field; tokenizer_config.json / generation_config.json special tokens are read.
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"

namespace moex {
namespace {

using tok_test::load_error;
using tok_test::sp_json;
using tok_test::write_tokenizer;

void expect_error(const std::string& name, const std::string& json, const std::string& field,
                  const std::string& config = "") {
  const std::string msg = load_error(write_tokenizer(name, json, config));
  EXPECT_NE(msg, "") << name << ": loaded without error";
  EXPECT_NE(msg.find(field), std::string::npos) << name << ": \"" << msg << "\" lacks " << field;
}

TEST(TokenizerLoad, MalformedFilesNameTheField) {
  expect_error("nofile", "", "tokenizer.json: invalid JSON");
  expect_error("notobj", "[1, 2]", "tokenizer.json: expected an object");
  expect_error("nomodel", R"({"normalizer": null})", "tokenizer.json: model: missing");
  expect_error("wordpiece", R"({"model": {"type": "WordPiece", "vocab": {}}})",
               "model.type: unsupported model type \"WordPiece\"");
  expect_error("novocab", R"({"model": {"type": "BPE", "merges": []}})", "model.vocab: missing");
  expect_error("badid", R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})",
               "model.vocab[\"a\"]: expected an integer");
  expect_error("badmerge", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})",
               "model.merges[0]: token \"b\" is not in model.vocab");
  expect_error("merge3", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a a a"]}})",
               "model.merges[0]: expected \"left right\"");
  expect_error("unk", R"({"model": {"type": "BPE", "vocab": {}, "merges": [], "unk_token": "?"}})",
               "model.unk_token");
  expect_error("normtype", sp_json("", R"(, "normalizer": {"type": "Lowercase"})"),
               "normalizer.type: unsupported normalizer type \"Lowercase\"");
  expect_error("regex", sp_json("", R"(, "pre_tokenizer": {"type": "Split",
      "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})"),
               "pre_tokenizer.pattern.Regex: regex does not compile");
  expect_error("behavior", sp_json("", R"(, "pre_tokenizer": {"type": "Sequence", "pretokenizers":
      [{"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"}]})"),
               "pre_tokenizer.pretokenizers[0].behavior: unknown split behavior");
  expect_error("dectype", sp_json("", R"(, "decoder": {"type": "WordPiece"})"),
               "decoder.type: unsupported decoder type");
  expect_error("added", sp_json("", R"(, "added_tokens": [{"id": 5}])"),
               "added_tokens[0].content: missing");
  expect_error("template", sp_json("", R"(, "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<bos>"}}, {"Sequence": {"id": "A"}}],
      "special_tokens": {}})"), "post_processor.special_tokens: no entry for \"<bos>\"");
  expect_error("dropout", sp_json(R"( "dropout": 0.1,)"), "model.dropout");
  expect_error("cfgbos", sp_json(), "tokenizer_config.json: bos_token: token \"<nope>\"",
               R"({"bos_token": "<nope>"})");
  expect_error("cfgtype", sp_json(), "tokenizer_config.json: eos_token: expected a string",
               R"({"eos_token": 7})");
  EXPECT_NE(load_error("/nonexistent/dir").find("tokenizer file not found"), std::string::npos);
}

TEST(TokenizerLoad, SpecialTokensFromConfigs) {
  const std::string dir = write_tokenizer(
      "cfg", sp_json(), R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  tok_test::write_text(std::filesystem::path(dir) / "generation_config.json",
                       R"({"eos_token_id": [2, 14]})");
  const Tokenizer t = Tokenizer::load(dir);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{2, 14}));
  // Loading the file path directly finds the configs beside it.
  EXPECT_EQ(Tokenizer::load(dir + "/tokenizer.json").bos_id(), 1);
}

TEST(TokenizerLoad, AddBosFromConfigWhenThereIsNoPostProcessor) {
  const std::string dir = write_tokenizer(
      "addbos", sp_json("", R"(, "post_processor": null)"),
      R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true, "add_eos_token": true})");
  EXPECT_EQ(Tokenizer::load(dir).encode("abc"), (std::vector<int32_t>{1, 14, 2}));
}

}  // namespace
}  // namespace moex
