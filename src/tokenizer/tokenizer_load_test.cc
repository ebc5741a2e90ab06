// Unit tests: malformed or unsupported tokenizer files fail with moex::Error naming the file
// and the field; tokenizer_config.json special tokens are read.
#include <gtest/gtest.h>

#include <functional>

#include "core/testing/fifo_probe.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
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
  expect_error("nul", sp_json() + std::string("\0{", 2), "tokenizer.json: NUL byte at offset");
  expect_error("notobj", "[1, 2]", "tokenizer.json: expected an object");
  expect_error("nomodel", R"({"normalizer": null})", "tokenizer.json: model: missing");
  expect_error("wordpiece", R"({"model": {"type": "WordPiece", "vocab": {}}})",
               "model.type: unsupported model type \"WordPiece\"");
  expect_error("novocab", R"({"model": {"type": "BPE", "merges": []}})", "model.vocab: missing");
  expect_error("badid", R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})",
               "model.vocab[\"a\"]: expected an integer");
  expect_error("sparseid", R"({"model": {"type": "BPE", "vocab": {"a": 300000000}, "merges": []}})",
               "model.vocab: id 300000000 leaves more than 1048576 unused ids above the 1 entries");
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

// A key repeated in the top-level object or in a component is refused, naming the key: a
// second "model" used to replace the first silently (an empty vocabulary encoded every prompt
// to no tokens). Repeated keys deeper down (a vocab map) keep the last, as before.
TEST(TokenizerLoad, RepeatedKeysAtTheTopAndInComponentsRefused) {
  const std::string empty_model = R"(, "model": {"type": "BPE", "vocab": {}, "merges": []})";
  std::string two_models = sp_json();
  two_models.insert(two_models.size() - 1, empty_model);
  expect_error("dupmodel", two_models,
               "tokenizer.json: duplicate JSON key 'model' in the top-level object");
  expect_error("dupdecoder", sp_json("", R"(, "decoder": null, "decoder": {"type": "Fuse"})"),
               "duplicate JSON key 'decoder' in the top-level object");
  expect_error("duptype", sp_json(R"( "type": "BPE",)"), "duplicate JSON key 'type' in model;");
  expect_error("dupnorm", sp_json("", R"(, "normalizer": {"type": "NFC", "type": "NFKC"})"),
               "duplicate JSON key 'type' in normalizer;");
  // Deeper objects may repeat a key: the last one is read.
  std::string dup_vocab = sp_json();
  const std::string entry = R"("ab": 15})";
  dup_vocab.replace(dup_vocab.find(entry), entry.size(), R"("ab": 3, "ab": 15})");
  EXPECT_EQ(load_error(write_tokenizer("dupvocab", dup_vocab)), "");
  EXPECT_EQ(Tokenizer::load(write_tokenizer("dupvocab2", dup_vocab)).token_to_id("ab"), 15);
}

// Ids may leave up to kMaxVocabIdGap unused ids (the table stays bounded); one more fails.
TEST(TokenizerLoad, VocabIdGapBoundIsExact) {
  const int64_t last_ok = 1 + tok::BpeModel::kMaxVocabIdGap - 1;
  const auto vocab = [](int64_t id) {
    return R"({"model": {"type": "BPE", "vocab": {"a": )" + std::to_string(id) +
           R"(}, "merges": []}})";
  };
  EXPECT_EQ(load_error(write_tokenizer("gap_ok", vocab(last_ok))), "");
  EXPECT_NE(load_error(write_tokenizer("gap_over", vocab(last_ok + 1))).find("unused ids"),
            std::string::npos);
}

// `levels` Sequences (each holding its one child under `list_key`) around `leaf`, as text.
std::string nested_text(const std::string& list_key, int levels, const std::string& leaf) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += R"({"type": "Sequence", ")" + list_key + R"(": [)";
  s += leaf;
  for (int i = 0; i < levels; ++i) s += "]}";
  return s;
}

// The same built in memory (moves only: a deep nlohmann copy would itself recurse).
tok::Json nested_json(const std::string& list_key, int levels, tok::Json leaf) {
  tok::Json j = std::move(leaf);
  for (int i = 0; i < levels; ++i) {
    tok::Json list = tok::Json::array();
    list.push_back(std::move(j));
    tok::Json seq = tok::Json::object();
    seq["type"] = "Sequence";
    seq[list_key] = std::move(list);
    j = std::move(seq);
  }
  return j;
}

// The four sections that may nest Sequences: field, list key, a leaf (the sp_json section
// itself where it has one, so that loading changes nothing), and how many Sequences the leaf
// already holds.
struct NestedSection {
  const char* field;
  const char* list_key;
  const char* leaf;
  int leaf_levels;
};
const NestedSection kNestedSections[] = {
    {"normalizer", "normalizers", R"({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})", 1},
    {"pre_tokenizer", "pretokenizers",
     R"({"type": "Split", "pattern": {"String": "|"}, "behavior": "Isolated"})", 0},
    {"decoder", "decoders", R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})", 1},
    {"post_processor", "processors", R"({"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})", 0},
};

TEST(TokenizerLoad, SequenceNestingWithinTheBoundLoads) {
  const Tokenizer base = Tokenizer::load(write_tokenizer("base", sp_json()));
  const std::vector<int32_t> want = base.encode("ab c");
  for (const NestedSection& s : kNestedSections) {
    const std::string section = nested_text(s.list_key, tok::kMaxSequenceDepth - s.leaf_levels,
                                            s.leaf);
    const std::string dir =
        write_tokenizer(s.field, sp_json("", str_cat(", \"", s.field, "\": ", section)));
    const Tokenizer t = Tokenizer::load(dir);
    EXPECT_EQ(t.encode("ab c"), want) << s.field;
    EXPECT_EQ(t.decode(want), base.decode(want)) << s.field;
  }
}

TEST(TokenizerLoad, SequenceNestedPastTheBoundNamesTheField) {
  for (const NestedSection& s : kNestedSections) {
    const std::string section =
        nested_text(s.list_key, tok::kMaxSequenceDepth + 1 - s.leaf_levels, s.leaf);
    const std::string msg = load_error(
        write_tokenizer(s.field, sp_json("", str_cat(", \"", s.field, "\": ", section))));
    std::string path = str_cat("tokenizer.json: ", s.field);
    for (int i = 0; i < tok::kMaxSequenceDepth; ++i) path += str_cat(".", s.list_key, "[0]");
    EXPECT_NE(msg.find(path + ": Sequence nested more than 16 levels deep"), std::string::npos)
        << s.field << ": " << msg;
  }
}

// 20,000 levels used to recurse until the stack ran out: each loader stops at the bound.
TEST(TokenizerLoad, DeepSequenceInMemoryStopsAtTheBound) {
  constexpr int kDeep = 20000;
  const std::string where = "t.json: x";
  auto expect_bounded = [&](const char* name, const std::function<void()>& parse) {
    try {
      parse();
      ADD_FAILURE() << name << ": parsed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Sequence nested more than 16 levels deep"),
                std::string::npos) << name << ": " << e.what();
    }
  };
  const tok::Json norm = nested_json("normalizers", kDeep, {{"type", "NFC"}});
  expect_bounded("normalizer", [&] { tok::Normalizer::from_json(norm, where); });
  const tok::Json pre = nested_json("pretokenizers", kDeep, {{"type", "Digits"}});
  expect_bounded("pre_tokenizer", [&] { tok::PreTokenizer::from_json(pre, where); });
  const tok::Json dec = nested_json("decoders", kDeep, {{"type", "Fuse"}});
  expect_bounded("decoder", [&] { tok::Decoder::from_json(dec, where); });
  const tok::Json post = nested_json("processors", kDeep, {{"type", "ByteLevel"}});
  expect_bounded("post_processor", [&] { tok::parse_post_processor(post, where); });
}

// The same 20,000 levels in a file are refused by the parser already (so nothing walks them).
TEST(TokenizerLoad, DeepJsonRejectedWhileParsing) {
  const std::string deep = nested_text("pretokenizers", 20000, R"({"type": "Digits"})");
  std::string msg = load_error(write_tokenizer("pre", sp_json("", ", \"pre_tokenizer\": " + deep)));
  EXPECT_NE(msg.find("tokenizer.json: JSON nesting deeper than 64 levels"), std::string::npos)
      << msg;
  const std::string arrays = std::string(20000, '[') + std::string(20000, ']');
  msg = load_error(write_tokenizer("cfg", sp_json(), "{\"x\": " + arrays + "}"));
  EXPECT_NE(msg.find("tokenizer_config.json: JSON nesting deeper than 64 levels"),
            std::string::npos) << msg;
  // Nesting well past any real file's is still fine.
  const std::string ok = std::string(62, '[') + std::string(62, ']');
  EXPECT_EQ(load_error(write_tokenizer("ok", sp_json(), "{\"x\": " + ok + "}")), "");
}

// Paths std::filesystem cannot resolve are a moex::Error naming the path (they used to escape
// as std::filesystem_error).
TEST(TokenizerLoad, SymlinkLoopsNamed) {
  const auto dir = tok_test::temp_dir("loops");
  const auto loop = dir / "loop";
  std::filesystem::create_symlink(loop, loop);
  std::string msg = load_error(loop.string());
  EXPECT_NE(msg.find(loop.string() + ": cannot access"), std::string::npos)
      << msg;
  msg = load_error((loop / "tokenizer.json").string());
  EXPECT_NE(msg.find("loop/tokenizer.json: cannot access"), std::string::npos)
      << msg;
  // tokenizer.json fine, tokenizer_config.json a loop: named too, not skipped as missing.
  const std::string cfg_loop = write_tokenizer("cfgloop", sp_json());
  const auto cfg = std::filesystem::path(cfg_loop) / "tokenizer_config.json";
  std::filesystem::create_symlink(cfg, cfg);
  msg = load_error(cfg_loop);
  EXPECT_NE(msg.find("tokenizer_config.json: cannot access"), std::string::npos) << msg;
}

// tokenizer.json that is not a small regular file: refused before reading (a FIFO used to
// block for a writer, a directory read as an empty file).
TEST(TokenizerLoad, SpecialAndOversizeFilesRefused) {
  namespace fs = std::filesystem;
  const fs::path fifo_dir = tok_test::temp_dir("fifo");
  const auto fifo = moex::testing::probe_fifo((fifo_dir / "tokenizer.json").string(),
                                              [&](const std::string&) {
                                                Tokenizer::load(fifo_dir.string());
                                              });
  EXPECT_TRUE(fifo.returned) << "blocked waiting for a writer";
  EXPECT_NE(fifo.message.find("tokenizer.json: JSON file is a FIFO"), std::string::npos)
      << fifo.message;

  const fs::path as_dir = write_tokenizer("asdir", "");
  fs::remove(as_dir / "tokenizer.json");
  fs::create_directory(as_dir / "tokenizer.json");
  std::string msg = load_error(as_dir.string());
  EXPECT_NE(msg.find("tokenizer.json: JSON file is a directory; expected a regular file"),
            std::string::npos) << msg;

  // Sparse files: the size is refused before anything is read.
  const fs::path big = write_tokenizer("big", sp_json());
  fs::resize_file(big / "tokenizer.json", uintmax_t(tok::kMaxTokenizerJsonBytes) + 1);
  msg = load_error(big.string());
  EXPECT_NE(msg.find("tokenizer.json: JSON file is 268435457 bytes"), std::string::npos) << msg;
  const fs::path big_cfg = write_tokenizer("bigcfg", sp_json(), "{}");
  fs::resize_file(big_cfg / "tokenizer_config.json", uintmax_t(tok::kMaxTokenizerConfigBytes) + 1);
  msg = load_error(big_cfg.string());
  EXPECT_NE(msg.find("tokenizer_config.json: JSON file is 67108865 bytes"), std::string::npos)
      << msg;
}

TEST(TokenizerLoad, UnreadableDirectoryNamed) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: directory permissions do not apply";
  const std::string locked = write_tokenizer("locked", sp_json());
  std::filesystem::permissions(locked, std::filesystem::perms::none);
  const std::string msg = load_error(locked);
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  EXPECT_NE(msg.find("tokenizer.json: cannot access"), std::string::npos)
      << msg;
}

TEST(TokenizerLoad, SpecialTokensFromConfigs) {
  const std::string dir = write_tokenizer(
      "cfg", sp_json(), R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  // generation_config.json is the model's (model/generation_config.h), not the tokenizer's.
  tok_test::write_text(std::filesystem::path(dir) / "generation_config.json",
                       R"({"eos_token_id": [2, 14]})");
  const Tokenizer t = Tokenizer::load(dir);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{2}));
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
