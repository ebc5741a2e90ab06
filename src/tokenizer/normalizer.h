// The tokenizer.json "normalizer" section: NFC, Prepend, Replace (string or regex pattern),
// Strip and Sequence of those (what the MoE families use); other types are a clear error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/regex_split.h"

namespace moex::tok {

class Normalizer {
 public:
  // Parses one normalizer object; `where` names it (e.g. "tokenizer.json: normalizer").
  // Sequences may nest kMaxSequenceDepth deep.
  static std::unique_ptr<Normalizer> from_json(const Json& j, const std::string& where);

  // Normalizes s in place (s is valid UTF-8 and stays so).
  void normalize(std::string& s) const;

 private:
  // `depth`: how many Sequences enclose j.
  static std::unique_ptr<Normalizer> parse(const Json& j, const std::string& where, int depth);

  enum class Kind { kNfc, kPrepend, kReplace, kStrip, kSequence };
  Kind kind_ = Kind::kSequence;
  std::string text_;     // Prepend: what to prepend; Replace: the replacement
  std::string literal_;  // Replace with a String pattern
  std::unique_ptr<Regex> regex_;  // Replace with a Regex pattern
  bool strip_left_ = false, strip_right_ = false;
  std::vector<std::unique_ptr<Normalizer>> children_;
};

// Strips Unicode White_Space from the ends of s (used by Strip normalizer and decoders).
void strip_whitespace(std::string& s, bool left, bool right);

}  // namespace moex::tok
