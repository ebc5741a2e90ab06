// The tokenizer.json "pre_tokenizer" section: Split (regex or string, all five behaviors,
// invert), ByteLevel, Metaspace, Digits, and Sequence of those. A normalized piece of text
// becomes a list of words (spans into a buffer) that the BPE model encodes one by one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/regex_split.h"

namespace moex::tok {

struct WordSpan {
  size_t begin = 0;
  size_t end = 0;
  bool at_start = false;  // starts at offset 0 of the original text (Metaspace "first")
};

struct Words {
  std::string buf;
  std::vector<WordSpan> spans;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Parses a pre_tokenizer object (a Sequence is flattened into stages; Sequences may nest
  // kMaxSequenceDepth deep).
  static std::unique_ptr<PreTokenizer> from_json(const Json& j, const std::string& where);
  ~PreTokenizer();

  // Splits/rewrites the words in place.
  void apply(Words& w) const;

  // True when the last stage is ByteLevel: the words are then raw bytes and the model maps
  // them through the byte-to-unicode table itself (saves building the mapped strings).
  bool model_maps_bytes() const { return model_maps_bytes_; }

 private:
  struct Stage;
  // `depth`: how many Sequences enclose j (bounded by kMaxSequenceDepth).
  static void parse_into(const Json& j, const std::string& where, int depth,
                         std::vector<std::unique_ptr<Stage>>& stages);
  std::vector<std::unique_ptr<Stage>> stages_;
  bool model_maps_bytes_ = false;
};

// Splits each span by the matches of `re` (or by its gaps when invert), combining pieces
// as `behavior` says; exposed for tests.
void split_words(Words& w, const Regex& re, SplitBehavior behavior, bool invert);

}  // namespace moex::tok
