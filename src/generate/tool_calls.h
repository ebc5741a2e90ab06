// Tool calls in a model's output: the output formats moex parses (one per chat-template
// family), which one a template uses, and the parser that turns a format's call blocks into
// tool-call events (output_parser.h). docs/serve.md lists the families and their formats.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "generate/output_parser.h"

namespace moex::generate {

enum class ToolCallFormat {
  kNone,        // the template shows no tool-call syntax moex knows
  kHermes,      // <tool_call>{"name", "arguments"}</tool_call> (Qwen2.5, Qwen3, Hermes)
  kQwen3Coder,  // <tool_call><function=NAME><parameter=P>V</parameter></function></tool_call>
  kGlm45,       // <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>
  kMiniMaxM2,   // <minimax:tool_call><invoke name="N"><parameter name="P">V</parameter>...
  kDeepSeekV3,  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>...<｜tool▁sep｜>...
  kKimiK2,      // <|tool_calls_section_begin|><|tool_call_begin|>functions.N:0<|tool_call_argument_begin|>{}
  kHarmony,     // gpt-oss: <|channel|>commentary to=functions.N <|constrain|>json<|message|>{}
};
const char* tool_call_format_name(ToolCallFormat f);
// The format a chat template's source writes tool calls in (what its assistant turns show).
ToolCallFormat detect_tool_call_format(std::string_view template_source);

// deepseek_v3's two shapes: true when the template writes V3/R1's calls (`function`, the
// separator, the name, then the arguments in a ```json code block), false for V3.1's bare
// `NAME<｜tool▁sep｜>ARGS`. The parser reads both; a grammar writes the template's.
bool deepseek_calls_in_code_block(std::string_view template_source);

// One parsed call: arguments as JSON text (an object).
struct ParsedToolCall {
  std::string name;
  std::string arguments;
};

// The request's tools by name with their parameter schemas: the XML formats write every
// value as text, and a schema type other than "string" says to read it as JSON.
class ToolSchemas {
 public:
  ToolSchemas() = default;
  // `tools`: OpenAI's [{"type": "function", "function": {"name", "parameters"}}, ...].
  explicit ToolSchemas(const nlohmann::ordered_json& tools);
  // A parameter's value text as JSON: a string unless the schema types it otherwise and the
  // text parses as JSON.
  nlohmann::ordered_json value(std::string_view function, std::string_view param,
                               std::string_view text) const;

 private:
  nlohmann::ordered_json tools_ = nlohmann::ordered_json::array();
};

// The calls of one block (the text between a format's begin and end markers); false when the
// block is malformed (its text then stays content).
bool parse_tool_call_block(ToolCallFormat f, std::string_view block, const ToolSchemas& schemas,
                           std::vector<ParsedToolCall>& calls);

struct ToolCallMarkers {
  std::string begin, end;
};
ToolCallMarkers tool_call_markers(ToolCallFormat f);  // not for kNone or kHarmony

// Special tokens a format's markers are written with: the detokenizer must keep them.
std::vector<std::string> tool_call_special_markers(ToolCallFormat f);

struct ToolCallOptions {
  ToolSchemas schemas;
  bool parallel = true;  // false: the output ends after the first call (parallel_tool_calls)
};

// The parser for a marker format (not kNone or kHarmony: harmony.h has its own).
std::unique_ptr<OutputParser> make_tool_call_parser(ToolCallFormat f, ToolCallOptions options);

}  // namespace moex::generate
