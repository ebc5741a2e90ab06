// Helpers for the tokenizer unit tests: temporary directories holding handcrafted
// tokenizer.json / tokenizer_config.json files.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace moex::tok_test {

// Removes the directories made by temp_dir when the test program exits.
struct TempDirs {
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};

inline std::filesystem::path temp_dir(const std::string& name) {
  static TempDirs made;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() /
             ("moex_tok_" + std::to_string(getpid()) + "_" + info->name() + "_" + name);
  std::filesystem::create_directories(dir);
  made.dirs.push_back(dir);
  return dir;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Writes dir/tokenizer.json (and tokenizer_config.json when given) and returns dir.
inline std::string write_tokenizer(const std::string& name, const std::string& json,
                                   const std::string& config = "") {
  auto dir = temp_dir(name);
  write_text(dir / "tokenizer.json", json);
  if (!config.empty()) write_text(dir / "tokenizer_config.json", config);
  return dir.string();
}

// The message of the moex::Error that load() throws ("" when it does not throw).
inline std::string load_error(const std::string& dir) {
  try {
    Tokenizer::load(dir);
  } catch (const moex::Error& e) {
    return e.what();
  }
  return "";
}

// A small SentencePiece-style (Mixtral-like) tokenizer.json; `model_extra` adds fields to
// the model, `tail` top-level fields. A top-level field in `tail` (`, "decoder": ...`) replaces
// the base's, as "dropout" in `model_extra` does the model's: tokenizer.json may not repeat a
// key there.
inline std::string sp_json(const std::string& model_extra = "", const std::string& tail = "") {
  const std::pair<const char*, const char*> top[] = {
      {"version", R"("1.0")"},
      {"added_tokens", R"([
    {"id": 0, "content": "<unk>", "special": true, "normalized": false},
    {"id": 1, "content": "<s>", "special": true, "normalized": false},
    {"id": 2, "content": "</s>", "special": true, "normalized": false}])"},
      {"normalizer", R"({"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})"},
      {"pre_tokenizer", "null"},
      {"post_processor", R"({"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})"},
      {"decoder", R"({"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})"},
  };
  const auto given = [](const std::string& text, const char* key) {
    return text.find(std::string("\"") + key + "\":") != std::string::npos;
  };
  std::string out = "{";
  for (const auto& [key, value] : top)
    if (!given(tail, key)) out += std::string("\"") + key + "\": " + value + ",\n  ";
  out += std::string(R"("model": {"type": "BPE",)") +
         (given(model_extra, "dropout") ? "" : R"( "dropout": null,)") +
         R"( "unk_token": "<unk>", "fuse_unk": true,
    "byte_fallback": true,)" +
         model_extra + R"(
    "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0xC3>": 3, "<0xA9>": 4, "<0xE2>": 5,
              "<0x82>": 6, "<0xAC>": 7,
              "\u2581": 8, "a": 9, "b": 10, "c": 11, "\u2581a": 12, "bc": 13, "\u2581abc": 14,
              "ab": 15},
    "merges": ["b c", "\u2581 a", "\u2581a bc", "a b"]})";
  return out + tail + "}";
}

}  // namespace moex::tok_test
