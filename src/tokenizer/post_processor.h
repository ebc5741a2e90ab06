// The tokenizer.json "post_processor" section, single-sequence case: TemplateProcessing,
// RobertaProcessing, BertProcessing, ByteLevel (ids unchanged) and Sequence. Reduced to the
// special-token ids placed before and after the encoded text when add_special is true.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"

namespace moex::tok {

struct SpecialAffixes {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

// Parses a post_processor object (j may be null: no affixes); Sequences may nest
// kMaxSequenceDepth deep.
SpecialAffixes parse_post_processor(const Json& j, const std::string& where);

}  // namespace moex::tok
