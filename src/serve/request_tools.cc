// Tool fields of a chat request (see request_tools.h).
#include "serve/request_tools.h"

#include "core/error.h"
#include "serve/api_error.h"
#include "serve/chat_prompt.h"

namespace moex::serve {
namespace {

using ojson = nlohmann::ordered_json;

// The answer of tool_choice "required", a named function or strict: true until constrained
// decoding lands (docs/serve.md).
[[noreturn]] void needs_constraints(const std::string& field, const std::string& what) {
  bad_request(field, str_cat("'", field, "' is not supported by this server: ", what,
                             " needs constrained decoding, which moex serve does not have yet "
                             "(use \"auto\" or \"none\")"));
}

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
      if (s->get<bool>()) needs_constraints(t + ".function.strict", "strict: true");
    }
  }
  f.tools = v;
  f.tools_given = !v.empty();
}

void parse_tool_choice(ToolFields& f, const std::string& key, const ojson& v) {
  if (v.is_string()) {
    if (v == "none") {
      f.choice_none = true;
      return;
    }
    if (v == "auto") return;
    if (v == "required") needs_constraints(key, "\"required\"");
    bad_request(key, str_cat("'", key, "' must be \"none\", \"auto\", \"required\" or a "
                             "function ({\"type\": \"function\", \"function\": {\"name\"}})"));
  }
  if (!v.is_object())
    bad_request(key, str_cat("'", key, "' must be a string or a named function object"));
  needs_constraints(key, "a named function");
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

}  // namespace moex::serve
