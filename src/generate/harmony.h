// gpt-oss's harmony output: messages `<|channel|>C[ to=R][ <|constrain|>json]<|message|>BODY`
// ended by <|end|>, <|call|> or <|return|>, the next opened by <|start|>assistant. The analysis
// channel is reasoning, final (and commentary without a recipient) content, and a message to
// `functions.NAME` a tool call whose body is its JSON arguments.
#pragma once

#include <memory>

#include "generate/output_parser.h"
#include "generate/tool_calls.h"

namespace moex::generate {

struct HarmonyOptions {
  bool reasoning = true;    // false: the analysis channel is content (--reasoning-format none)
  bool tool_calls = true;   // false: a message to a function is content (no tools asked for)
  bool parallel = true;     // false: the output ends after the first call
};

std::unique_ptr<OutputParser> make_harmony_parser(HarmonyOptions options);

}  // namespace moex::generate
