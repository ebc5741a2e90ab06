// The tool fields of a chat request (tools, tool_choice, parallel_tool_calls, and the
// assistant tool_calls / tool messages of the conversation), kept apart from request.cc's
// table so that each field's rules sit in one place. Every refusal is an ApiError naming the
// field.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "generate/chat_output.h"
#include "serve/structured_output.h"

namespace moex::serve {

class ChatPrompt;

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

struct ToolFields {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // as given, validated
  bool tools_given = false;
  bool choice_none = false;  // tool_choice "none": tools neither shown to the model nor parsed
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;       // kNamed: the function's name
  bool any_strict = false;  // a tool has strict: true
  bool parallel = true;     // parallel_tool_calls
};

void parse_tools(ToolFields& f, const std::string& key, const nlohmann::ordered_json& v);
void parse_tool_choice(ToolFields& f, const std::string& key, const nlohmann::ordered_json& v);
void parse_parallel_tool_calls(ToolFields& f, const std::string& key,
                               const nlohmann::ordered_json& v);

// A message's tool fields checked, and assistant tool_calls' `arguments` (a JSON string in
// OpenAI's API) parsed into objects, as templates iterate over them (vLLM does the same); a
// null content beside tool_calls becomes "".
void normalize_tool_message(nlohmann::ordered_json& message, const std::string& name);

// What the template gets as `tools` (null when none are offered).
nlohmann::ordered_json template_tools(const ToolFields& f);

// The parsers of the answer: the template's formats, the request's tools. `prompt` is the
// rendered prompt text (an open <think> at its end starts the answer in reasoning).
// `reasoning_split`: serve's --reasoning-format is not none. Refuses tools the template
// shows no call format for (param "tools").
generate::ChatOutputOptions chat_output_options(const ToolFields& f, const ChatPrompt& chat,
                                                const std::string& prompt, bool reasoning_split);

// The markers the constrained calls of `chat`'s format (and its <think> block) are written
// with: the special tokens among them go to the grammar engine as their text
// (grammar_vocabulary), so that a grammar can write them.
std::vector<std::string> grammar_markers(const ChatPrompt& chat);

// The grammar that constrains the answer's calls (tool_call_grammar.h): for tool_choice
// "required" or a named function (calls only), or strict tools under "auto" (a call's
// arguments once it opens); nullopt when none applies. `tok` (may be null): a template's call
// marker that is a special token in it can be written only when `engine` was given it
// (grammar_markers). Refuses (ApiError naming tool_choice or the first strict tool) a format
// moex cannot constrain, a named function that is not among the tools, and schemas past
// structured_output.h's bounds or that the format cannot carry.
std::optional<GrammarField> tool_call_grammar(const ToolFields& f, const ChatPrompt& chat,
                                              const std::string& prompt, const Tokenizer* tok,
                                              const generate::GrammarEngine* engine);

}  // namespace moex::serve
