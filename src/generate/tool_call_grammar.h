// Constrained tool calls: the grammar (an xgrammar structural tag, GrammarKind::kStructuralTag)
// that makes a model write calls in its own chat template's syntax with arguments that follow
// each function's JSON schema. Used for tool_choice "required" or a named function (the output
// is calls only) and for strict tools under tool_choice "auto" (free text; once a call opens,
// its arguments are constrained).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/tool_calls.h"

namespace moex::generate {

struct GrammarTool {
  std::string name;
  // The arguments' JSON schema (an object's text), or "" for any JSON object (a tool without
  // strict under tool_choice "auto").
  std::string parameters;
};

// Thinking the grammar lets a model write before its calls (formats with <think>).
enum class GrammarThinking {
  kNone,      // no think block (the template has none, or the prompt closed it already)
  kOptional,  // an optional <think>...</think> block first
  kOpen,      // the prompt ends inside <think>: free text up to </think> first
};

struct ToolCallGrammarOptions {
  ToolCallFormat format = ToolCallFormat::kNone;
  std::vector<GrammarTool> tools;  // at least one
  // true: the output is calls only, at least one (tool_choice "required" or named); false:
  // free text, and a call opened anywhere in it must be one of `tools` with valid arguments.
  bool required = true;
  bool parallel = true;  // more than one call (parallel_tool_calls); false: exactly one
  GrammarThinking thinking = GrammarThinking::kNone;
  // deepseek_v3 only: which of its two shapes the template writes (true: V3/R1's
  // `function<｜tool▁sep｜>NAME\n```json\nARGS\n```` with calls a newline apart; false: V3.1's
  // `NAME<｜tool▁sep｜>ARGS`). deepseek_calls_in_code_block (tool_calls.h) reads it off a template.
  bool deepseek_code_block = false;
};

// Whether the format's calls can be constrained: hermes, kimi_k2, deepseek_v3 and harmony
// (JSON arguments) and the XML formats qwen3_coder, glm45 and minimax_m2 (xml_tool_grammar.h).
// A harmony answer holds one call, which ends with gpt-oss's <|call|> stop id: with `required`
// the caller lets only that one end it (GrammarSpec::end_ids); under "auto" the grammar ends
// after the call's arguments. tool_call_grammar_refusal(f) says why a format is not
// supported, for the client.
bool tool_call_grammar_supported(ToolCallFormat f);
const char* tool_call_grammar_refusal(ToolCallFormat f);

// Throws moex::Error naming `where` and the keyword when `schema` bounds a string in a way that
// xgrammar 0.2.9 drops or leaves unguarded once a format's markers are excluded from the
// arguments' strings (as every format but Hermes needs): minLength / maxLength are not enforced
// then, and strings with a pattern or format, and patterned keys, are not kept free of the
// markers. Such arguments could fail their schema or end the call early.
void check_schema_with_excludes(const nlohmann::ordered_json& schema, const std::string& where);

// The structural tag's JSON text for `o`. Throws moex::Error for an unsupported format or no
// tools. The schemas are not bounded here: check them first (serve/structured_output.h).
std::string tool_call_structural_tag(const ToolCallGrammarOptions& o);

}  // namespace moex::generate
