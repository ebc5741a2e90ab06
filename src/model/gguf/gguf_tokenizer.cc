// The tokenizer and chat template of a GGUF file: tokenizer.ggml.* turned into the
// tokenizer.json / tokenizer_config.json objects moex's tokenizer is built from, so that one
// implementation serves both (docs/gguf.md, "The tokenizer").
#include <algorithm>

#include "core/error.h"
#include "io/gguf/gguf_parse.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_model.h"
#include "model/gguf/gguf_tokenizer_vocab.h"

namespace moex::model {
namespace {

using nlohmann::json;

// The Hugging Face pre-tokenizer that llama.cpp's tokenizer.ggml.pre names stand for (llama.cpp
// src/llama-vocab.cpp: the regex per LLAMA_VOCAB_PRE_TYPE, whose comments quote the
// tokenizer.json originals used here). nullopt for a name moex does not map.
std::optional<json> pre_tokenizer(std::string_view pre) {
  const auto split_then_bytes = [](const char* regex) {
    return json{{"type", "Sequence"},
                {"pretokenizers",
                 json::array({json{{"type", "Split"},
                                   {"pattern", {{"Regex", regex}}},
                                   {"behavior", "Isolated"},
                                   {"invert", false}},
                              json{{"type", "ByteLevel"},
                                   {"add_prefix_space", false},
                                   {"trim_offsets", false},
                                   {"use_regex", false}}})}};
  };
  if (pre == "qwen2" || pre == "deepseek-r1-qwen")
    return split_then_bytes(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
        "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3")
    return split_then_bytes(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}"
        "\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  if (pre == "gpt-2")  // GPT-2's own regex, which ByteLevel(use_regex) applies
    return json{{"type", "ByteLevel"},
                {"add_prefix_space", false},
                {"trim_offsets", true},
                {"use_regex", true}};
  return std::nullopt;
}

}  // namespace

namespace gguf_vocab {

std::vector<std::string_view> strings(const gguf::GgufFile& f, const char* key) {
  const gguf::Value& v = f.get_array(key);
  if (v.elem_type != gguf::ValueType::kString)
    fail("GGUF file '", f.path(), "': key '", key, "' is ", gguf::value_type_text(v),
         "; expected an array of strings");
  return v.strings;
}

// ggml's token types (gguf-py TokenType): 1 normal, 2 unknown, 3 control, 4 user-defined,
// 5 unused, 6 byte.
std::vector<int64_t> token_types(const gguf::GgufFile& f, size_t n) {
  const char* key = "tokenizer.ggml.token_type";
  if (!f.find(key)) return std::vector<int64_t>(n, 1);
  const gguf::Value& v = f.get_array(key);
  if (!gguf::is_integer_type(v.elem_type) || v.count != n)
    fail("GGUF file '", f.path(), "': key '", key, "' is ", gguf::value_type_text(v), " of ",
         v.count, " elements; expected ", n, " integers (one per token)");
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = v.scalar_element(i).as_int().value_or(-1);
  return out;
}

json vocab_object(const gguf::GgufFile& f, const std::vector<std::string_view>& tokens) {
  json vocab = json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].empty() || !gguf::is_valid_utf8(tokens[i]))
      fail("GGUF file '", f.path(), "': key 'tokenizer.ggml.tokens': token ", i,
           " is empty or not UTF-8");
    vocab[std::string(tokens[i])] = i;
  }
  return vocab;
}

}  // namespace gguf_vocab

Tokenizer load_gguf_tokenizer(const std::string& path) {
  const std::unique_ptr<gguf::GgufFile> f = gguf::GgufFile::open(path);
  const std::string model(f->get_string("tokenizer.ggml.model"));
  if (model == "llama") return gguf_vocab::spm_tokenizer(*f);
  if (model != "gpt2")
    fail("GGUF file '", path, "': key 'tokenizer.ggml.model' = \"", model, "\": moex reads the "
         "byte-level BPE tokenizer \"gpt2\" and the SentencePiece tokenizer \"llama\" only");
  const std::string pre = f->find("tokenizer.ggml.pre")
                              ? std::string(f->get_string("tokenizer.ggml.pre")) : "";
  const std::optional<json> pt = pre_tokenizer(pre);
  if (!pt)
    fail("GGUF file '", path, "': key 'tokenizer.ggml.pre' = \"", pre, "\": moex maps the "
         "pre-tokenizers qwen2, deepseek-r1-qwen, llama-bpe (llama3, llama-v3) and gpt-2");
  const std::vector<std::string_view> tokens = gguf_vocab::strings(*f, "tokenizer.ggml.tokens");
  const std::vector<int64_t> types = gguf_vocab::token_types(*f, tokens.size());
  json vocab = gguf_vocab::vocab_object(*f, tokens), added = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string text(tokens[i]);
    if (types[i] == 3 || types[i] == 4)
      added.push_back({{"id", i}, {"content", text}, {"special", types[i] == 3},
                       {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", types[i] != 3}});
  }
  json merges = json::array();
  if (f->find("tokenizer.ggml.merges"))
    for (std::string_view m : gguf_vocab::strings(*f, "tokenizer.ggml.merges"))
      merges.push_back(m);
  json tj = {{"model", {{"type", "BPE"}, {"vocab", std::move(vocab)},
                        {"merges", std::move(merges)}, {"byte_fallback", false}}},
             {"pre_tokenizer", *pt},
             {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true},
                          {"trim_offsets", true}, {"use_regex", true}}},
             {"added_tokens", std::move(added)}};
  // bos / eos and add_bos_token as tokenizer_config.json gives them. llama.cpp adds BOS when
  // tokenizer.ggml.add_bos_token says so, else by pre-tokenizer (llama-bpe: yes).
  json cfg = json::object();
  const auto token_key = [&](const char* key, const char* field) {
    if (!f->find(key)) return;
    const int64_t id = f->get_int(key);
    if (id < 0 || size_t(id) >= tokens.size())
      fail("GGUF file '", path, "': key '", key, "' = ", id, ": expected a token id in [0, ",
           tokens.size(), ")");
    cfg[field] = std::string(tokens[size_t(id)]);
  };
  token_key("tokenizer.ggml.bos_token_id", "bos_token");
  token_key("tokenizer.ggml.eos_token_id", "eos_token");
  const bool add_bos = f->find("tokenizer.ggml.add_bos_token")
                           ? f->get_bool("tokenizer.ggml.add_bos_token")
                           : pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
  cfg["add_bos_token"] = add_bos && cfg.contains("bos_token");
  return Tokenizer::from_json(tj, &cfg, path + " (tokenizer.ggml.*)");
}

chat::ChatTemplateSource load_gguf_chat_template(const std::string& path, bool with_tools) {
  const std::unique_ptr<gguf::GgufFile> f = gguf::GgufFile::open(path);
  const char* key = with_tools && f->find("tokenizer.chat_template.tool_use")
                        ? "tokenizer.chat_template.tool_use"
                        : "tokenizer.chat_template";
  if (!f->find(key))
    fail("GGUF file '", path, "': no chat template (key 'tokenizer.chat_template' is missing)");
  chat::ChatTemplateSource out;
  out.source = std::string(f->get_string(key));
  out.origin = str_cat(path, ": ", key);
  const std::vector<std::string_view> tokens =
      f->find("tokenizer.ggml.tokens") ? gguf_vocab::strings(*f, "tokenizer.ggml.tokens")
                                       : std::vector<std::string_view>{};
  for (auto [id_key, name] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token"},
                              std::pair{"tokenizer.ggml.eos_token_id", "eos_token"},
                              std::pair{"tokenizer.ggml.unknown_token_id", "unk_token"},
                              std::pair{"tokenizer.ggml.seperator_token_id", "sep_token"},
                              std::pair{"tokenizer.ggml.padding_token_id", "pad_token"}}) {
    if (!f->find(id_key)) continue;
    const int64_t id = f->get_int(id_key);
    if (id >= 0 && size_t(id) < tokens.size()) out.special_tokens[name] = std::string(tokens[id]);
  }
  return out;
}

}  // namespace moex::model
