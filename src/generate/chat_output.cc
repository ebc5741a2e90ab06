// add_chat_output_parsers (see chat_output.h).
#include "generate/chat_output.h"

#include "generate/harmony.h"

namespace moex::generate {

std::vector<std::string> add_chat_output_parsers(OutputParserChain& chain,
                                                 const ChatOutputOptions& o) {
  if (o.tool_format == ToolCallFormat::kHarmony) {  // one parser for channels and calls
    chain.add(make_harmony_parser({.reasoning = o.reasoning != ReasoningFormat::kNone,
                                   .tool_calls = o.parse_tools,
                                   .parallel = o.parallel_tool_calls}));
    std::vector<std::string> keep = tool_call_special_markers(ToolCallFormat::kHarmony);
    return keep;
  }
  std::vector<std::string> keep;
  if (o.reasoning == ReasoningFormat::kThink) {
    chain.add(make_think_parser(o.thinking_open));
    keep = {"<think>", "</think>"};
  }
  if (o.parse_tools && o.tool_format != ToolCallFormat::kNone) {
    chain.add(make_tool_call_parser(
        o.tool_format, {.schemas = ToolSchemas(o.tools), .parallel = o.parallel_tool_calls}));
    for (std::string& m : tool_call_special_markers(o.tool_format)) keep.push_back(std::move(m));
  }
  return keep;
}

}  // namespace moex::generate
