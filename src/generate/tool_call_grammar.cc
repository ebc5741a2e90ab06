// The structural tags of constrained tool calls (see tool_call_grammar.h). A call is a tag: a
// fixed begin (the call's marker and the function's name), the arguments (a JSON schema), a
// fixed end, in the shape the template writes and tool_call_formats.cc parses: Hermes here,
// the XML formats' calls in xml_tool_grammar.cc.
#include "generate/tool_call_grammar.h"

#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "generate/marker_text.h"
#include "generate/xml_tool_grammar.h"

namespace moex::generate {
namespace {

using json = nlohmann::ordered_json;  // schemas keep their properties' order

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

// The arguments of `t` as JSON whose strings hold none of `markers` (the format's parser would
// end the call there); a schema whose strings xgrammar cannot bound then is refused.
json arguments_without(const GrammarTool& t, json markers) {
  json args = arguments(t);
  check_schema_with_excludes(args["json_schema"], "the parameters of '" + t.name + "'");
  args["excludes"] = std::move(markers);
  return args;
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

// Kimi-K2: <|tool_call_begin|>functions.N:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>,
// the calls inside <|tool_calls_section_begin|>...<|tool_calls_section_end|> (all special
// tokens in its tokenizer: the serve side gives them to the grammar engine as their text).
// IDX is the template's running count; the parser drops it. A JSON string cannot hold the
// end markers (the parser would end the call there).
std::vector<json> kimi_tags(const std::vector<GrammarTool>& tools) {
  std::vector<json> tags;
  for (const GrammarTool& t : tools) {
    json args = arguments_without(t, {"<|tool_call_end|>", "<|tool_calls_section_end|>"});
    const json index = {{"type", "grammar"},
                        {"grammar", "root ::= [0-9] | [1-9] [0-9] | [1-9] [0-9] [0-9]"}};
    const json open = {{"type", "const_string"}, {"value", "<|tool_call_argument_begin|>"}};
    tags.push_back(tag("<|tool_call_begin|>functions." + t.name + ":",
                       {{"type", "sequence"}, {"elements", {index, open, std::move(args)}}},
                       "<|tool_call_end|>"));
  }
  return tags;
}

// DeepSeek: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜> (V3.1), or
// <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜> (V3, R1),
// inside <｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>. The parser ends a call at the first call
// end and the block at the first block end: a JSON string cannot hold them. A name is read up
// to the separator (V3.1) or the newline (code block), then trimmed: one that would read back
// otherwise is refused.
std::vector<json> deepseek_tags(const std::vector<GrammarTool>& tools, bool code_block) {
  const std::vector<std::string> m = tool_call_special_markers(ToolCallFormat::kDeepSeekV3);
  const std::string& calls_end = m[1];
  const std::string& call_begin = m[2];
  const std::string& call_end = m[3];
  const std::string& sep = m[4];
  std::vector<json> tags;
  for (const GrammarTool& t : tools) {
    bool ok = !t.name.empty() && trim(t.name) == t.name && t.name != "function";
    for (const std::string& marker : m) ok = ok && t.name.find(marker) == std::string::npos;
    for (const unsigned char c : t.name) ok = ok && c >= 0x20;
    if (!ok)
      fail("function '", t.name, "' cannot be written in the deepseek_v3 format (a name there "
           "is not \"function\", has no control characters, no whitespace at its ends and no "
           "call markers)");
    json args = arguments_without(t, {call_end, calls_end});
    if (code_block)
      tags.push_back(tag(call_begin + "function" + sep + t.name + "\n```json\n", std::move(args),
                         "\n```" + call_end));
    else
      tags.push_back(tag(call_begin + t.name + sep, std::move(args), call_end));
  }
  return tags;
}

// gpt-oss (harmony): harmony.cc ends a message at the first of its end markers and reads the
// recipient up to a space or '<': neither text nor arguments may hold the markers, a name
// neither.
const json& harmony_markers() {
  static const json m = {"<|start|>", "<|end|>",       "<|channel|>", "<|message|>",
                         "<|call|>",  "<|constrain|>", "<|return|>"};
  return m;
}

void check_harmony_name(const std::string& name) {
  bool ok = !name.empty();
  for (const unsigned char c : name) ok = ok && c > 0x20 && c != '<';
  if (!ok)
    fail("function '", name, "' cannot be written in the harmony format (a name there has "
         "no spaces, '<' or control characters)");
}

// The two headers of a call after `to=functions.N`: the model's order (`<|channel|>commentary
// to=functions.N <|constrain|>json<|message|>`) and the template's, as it writes past calls
// (`<|start|>assistant to=functions.N<|channel|>commentary json<|message|>`).
constexpr const char* kHarmonyModelTail = " <|constrain|>json<|message|>";
constexpr const char* kHarmonyTemplateTail = "<|channel|>commentary json<|message|>";

// For "required" / a named function: after the prompt's `<|start|>assistant`, an optional
// analysis message (reasoning: free text up to <|end|>, then the next message's start), then
// one message to the function in either header order. The call ends with the <|call|> token,
// a stop id: the grammar ends after the arguments and serve lets only that stop id end it
// (GrammarSpec::end_ids).
json harmony_format(const std::vector<GrammarTool>& tools) {
  json text = {{"type", "any_text"}, {"excludes", harmony_markers()}};
  json analysis = {{"type", "optional"},
                   {"content", tag("<|channel|>analysis<|message|>", std::move(text),
                                   "<|end|><|start|>assistant")}};
  std::vector<json> calls;
  for (const GrammarTool& t : tools) {
    check_harmony_name(t.name);
    const json args = arguments_without(t, harmony_markers());
    const std::string to = "to=functions." + t.name;
    for (const std::string& header : {"<|channel|>commentary " + to + kHarmonyModelTail,
                                      " " + to + kHarmonyTemplateTail}) {
      const json open = {{"type", "const_string"}, {"value", header}};
      calls.push_back({{"type", "sequence"}, {"elements", {open, args}}});
    }
  }
  return {{"type", "sequence"},
          {"elements", {std::move(analysis), {{"type", "or"}, {"elements", std::move(calls)}}}}};
}

// Under "auto" with a strict tool: the messages are free (analysis, commentary, final, with
// their markers) until the text holds `to=functions.`, the recipient of a call in either
// header order; from there it is one call to a listed tool: the name, either header's tail,
// the arguments (a strict tool's schema; any object for the others), and the grammar ends
// (the answer's next token is a stop id: the model writes <|call|>). llama-server does the
// same for gpt-oss (llama.cpp's common/parsers/gpt-oss.cpp: a grammar triggered by the
// recipient's `to=`, every tool's arguments by its schema).
json harmony_auto_format(const std::vector<GrammarTool>& tools) {
  std::vector<json> tags;
  for (const GrammarTool& t : tools) {
    check_harmony_name(t.name);
    const json tails = {
        {"type", "or"},
        {"elements",
         {{{"type", "const_string"}, {"value", kHarmonyModelTail}},
          {{"type", "const_string"}, {"value", kHarmonyTemplateTail}}}}};
    tags.push_back(tag("to=functions." + t.name,
                       {{"type", "sequence"},
                        {"elements", {tails, arguments_without(t, harmony_markers())}}},
                       ""));
  }
  return {{"type", "triggered_tags"}, {"triggers", {"to=functions."}}, {"tags", std::move(tags)},
          {"at_least_one", false},    {"stop_after_first", true}};
}

json thinking(GrammarThinking t) {
  // The template writes `</think>\n\n` before the answer; fewer newlines are taken too.
  const json ends = {"</think>\n\n", "</think>\n", "</think>"};
  const json any = {{"type", "any_text"}};
  if (t == GrammarThinking::kOpen) return tag("", any, ends);
  return {{"type", "optional"}, {"content", tag("<think>", any, ends)}};
}

}  // namespace

void check_schema_with_excludes(const json& schema, const std::string& where) {
  static const std::set<std::string> kUnguarded = {"minLength",         "maxLength", "pattern",
                                                   "format",            "patternProperties",
                                                   "propertyNames"};
  // Keywords whose values are data, not schemas; and maps of names to schemas.
  static const std::set<std::string> kData = {"enum", "const", "default", "examples",
                                              "description", "title", "$comment", "required"};
  static const std::set<std::string> kMaps = {"properties", "$defs", "definitions",
                                              "dependentSchemas"};
  if (schema.is_array()) {
    for (const json& s : schema) check_schema_with_excludes(s, where);
    return;
  }
  if (!schema.is_object()) return;
  for (const auto& [k, v] : schema.items()) {
    if (kUnguarded.count(k))
      fail(where, ": '", k, "' is not constrained by moex's grammar engine (xgrammar 0.2.9) "
           "once the format's call markers are kept out of the arguments' strings");
    if (kData.count(k)) continue;
    if (kMaps.count(k) && v.is_object()) {
      for (const auto& [name, s] : v.items()) check_schema_with_excludes(s, where);
      continue;
    }
    check_schema_with_excludes(v, where);
  }
}

bool tool_call_grammar_supported(ToolCallFormat f) {
  return f == ToolCallFormat::kHermes || f == ToolCallFormat::kKimiK2 ||
         f == ToolCallFormat::kDeepSeekV3 || f == ToolCallFormat::kHarmony ||
         is_xml_tool_call_format(f);
}

const char* tool_call_grammar_refusal(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone: return "the template writes no tool calls";
    default: return "";
  }
}

std::string tool_call_structural_tag(const ToolCallGrammarOptions& o) {
  if (!tool_call_grammar_supported(o.format))
    fail("tool-call format '", tool_call_format_name(o.format), "' cannot be constrained: ",
         tool_call_grammar_refusal(o.format));
  if (o.tools.empty()) fail("constrained tool calls need at least one tool");
  if (o.format == ToolCallFormat::kHarmony)
    return json{{"type", "structural_tag"},
                {"format", o.required ? harmony_format(o.tools) : harmony_auto_format(o.tools)}}
        .dump();
  std::vector<json> tags;
  if (o.format == ToolCallFormat::kHermes) {
    tags = hermes_tags(o.tools);
  } else if (o.format == ToolCallFormat::kKimiK2) {
    tags = kimi_tags(o.tools);
  } else if (o.format == ToolCallFormat::kDeepSeekV3) {
    tags = deepseek_tags(o.tools, o.deepseek_code_block);
  } else {
    for (const GrammarTool& t : o.tools) tags.push_back(xml_call_tag(o.format, t));
  }
  // What opens a call in free text, and what separates calls (the template's newline).
  const std::string trigger = tool_call_markers(o.format).begin;
  json calls;
  if (o.format == ToolCallFormat::kMiniMaxM2 || o.format == ToolCallFormat::kKimiK2 ||
      o.format == ToolCallFormat::kDeepSeekV3) {
    // One block holds the calls: <invoke ...>...</invoke>\n each (minimax_m2),
    // <|tool_call_begin|>...<|tool_call_end|> each (kimi_k2, no newline after its begin), or
    // DeepSeek's calls (a newline apart in V3/R1's shape, nothing between in V3.1's).
    const std::string separator =
        o.format == ToolCallFormat::kDeepSeekV3 && o.deepseek_code_block ? "\n" : "";
    const json invokes = {{"type", "tags_with_separator"}, {"tags", tags},
                          {"separator", separator},
                          {"at_least_one", true}, {"stop_after_first", !o.parallel}};
    const std::string end = tool_call_markers(o.format).end;
    const std::string opened = o.format == ToolCallFormat::kMiniMaxM2 ? "\n" : "";
    if (o.required)
      calls = {{"type", "sequence"},
               {"elements", {{{"type", "const_string"}, {"value", trigger + opened}}, invokes,
                             {{"type", "const_string"}, {"value", end}}}}};
    else
      calls = {{"type", "triggered_tags"}, {"triggers", {trigger}},
               {"tags", {tag(trigger + opened, invokes, end)}}, {"at_least_one", false},
               {"stop_after_first", !o.parallel}};
  } else if (o.required) {  // calls only, separated by a newline as the template writes them
    calls = {{"type", "tags_with_separator"}, {"tags", tags}, {"separator", "\n"},
             {"at_least_one", true}, {"stop_after_first", !o.parallel}};
  } else {  // free text; after the trigger, one of the tags
    calls = {{"type", "triggered_tags"}, {"triggers", {trigger}}, {"tags", tags},
             {"at_least_one", false}, {"stop_after_first", !o.parallel}};
  }
  json format = calls;
  if (o.required && o.thinking != GrammarThinking::kNone)
    format = {{"type", "sequence"}, {"elements", {thinking(o.thinking), std::move(calls)}}};
  return json{{"type", "structural_tag"}, {"format", std::move(format)}}.dump();
}

}  // namespace moex::generate
