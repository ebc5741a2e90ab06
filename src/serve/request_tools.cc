// Tool fields of a chat request (see request_tools.h).
#include "serve/request_tools.h"

#include "core/error.h"
#include "generate/reasoning.h"
#include "generate/tool_call_grammar.h"
#include "serve/api_error.h"
#include "serve/chat_prompt.h"

namespace moex::serve {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& member(const ojson& obj, const char* key, const std::string& name) {
  const auto it = obj.find(key);
  if (it == obj.end()) bad_request(name, str_cat("'", name, "' is missing"));
  return *it;
}

void must_be_object(const ojson& v, const std::string& name) {
  if (!v.is_object()) bad_request(name, str_cat("'", name, "' must be an object"));
}

void must_be_string(const ojson& v, const std::string& name) {
  if (!v.is_string()) bad_request(name, str_cat("'", name, "' must be a string"));
}

}  // namespace

void parse_tools(ToolFields& f, const std::string& key, const ojson& v) {
  if (!v.is_array()) bad_request(key, str_cat("'", key, "' must be an array of tools"));
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string t = str_cat(key, "[", i, "]");
    must_be_object(v[i], t);
    const ojson& type = member(v[i], "type", t + ".type");
    if (type != "function")
      bad_request(t + ".type", str_cat("'", t, ".type' must be \"function\""));
    const ojson& fn = member(v[i], "function", t + ".function");
    must_be_object(fn, t + ".function");
    const ojson& name = member(fn, "name", t + ".function.name");
    must_be_string(name, t + ".function.name");
    if (name.get_ref<const std::string&>().empty())
      bad_request(t + ".function.name", str_cat("'", t, ".function.name' is empty"));
    if (const auto d = fn.find("description"); d != fn.end() && !d->is_null())
      must_be_string(*d, t + ".function.description");
    if (const auto p = fn.find("parameters"); p != fn.end() && !p->is_null())
      must_be_object(*p, t + ".function.parameters");
    if (const auto s = fn.find("strict"); s != fn.end() && !s->is_null()) {
      if (!s->is_boolean())
        bad_request(t + ".function.strict", str_cat("'", t, ".function.strict' must be a boolean"));
      f.any_strict = f.any_strict || s->get<bool>();
    }
  }
  f.tools = v;
  f.tools_given = !v.empty();
}

void parse_tool_choice(ToolFields& f, const std::string& key, const ojson& v) {
  if (v.is_string()) {
    if (v == "none") {
      f.choice_none = true;
      f.choice = ToolChoice::kNone;
      return;
    }
    if (v == "auto") return;
    if (v == "required") {
      f.choice = ToolChoice::kRequired;
      return;
    }
    bad_request(key, str_cat("'", key, "' must be \"none\", \"auto\", \"required\" or a "
                             "function ({\"type\": \"function\", \"function\": {\"name\"}})"));
  }
  if (!v.is_object())
    bad_request(key, str_cat("'", key, "' must be a string or a named function object"));
  const ojson& type = member(v, "type", key + ".type");
  if (type != "function") bad_request(key + ".type", str_cat("'", key, ".type' must be \"function\""));
  const ojson& fn = member(v, "function", key + ".function");
  must_be_object(fn, key + ".function");
  const ojson& name = member(fn, "name", key + ".function.name");
  must_be_string(name, key + ".function.name");
  for (const auto& [k, x] : v.items())
    if (k != "type" && k != "function")
      bad_request(key + "." + k, str_cat("'", key, ".", k, "' is not a field of a tool_choice"));
  f.choice = ToolChoice::kNamed;
  f.named = name.get<std::string>();
}

void parse_parallel_tool_calls(ToolFields& f, const std::string& key, const ojson& v) {
  if (!v.is_boolean()) bad_request(key, str_cat("'", key, "' must be a boolean"));
  f.parallel = v.get<bool>();
}

void normalize_tool_message(ojson& m, const std::string& name) {
  if (const auto id = m.find("tool_call_id"); id != m.end() && !id->is_null())
    must_be_string(*id, name + ".tool_call_id");
  const auto calls = m.find("tool_calls");
  if (calls == m.end() || calls->is_null()) return;
  const std::string field = name + ".tool_calls";
  if (m["role"] != "assistant")
    bad_request(field, str_cat("'", field, "' is only taken in assistant messages"));
  if (!calls->is_array()) bad_request(field, str_cat("'", field, "' must be an array"));

  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string c = str_cat(field, "[", i, "]");
    ojson& call = (*calls)[i];
    must_be_object(call, c);
    if (const auto id = call.find("id"); id != call.end() && !id->is_null())
      must_be_string(*id, c + ".id");
    ojson& fn = call["function"];
    must_be_object(fn, c + ".function");
    must_be_string(member(fn, "name", c + ".function.name"), c + ".function.name");
    ojson& args = fn["arguments"];
    if (args.is_null()) {
      args = ojson::object();
    } else if (args.is_string()) {
      const std::string& text = args.get_ref<const std::string&>();
      ojson parsed = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_object())
        bad_request(c + ".function.arguments",
                    str_cat("'", c, ".function.arguments' must be a JSON object's text"));
      args = std::move(parsed);
    } else if (!args.is_object()) {
      bad_request(c + ".function.arguments",
                  str_cat("'", c, ".function.arguments' must be a string or an object"));
    }
  }
  // OpenAI's clients send content null beside calls; templates read it as text (llama.cpp
  // renders it as ""). Last: inserting a key moves the others (`calls` would dangle).
  if (const auto c = m.find("content"); c == m.end() || c->is_null()) m["content"] = "";
}

ojson template_tools(const ToolFields& f) {
  return f.tools_given && !f.choice_none ? f.tools : ojson(nullptr);
}

generate::ChatOutputOptions chat_output_options(const ToolFields& f, const ChatPrompt& chat,
                                                const std::string& prompt, bool reasoning_split) {
  generate::ChatOutputOptions o;
  o.tool_format = chat.tool_call_format();
  o.reasoning = reasoning_split ? chat.reasoning_format() : generate::ReasoningFormat::kNone;
  o.parse_tools = f.tools_given && !f.choice_none;
  if (o.parse_tools && o.tool_format == generate::ToolCallFormat::kNone)
    bad_request("tools", str_cat("'tools' is not supported for this model: its chat template (",
                                 chat.origin(), ") writes tool calls in no format moex parses"));
  o.tools = f.tools;
  o.parallel_tool_calls = f.parallel;
  o.thinking_open = o.reasoning == generate::ReasoningFormat::kThink &&
                    generate::prompt_opens_thinking(prompt);
  return o;
}

namespace {

// The arguments' schema of tool `fn` (its parameters; none: an object without properties).
std::string parameters_text(const ojson& fn, const std::string& field) {
  const auto p = fn.find("parameters");
  if (p == fn.end() || p->is_null()) return R"({"type": "object", "properties": {}})";
  std::string text = p->dump();
  if (text.size() > kMaxSchemaBytes)
    bad_request(field, str_cat("'", field, "' is ", text.size(), " bytes of JSON; at most ",
                               kMaxSchemaBytes, " are constrained"));
  check_schema(nlohmann::json::parse(text), field);
  return text;
}

// All schemas of one grammar together: each is bounded, and so is their sum.
constexpr size_t kMaxToolSchemaBytes = 2 * kMaxSchemaBytes;

}  // namespace

std::vector<std::string> grammar_markers(const ChatPrompt& chat) {
  std::vector<std::string> m;
  if (generate::tool_call_grammar_supported(chat.tool_call_format()))
    m = generate::tool_call_special_markers(chat.tool_call_format());
  if (chat.reasoning_format() == generate::ReasoningFormat::kThink) {
    m.push_back("<think>");
    m.push_back("</think>");
  }
  return m;
}

std::optional<GrammarField> tool_call_grammar(const ToolFields& f, const ChatPrompt& chat,
                                              const std::string& prompt, const Tokenizer* tok,
                                              const generate::GrammarEngine* engine) {
  const bool required = f.choice == ToolChoice::kRequired || f.choice == ToolChoice::kNamed;
  if (f.choice == ToolChoice::kNone || (!required && !f.any_strict)) return std::nullopt;
  if (required && !f.tools_given)
    bad_request("tool_choice", str_cat("'tool_choice' ", f.choice == ToolChoice::kNamed
                                                             ? "naming a function"
                                                             : "\"required\"",
                                       " needs 'tools'"));
  // The field a refusal names: tool_choice, or the first strict tool under auto.
  std::string field = "tool_choice";
  if (!required)
    for (size_t i = 0; i < f.tools.size(); ++i)
      if (f.tools[i]["function"].value("strict", false)) {
        field = str_cat("tools[", i, "].function.strict");
        break;
      }
  const generate::ToolCallFormat format = chat.tool_call_format();
  if (!generate::tool_call_grammar_supported(format))
    bad_request(field, str_cat("'", field, "' is not supported for this model: its chat template (",
                               chat.origin(), ") writes tool calls in the '",
                               generate::tool_call_format_name(format), "' format, which moex "
                               "does not constrain (", generate::tool_call_grammar_refusal(format),
                               ")"));
  for (const std::string& marker : generate::tool_call_special_markers(format)) {
    const std::optional<int32_t> id = tok ? tok->token_to_id(marker) : std::nullopt;
    if (id && tok->is_special(*id) && !(engine && engine->writes(*id)))
      bad_request(field, str_cat("'", field, "' is not supported for this model: its tool-call "
                                 "marker ", marker, " is a special token, which this server's "
                                 "grammar vocabulary leaves out"));
  }

  generate::ToolCallGrammarOptions o;
  o.format = format;
  o.deepseek_code_block = chat.deepseek_code_block();
  o.required = required;
  o.parallel = f.parallel && f.choice != ToolChoice::kNamed;
  size_t bytes = 0;
  for (size_t i = 0; i < f.tools.size(); ++i) {
    const ojson& fn = f.tools[i]["function"];
    const std::string name = fn["name"].get<std::string>();
    if (f.choice == ToolChoice::kNamed && name != f.named) continue;
    const bool constrained = required || fn.value("strict", false);
    generate::GrammarTool t{name, constrained ? parameters_text(fn, str_cat("tools[", i,
                                                                            "].function.parameters"))
                                              : ""};
    if ((bytes += t.parameters.size()) > kMaxToolSchemaBytes)
      bad_request("tools", str_cat("'tools' hold more than ", kMaxToolSchemaBytes,
                                   " bytes of parameter schemas to constrain"));
    o.tools.push_back(std::move(t));
  }
  if (o.tools.empty())
    bad_request("tool_choice.function.name",
                str_cat("'tool_choice.function.name' names '", f.named,
                        "', which is not among the request's tools"));
  if (chat.reasoning_format() == generate::ReasoningFormat::kThink) {
    std::string_view p = prompt;
    while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.remove_suffix(1);
    o.thinking = generate::prompt_opens_thinking(prompt) ? generate::GrammarThinking::kOpen
                 : p.ends_with("</think>")               ? generate::GrammarThinking::kNone
                                                         : generate::GrammarThinking::kOptional;
  }
  // gpt-oss's call ends with its <|call|> token, a stop id. With "required" or a named
  // function it is the only one that may end the answer (the others, <|return|> and
  // <|endoftext|>, end a final answer); under "auto" a final answer may come instead, so all
  // stay (after a call the grammar is complete: the model ends it with <|call|>).
  std::vector<int32_t> end_ids;
  if (format == generate::ToolCallFormat::kHarmony) {
    const std::optional<int32_t> call = tok ? tok->token_to_id("<|call|>") : std::nullopt;
    if (!call || !engine || !engine->stops(*call))
      bad_request(field, str_cat("'", field, "' is not supported for this model: its calls end "
                                 "with the <|call|> token, which is not one of its stop ids"));
    if (required) end_ids.push_back(*call);
  }
  try {
    return GrammarField{field, {generate::GrammarKind::kStructuralTag,
                                generate::tool_call_structural_tag(o), {}, std::move(end_ids)}};
  } catch (const Error& e) {
    bad_request(field, str_cat("'", field, "' cannot be constrained: ", e.what()));
  }
}

}  // namespace moex::serve
