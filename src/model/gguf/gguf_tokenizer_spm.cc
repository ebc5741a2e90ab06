// The SentencePiece tokenizer of a GGUF file (tokenizer.ggml.model "llama"), written as the
// tokenizer.json a Llama / Mistral checkpoint carries (a BPE model with byte fallback, a
// normalizer that prepends and escapes spaces, a decoder that undoes it), with merges derived
// from tokenizer.ggml.scores (tokenizer/spm_merges.h). The settings follow llama.cpp's SPM
// tokenizer (src/llama-vocab.cpp); docs/gguf.md, "SentencePiece tokenizers", lists them and
// where moex differs.
#include <cmath>

#include "core/error.h"
#include "io/gguf/gguf_parse.h"
#include "io/gguf/gguf_value.h"
#include "model/gguf/gguf_tokenizer_vocab.h"

namespace moex::model::gguf_vocab {
namespace {

using nlohmann::json;

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space

// tokenizer.ggml.scores: one number per token (llama.cpp takes float32 or int32); absent,
// every score is 0 (llama.cpp's default too).
std::vector<double> scores(const gguf::GgufFile& f, size_t n) {
  const char* key = "tokenizer.ggml.scores";
  if (!f.find(key)) return std::vector<double>(n, 0.0);
  const gguf::Value& v = f.get_array(key);
  const bool numeric = gguf::is_integer_type(v.elem_type) ||
                       v.elem_type == gguf::ValueType::kF32 || v.elem_type == gguf::ValueType::kF64;
  if (!numeric || v.count != n)
    fail("GGUF file '", f.path(), "': key '", key, "' is ", gguf::value_type_text(v), " of ",
         v.count, " elements; expected ", n, " numbers (one per token)");
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const gguf::Value e = v.scalar_element(i);
    const std::optional<double> x =
        e.as_float() ? e.as_float() : e.as_int() ? std::optional<double>(double(*e.as_int()))
                                                 : std::nullopt;
    if (!x || std::isnan(*x))
      fail("GGUF file '", f.path(), "': key '", key, "': element ", i, " is not a number");
    out[i] = *x;
  }
  return out;
}

// A token id key: the key's value, which must name a token, or llama.cpp's default for SPM
// vocabularies when the key is absent (nullopt when that default is outside the vocabulary).
std::optional<int64_t> token_id(const gguf::GgufFile& f, const char* key, int64_t def,
                                size_t n) {
  if (!f.find(key)) return def < int64_t(n) ? std::optional<int64_t>(def) : std::nullopt;
  const int64_t id = f.get_int(key);
  if (id < 0 || size_t(id) >= n)
    fail("GGUF file '", f.path(), "': key '", key, "' = ", id, ": expected a token id in [0, ",
         n, ")");
  return id;
}

bool flag(const gguf::GgufFile& f, const char* key, bool def) {
  return f.find(key) ? f.get_bool(key) : def;
}

json replace(const std::string& from, const std::string& to) {
  return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

}  // namespace

Tokenizer spm_tokenizer(const gguf::GgufFile& f) {
  const std::string& path = f.path();
  const std::vector<std::string_view> tokens = strings(f, "tokenizer.ggml.tokens");
  if (tokens.empty()) fail("GGUF file '", path, "': key 'tokenizer.ggml.tokens' is empty");
  const std::vector<int64_t> types = token_types(f, tokens.size());
  const std::vector<double> score = scores(f, tokens.size());
  json vocab = vocab_object(f, tokens), added = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string text(tokens[i]);
    // llama.cpp matches unknown, control and user-defined tokens in the raw text before the
    // SentencePiece model runs; with parse_special off, user-defined ones only.
    if (types[i] == 2 || types[i] == 3 || types[i] == 4)
      added.push_back({{"id", i}, {"content", text}, {"special", types[i] != 4},
                       {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}});
  }
  json model = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", json::array()},
                {"merge_scores", score}, {"byte_fallback", true}, {"fuse_unk", false}};
  if (const auto unk = token_id(f, "tokenizer.ggml.unknown_token_id", 0, tokens.size()))
    model["unk_token"] = std::string(tokens[size_t(*unk)]);
  // llama.cpp puts a space before every piece of text that starts the input or follows a
  // special token (add_space_prefix, default on), then writes every space as U+2581; its
  // detokenizer drops the space the first token starts with.
  const bool space_prefix = flag(f, "tokenizer.ggml.add_space_prefix", true);
  json normalizer = replace(" ", kSpace), decoder = json::array();
  if (space_prefix)
    normalizer = {{"type", "Sequence"},
                  {"normalizers", json::array({json{{"type", "Prepend"}, {"prepend", kSpace}},
                                               normalizer})}};
  decoder.push_back(replace(kSpace, " "));
  decoder.push_back({{"type", "ByteFallback"}});
  decoder.push_back({{"type", "Fuse"}});
  if (space_prefix)
    decoder.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  json tj = {{"model", std::move(model)},
             {"normalizer", std::move(normalizer)},
             {"decoder", {{"type", "Sequence"}, {"decoders", std::move(decoder)}}},
             {"added_tokens", std::move(added)}};
  // BOS and EOS default to ids 1 and 2 (llama.cpp's SPM defaults); BOS is added unless
  // tokenizer.ggml.add_bos_token says not to, EOS only when tokenizer.ggml.add_eos_token says so.
  json cfg = json::object();
  const auto bos = token_id(f, "tokenizer.ggml.bos_token_id", 1, tokens.size());
  const auto eos = token_id(f, "tokenizer.ggml.eos_token_id", 2, tokens.size());
  if (bos) cfg["bos_token"] = std::string(tokens[size_t(*bos)]);
  if (eos) cfg["eos_token"] = std::string(tokens[size_t(*eos)]);
  cfg["add_bos_token"] = bos && flag(f, "tokenizer.ggml.add_bos_token", true);
  cfg["add_eos_token"] = eos && flag(f, "tokenizer.ggml.add_eos_token", false);
  return Tokenizer::from_json(tj, &cfg, path + " (tokenizer.ggml.*, SentencePiece)");
}

}  // namespace moex::model::gguf_vocab
