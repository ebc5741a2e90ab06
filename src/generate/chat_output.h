// The parsers a chat answer goes through after the stop strings: reasoning (<think> or
// harmony's analysis channel) and tool calls in the format of the model's chat template.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/output_parser.h"
#include "generate/reasoning.h"
#include "generate/tool_calls.h"

namespace moex::generate {

struct ChatOutputOptions {
  ToolCallFormat tool_format = ToolCallFormat::kNone;  // the template's (kHarmony: gpt-oss)
  ReasoningFormat reasoning = ReasoningFormat::kNone;  // the template's, kNone to keep it content
  bool parse_tools = false;  // the request gave tools and tool_choice is not "none"
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // the request's `tools`
  bool parallel_tool_calls = true;
  bool thinking_open = false;  // the prompt ends inside <think> (prompt_opens_thinking)
};

// Appends the parsers `o` asks for to `chain`; returns the special tokens' texts the
// detokenizer must keep for them (their markers), empty when none.
std::vector<std::string> add_chat_output_parsers(OutputParserChain& chain,
                                                 const ChatOutputOptions& o);

}  // namespace moex::generate
