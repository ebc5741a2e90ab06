// The structural tags of constrained tool calls (see tool_call_grammar.h). A call is a tag: a
// fixed begin (the call's marker and the function's name), the arguments (a JSON schema), a
// fixed end, in the shape the template writes and tool_call_formats.cc parses. xgrammar's XML
// argument styles (qwen_xml, minimax_xml) allow whitespace around a string value that those
// formats' parsers keep as part of it (found by tool_call_grammar_test's random walks), so
// qwen3_coder and minimax_m2 are not offered.
#include "generate/tool_call_grammar.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace moex::generate {
namespace {

using json = nlohmann::json;

// Any JSON object: for a tool whose arguments are not constrained. Strict mode (xgrammar's
// default in structural tags) would allow no properties a schema does not list.
constexpr const char* kAnyObject = R"({"type": "object", "additionalProperties": true})";

// Whitespace between JSON tokens: at most one character at each place (a model writes `{"a":
// 1}` as it likes, but cannot pad the arguments forever).
constexpr int kMaxWhitespace = 1;

json arguments(const GrammarTool& t) {
  json schema = json::parse(t.parameters.empty() ? kAnyObject : t.parameters);
  return {{"type", "json_schema"}, {"json_schema", std::move(schema)}, {"style", "json"},
          {"max_whitespace_cnt", kMaxWhitespace}};
}

json tag(std::string begin, json content, json end) {
  return {{"type", "tag"}, {"begin", std::move(begin)}, {"content", std::move(content)},
          {"end", std::move(end)}};
}

// <tool_call>\n{"name": "N", "arguments": {...}}\n</tool_call>, one tag per tool.
std::vector<json> hermes_tags(const std::vector<GrammarTool>& tools) {
  std::vector<json> tags;
  for (const GrammarTool& t : tools)
    tags.push_back(tag("<tool_call>\n{\"name\": " + json(t.name).dump() + ", \"arguments\": ",
                       arguments(t), "}\n</tool_call>"));
  return tags;
}

json thinking(GrammarThinking t) {
  // The template writes `</think>\n\n` before the answer; fewer newlines are taken too.
  const json ends = {"</think>\n\n", "</think>\n", "</think>"};
  const json any = {{"type", "any_text"}};
  if (t == GrammarThinking::kOpen) return tag("", any, ends);
  return {{"type", "optional"}, {"content", tag("<think>", any, ends)}};
}

}  // namespace

bool tool_call_grammar_supported(ToolCallFormat f) { return f == ToolCallFormat::kHermes; }

std::string tool_call_structural_tag(const ToolCallGrammarOptions& o) {
  if (!tool_call_grammar_supported(o.format))
    fail("tool-call format '", tool_call_format_name(o.format),
         "' cannot be constrained (only hermes calls can be)");
  if (o.tools.empty()) fail("constrained tool calls need at least one tool");
  const std::vector<json> tags = hermes_tags(o.tools);
  json calls;
  if (o.required)  // calls only, separated by a newline as the template writes them
    calls = {{"type", "tags_with_separator"}, {"tags", tags}, {"separator", "\n"},
             {"at_least_one", true}, {"stop_after_first", !o.parallel}};
  else  // free text; after the trigger, one of the tags
    calls = {{"type", "triggered_tags"}, {"triggers", {"<tool_call>"}}, {"tags", tags},
             {"at_least_one", false}, {"stop_after_first", !o.parallel}};
  json format = calls;
  if (o.required && o.thinking != GrammarThinking::kNone)
    format = {{"type", "sequence"}, {"elements", {thinking(o.thinking), std::move(calls)}}};
  return json{{"type", "structural_tag"}, {"format", std::move(format)}}.dump();
}

}  // namespace moex::generate
