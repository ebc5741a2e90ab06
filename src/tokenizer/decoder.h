// The tokenizer.json "decoder" section: ByteLevel, Metaspace, Replace, ByteFallback, Fuse,
// Strip and Sequence, applied to the token strings of an id sequence as the reference does
// (a chain of per-token steps, then concatenation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"

namespace moex::tok {

class Decoder {
 public:
  // Parses a decoder object (a Sequence is flattened into steps; Sequences may nest
  // kMaxSequenceDepth deep).
  static std::unique_ptr<Decoder> from_json(const Json& j, const std::string& where);
  ~Decoder();

  // Decodes token strings to text (valid UTF-8).
  std::string decode(std::vector<std::string> tokens) const;

  // True when the decoder is exactly one ByteLevel step (lets the caller use a fast path).
  bool is_plain_byte_level() const;

 private:
  struct Step;
  // `depth`: how many Sequences enclose j (bounded by kMaxSequenceDepth).
  static void parse_into(const Json& j, const std::string& where, int depth,
                         std::vector<std::unique_ptr<Step>>& steps);
  void run(const Step& st, std::vector<std::string>& tokens) const;
  std::vector<std::unique_ptr<Step>> steps_;
};

}  // namespace moex::tok
