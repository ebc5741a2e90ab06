// Synthetic byte-level BPE tokenizer writer (see synthetic_vocab.h). Merges extend tokens
// breadth-first by one character of a fixed alphabet (space marker + letters by frequency),
// so every merge's parts and result exist and ranks grow with token length.
#include "tokenizer/synthetic_vocab.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/atomic_write.h"
#include "core/error.h"
#include "tokenizer/byte_level.h"

namespace moex {

namespace {

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string special_name(int i) {
  static const char* kFirst[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  return i < 3 ? kFirst[i] : "<|special_" + std::to_string(i) + "|>";
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  write_file_plain(p.string(), text, "synthetic tokenizer file");
}

constexpr const char* kSplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

}  // namespace

void write_synthetic_tokenizer(const std::string& dir, const SyntheticTokenizerArgs& args) {
  const int64_t n_special = args.num_special_tokens;
  if (n_special < 1 || n_special > 1000) {
    fail("write_synthetic_tokenizer: num_special_tokens must be in [1, 1000], got ", n_special);
  }
  if (args.vocab_size < 256 + n_special || args.vocab_size > 4'000'000) {
    fail("write_synthetic_tokenizer: vocab_size must be in [", 256 + n_special,
         ", 4000000], got ", args.vocab_size);
  }
  const int64_t n_merges = args.vocab_size - 256 - n_special;

  // Token strings in byte-level form; ids 0..255 are the bytes in order.
  std::vector<std::string> tokens;
  tokens.reserve(static_cast<size_t>(256 + n_merges));
  const auto& bl = tok::byte_to_utf8_table();
  for (int b = 0; b < 256; ++b) tokens.push_back(bl[b]);
  const std::string alphabet_bytes = " etaoinsrhldcumfpgwybvkxjqz";
  std::vector<std::string> alphabet;
  for (unsigned char c : alphabet_bytes) alphabet.push_back(bl[c]);

  std::unordered_set<std::string> seen(tokens.begin(), tokens.end());
  seen.reserve(static_cast<size_t>(2 * (256 + n_merges)));
  std::vector<std::pair<int64_t, int64_t>> merges;  // (left id, right id)
  merges.reserve(static_cast<size_t>(n_merges));
  // Breadth-first: extend every token of the frontier by every alphabet character.
  std::vector<int64_t> frontier;
  for (unsigned char c : alphabet_bytes) frontier.push_back(c);
  while (static_cast<int64_t>(merges.size()) < n_merges) {
    std::vector<int64_t> next;
    for (int64_t left : frontier) {
      for (unsigned char c : alphabet_bytes) {
        if (static_cast<int64_t>(merges.size()) == n_merges) break;
        std::string t = tokens[left] + bl[c];
        if (!seen.insert(t).second) continue;
        merges.emplace_back(left, c);
        next.push_back(static_cast<int64_t>(tokens.size()));
        tokens.push_back(std::move(t));
      }
    }
    frontier.swap(next);
  }

  const int64_t first_special = 256 + n_merges;
  std::string js;
  js.reserve(tokens.size() * 40);
  js += "{\n\"version\": \"1.0\",\n\"truncation\": null,\n\"padding\": null,\n\"added_tokens\": [";
  for (int64_t i = 0; i < n_special; ++i) {
    js += i ? ",\n" : "\n";
    js += "{\"id\": " + std::to_string(first_special + i) + ", \"content\": ";
    append_json_string(js, special_name(static_cast<int>(i)));
    js += ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
          "\"normalized\": false, \"special\": true}";
  }
  js += "\n],\n\"normalizer\": {\"type\": \"NFC\"},\n";
  js += "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
        "\"pattern\": {\"Regex\": ";
  append_json_string(js, kSplitPattern);
  js += "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
        "\"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]},\n";
  js += "\"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
        "\"trim_offsets\": false, \"use_regex\": false},\n";
  js += "\"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
        "\"trim_offsets\": false, \"use_regex\": false},\n";
  js += "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
        "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, "
        "\"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n\"vocab\": {";
  for (size_t i = 0; i < tokens.size(); ++i) {
    js += i ? ",\n" : "\n";
    append_json_string(js, tokens[i]);
    js += ": " + std::to_string(i);
  }
  js += "\n},\n\"merges\": [";
  for (size_t i = 0; i < merges.size(); ++i) {
    js += i ? ",\n[" : "\n[";
    append_json_string(js, tokens[merges[i].first]);
    js += ", ";
    append_json_string(js, tokens[merges[i].second]);
    js += "]";
  }
  js += "\n]}\n}\n";

  std::string cfg = "{\n\"tokenizer_class\": \"PreTrainedTokenizerFast\",\n\"bos_token\": null,\n";
  cfg += "\"eos_token\": \"<|endoftext|>\",\n\"pad_token\": \"<|endoftext|>\",\n";
  cfg += "\"unk_token\": null,\n\"clean_up_tokenization_spaces\": false,\n";
  cfg += "\"model_max_length\": 131072,\n\"added_tokens_decoder\": {";
  for (int64_t i = 0; i < n_special; ++i) {
    cfg += i ? ",\n" : "\n";
    cfg += "\"" + std::to_string(first_special + i) + "\": {\"content\": ";
    append_json_string(cfg, special_name(static_cast<int>(i)));
    cfg += ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
           "\"normalized\": false, \"special\": true}";
  }
  cfg += "\n}\n}\n";

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir, ": cannot create directory: ", ec.message());
  write_file(std::filesystem::path(dir) / "tokenizer.json", js);
  write_file(std::filesystem::path(dir) / "tokenizer_config.json", cfg);
}

}  // namespace moex
