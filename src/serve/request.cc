// OpenAI request bodies into ApiRequest (see request.h): one handler per field, unknown fields
// refused, every error an ApiError naming the field.
#include "serve/request.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "core/error.h"
#include "core/json_text.h"
#include "serve/api_error.h"
#include "serve/request_tools.h"
#include "serve/structured_output.h"

namespace moex::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::string type_of(const ojson& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

[[noreturn]] void wrong_type(const std::string& name, const ojson& v, const char* expected) {
  bad_request(name, str_cat("'", name, "' must be ", expected, ", got ", type_of(v)));
}

double number(const ojson& v, const std::string& name) {
  if (!v.is_number()) wrong_type(name, v, "a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) bad_request(name, str_cat("'", name, "' must be finite"));
  return d;
}

double number_in(const ojson& v, const std::string& name, double lo, double hi,
                 bool lo_open = false) {
  const double d = number(v, name);
  if (d < lo || d > hi || (lo_open && d == lo))
    bad_request(name, str_cat("'", name, "' must lie in ", lo_open ? "(" : "[", lo, ", ", hi,
                              "], got ", d));
  return d;
}

int64_t integer(const ojson& v, const std::string& name, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) wrong_type(name, v, "an integer");
  const bool too_big = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX);
  const int64_t i = too_big ? INT64_MAX : v.get<int64_t>();
  if (too_big || i < lo || i > hi)
    bad_request(name, str_cat("'", name, "' must lie in [", lo, ", ", hi, "], got ", v.dump()));
  return i;
}

bool boolean(const ojson& v, const std::string& name) {
  if (!v.is_boolean()) wrong_type(name, v, "a boolean");
  return v.get<bool>();
}

const std::string& string(const ojson& v, const std::string& name) {
  if (!v.is_string()) wrong_type(name, v, "a string");
  return v.get_ref<const std::string&>();
}

[[noreturn]] void unsupported(const std::string& name, const std::string& why) {
  bad_request(name, str_cat("'", name, "' is not supported by this server: ", why));
}

// Keys one object of a request may hold. The largest a client sends is the request itself
// (about 30 fields); OpenAI's `metadata` takes 16. nlohmann's ordered_json finds each key by a
// linear search when it inserts it, so an object of n keys costs n^2 / 2 comparisons: bounded
// here, before that parse, on the plain parse (a std::map, n log n).
constexpr size_t kMaxObjectKeys = 256;

// Refuses an object of more than kMaxObjectKeys keys in `v`, naming where it is.
void check_object_sizes(const nlohmann::json& v, const std::string& name) {
  if (v.is_object()) {
    if (v.size() > kMaxObjectKeys)
      bad_request(
          name, str_cat(name.empty() ? std::string("the request body") : "'" + name + "'", " has ",
                        v.size(), " keys; at most ", kMaxObjectKeys, " are taken in one object"));
    for (const auto& [key, x] : v.items())
      if (x.is_structured()) check_object_sizes(x, name.empty() ? key : str_cat(name, ".", key));
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].is_structured()) check_object_sizes(v[i], str_cat(name, "[", i, "]"));
  }
}

uint64_t random_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32 | rd()) >> 1;
}

// A message's content: a string, null, or text parts ({"type": "text", "text": ...}) joined
// with newlines, as vLLM flattens them for templates that expect a string.
ojson message_content(const ojson& c, const std::string& name) {
  if (c.is_null() || c.is_string()) return c;
  if (!c.is_array()) wrong_type(name, c, "a string, null or an array of text parts");
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string part = str_cat(name, "[", i, "]");
    const ojson& p = c[i];
    if (!p.is_object()) wrong_type(part, p, "an object");
    const auto type = p.find("type");
    if (type == p.end() || !type->is_string() || *type != "text")
      unsupported(part + ".type", "only text content parts are (no images, audio or files)");
    const auto t = p.find("text");
    if (t == p.end()) bad_request(part + ".text", str_cat("'", part, ".text' is missing"));
    text += (i ? "\n" : "") + string(*t, part + ".text");
  }
  return text;
}

ojson parse_messages(const ojson& v) {
  if (!v.is_array()) wrong_type("messages", v, "an array of messages");
  if (v.empty()) bad_request("messages", "'messages' must hold at least one message");
  ojson out = ojson::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string name = str_cat("messages[", i, "]");
    if (!v[i].is_object()) wrong_type(name, v[i], "an object");
    ojson m = v[i];
    const auto role = m.find("role");
    if (role == m.end()) bad_request(name + ".role", str_cat("'", name, ".role' is missing"));
    if (string(*role, name + ".role").empty())
      bad_request(name + ".role", str_cat("'", name, ".role' is empty"));
    const auto content = m.find("content");
    if (content != m.end()) *content = message_content(*content, name + ".content");
    normalize_tool_message(m, name);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> parse_stop(const ojson& v) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > size_t(kMaxStopStrings))
      bad_request("stop",
                  str_cat("'stop' holds at most ", kMaxStopStrings, " strings, got ", v.size()));
    for (size_t i = 0; i < v.size(); ++i) out.push_back(string(v[i], str_cat("stop[", i, "]")));
  } else {
    wrong_type("stop", v, "a string or an array of strings");
  }
  for (const std::string& s : out) {
    if (s.empty()) bad_request("stop", "'stop' strings must not be empty");
    if (s.size() > kMaxStopBytes)
      bad_request("stop", str_cat("'stop' strings are at most ", kMaxStopBytes, " bytes"));
  }
  return out;
}

// `prompt` of a completion: a string, an array of token ids, or a batch of one of those.
std::vector<int32_t> completion_prompt(const ojson& v, const ServedModel& m) {
  const ojson* p = &v;
  if (v.is_array() && !v.empty() && (v[0].is_string() || v[0].is_array())) {
    if (v.size() != 1)
      unsupported("prompt", "one prompt per request (send a batch as separate requests)");
    p = &v[0];
  }
  std::vector<int32_t> ids;
  if (p->is_string()) {
    if (m.tokenizer == nullptr)
      bad_request("prompt", "the model has no tokenizer.json: send the prompt as token ids");
    ids = m.tokenizer->encode(p->get_ref<const std::string&>(), /*add_special=*/true);
  } else if (p->is_array()) {
    for (size_t i = 0; i < p->size(); ++i)
      ids.push_back(int32_t(integer((*p)[i], str_cat("prompt[", i, "]"), 0, m.vocab - 1)));
  } else {
    wrong_type("prompt", *p, "a string or an array of token ids");
  }
  return ids;
}

// OpenAI's logit_bias: {"<token id>": bias in [-100, 100], ...}.
std::vector<std::pair<int32_t, float>> parse_logit_bias(const ojson& v, const std::string& k,
                                                        int64_t vocab) {
  if (!v.is_object()) wrong_type(k, v, "an object of token ids to biases");
  std::vector<std::pair<int32_t, float>> out;
  for (const auto& [key, bias] : v.items()) {
    const std::string field = str_cat(k, "[\"", key, "\"]");
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || key.empty())
      bad_request(k, str_cat("'", k, "' keys must be token ids (decimal integers), got \"", key,
                             "\""));
    if (id < 0 || id >= vocab)
      bad_request(k, str_cat("'", k, "' token id ", key, " is outside the vocabulary [0, ",
                             vocab, ")"));
    out.emplace_back(int32_t(id),
                     float(number_in(bias, field, -generate::kMaxLogitBias, generate::kMaxLogitBias)));
  }
  return out;
}

struct Parser {
  Parser(Api a, const ServedModel& m, const std::function<bool()>& c)
      : api(a), served(m), cancelled(c) {
    out.api = a;
  }
  Api api;
  const ServedModel& served;
  const std::function<bool()>& cancelled;
  ApiRequest out;
  ojson messages;
  ojson template_kwargs = ojson::object();
  bool prompt_given = false, messages_given = false, logprobs = false, seed_given = false;
  std::optional<int64_t> top_logprobs, max_tokens, max_completion_tokens, min_tokens;
  model::SamplingFieldsGiven given;
  ToolFields tools;  // request_tools.h
  std::optional<GrammarField> grammar;  // structured output (response_format, guided_*)

  void finish();
  void finish_grammar();
};

// Fields a client may send that this server does not implement: accepted only with the value
// that changes nothing, refused (naming the field and saying why) otherwise.
void require_noop(const std::string& key, const ojson& v) {
  auto bad = [&](const char* why) { unsupported(key, why); };
  if (key == "n" || key == "best_of") {
    if (integer(v, key, 1, INT32_MAX) != 1) bad("one choice per request (only 1)");
  } else if (key == "functions") {
    if (!v.is_array()) wrong_type(key, v, "an array");
    if (!v.empty()) bad("the deprecated functions are not taken (send them as 'tools')");
  } else if (key == "function_call") {
    if (!v.is_string() || (v != "none" && v != "auto"))
      bad("the deprecated function_call is not taken (send 'tool_choice')");
  } else if (key == "echo") {
    if (boolean(v, key)) bad("the prompt is not echoed (only false)");
  } else if (key == "suffix") {
    if (!string(v, key).empty()) bad("insertion is not implemented (only \"\")");
  }
}

enum ApiMask { kChatOnly = 1, kCompletionOnly = 2, kBoth = 3 };
using FieldFn = void (*)(Parser&, const std::string& key, const ojson& v);
struct Field {
  const char* name;
  int apis;
  FieldFn parse;
};

void noop(Parser&, const std::string& key, const ojson& v) { require_noop(key, v); }

// Structured output (serve/structured_output.h): one grammar per request.
void set_grammar(Parser& p, std::optional<GrammarField> g) {
  if (g && p.grammar)
    bad_request(g->field, str_cat("'", g->field, "' and '", p.grammar->field,
                                  "' both constrain the output; send one"));
  if (g) p.grammar = std::move(g);
}

// The fields each API takes (docs/serve.md has the same table for users).
const Field kFields[] = {
    {"model", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) { p.out.model = string(v, k); }},
    {"messages", kChatOnly,
     [](Parser& p, const std::string&, const ojson& v) {
       p.messages = parse_messages(v);
       p.messages_given = true;
     }},
    {"prompt", kCompletionOnly,
     [](Parser& p, const std::string&, const ojson& v) {
       p.out.generation.prompt = completion_prompt(v, p.served);
       p.prompt_given = true;
     }},
    {"max_tokens", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.max_tokens = integer(v, k, 1, INT32_MAX);
     }},
    {"min_tokens", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.min_tokens = integer(v, k, 0, INT32_MAX);
     }},
    {"ignore_eos", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.ignore_eos = boolean(v, k);
     }},
    {"max_completion_tokens", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.max_completion_tokens = integer(v, k, 1, INT32_MAX);
     }},
    {"temperature", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       const double t = number(v, k);
       if (t < 0) bad_request(k, str_cat("'temperature' must be >= 0, got ", t));
       p.out.generation.params.sampling.temperature = t;
       p.given.temperature = true;
     }},
    {"top_p", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.sampling.top_p = number_in(v, k, 0, 1, /*lo_open=*/true);
       p.given.top_p = true;
     }},
    {"top_k", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       const int64_t top_k = integer(v, k, -1, INT32_MAX);  // -1 is off, as vLLM takes it
       p.out.generation.params.sampling.top_k = top_k < 0 ? 0 : top_k;
       p.given.top_k = true;
     }},
    {"min_p", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.sampling.min_p = number_in(v, k, 0, 1);
     }},
    {"seed", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.sampling.seed = uint64_t(integer(v, k, INT64_MIN, INT64_MAX));
       p.seed_given = true;
     }},
    {"stop", kBoth,
     [](Parser& p, const std::string&, const ojson& v) { p.out.stop = parse_stop(v); }},
    {"stream", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) { p.out.stream = boolean(v, k); }},
    {"stream_options", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       if (!v.is_object()) wrong_type(k, v, "an object");
       for (const auto& [name, x] : v.items()) {
         if (name != "include_usage") unsupported(str_cat(k, ".", name), "only include_usage is");
         if (!x.is_null()) p.out.include_usage = boolean(x, "stream_options.include_usage");
       }
     }},
    {"logprobs", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) { p.logprobs = boolean(v, k); }},
    {"top_logprobs", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.top_logprobs = integer(v, k, 0, kMaxTopLogprobs);
     }},
    {"logprobs", kCompletionOnly,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.top_logprobs = integer(v, k, 0, kMaxTopLogprobs);  // legacy: the number of alternatives
       p.logprobs = true;
     }},
    {"return_tokens_as_token_ids", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) { p.out.tokens_as_ids = boolean(v, k); }},
    {"chat_template_kwargs", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) {
       if (!v.is_object()) wrong_type(k, v, "an object");
       p.template_kwargs = v;
     }},
    // The logits processors (generate/logits_processors.h has the definitions and ranges).
    {"frequency_penalty", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.logits.penalties.frequency = number_in(v, k, -2, 2);
     }},
    {"presence_penalty", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.logits.penalties.presence = number_in(v, k, -2, 2);
     }},
    {"repetition_penalty", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.logits.penalties.repetition = number_in(
           v, k, generate::kMinRepetitionPenalty, generate::kMaxRepetitionPenalty);
     }},
    {"logit_bias", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) {
       p.out.generation.params.logits.logit_bias = parse_logit_bias(v, k, p.served.vocab);
     }},
    // Tool calls (request_tools.h).
    {"tools", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) { parse_tools(p.tools, k, v); }},
    {"tool_choice", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) { parse_tool_choice(p.tools, k, v); }},
    {"parallel_tool_calls", kChatOnly,
     [](Parser& p, const std::string& k, const ojson& v) {
       parse_parallel_tool_calls(p.tools, k, v);
     }},
    // Not implemented: only the value that changes nothing.
    {"n", kBoth, noop},
    {"functions", kChatOnly, noop},
    {"function_call", kChatOnly, noop},
    // Structured output: compiled in finish_grammar().
    {"response_format", kBoth,
     [](Parser& p, const std::string&, const ojson& v) { set_grammar(p, parse_response_format(v)); }},
    {"guided_json", kBoth,
     [](Parser& p, const std::string&, const ojson& v) { set_grammar(p, parse_guided_json(v)); }},
    {"guided_regex", kBoth,
     [](Parser& p, const std::string&, const ojson& v) { set_grammar(p, parse_guided_regex(v)); }},
    {"guided_choice", kBoth,
     [](Parser& p, const std::string&, const ojson& v) { set_grammar(p, parse_guided_choice(v)); }},
    {"guided_grammar", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) { set_grammar(p, parse_grammar(k, v)); }},
    {"grammar", kBoth,
     [](Parser& p, const std::string& k, const ojson& v) { set_grammar(p, parse_grammar(k, v)); }},
    {"best_of", kCompletionOnly, noop},
    {"echo", kCompletionOnly, noop},
    {"suffix", kCompletionOnly, noop},
    // Accepted with any value of the right type and ignored: nothing generated depends on them.
    {"user", kBoth, [](Parser&, const std::string& k, const ojson& v) { (void)string(v, k); }},
    {"service_tier", kBoth,
     [](Parser&, const std::string& k, const ojson& v) { (void)string(v, k); }},
    {"store", kBoth, [](Parser&, const std::string& k, const ojson& v) { (void)boolean(v, k); }},
    {"metadata", kBoth,
     [](Parser&, const std::string& k, const ojson& v) {
       if (!v.is_object()) wrong_type(k, v, "an object");
     }},
};

void parse_field(Parser& p, const std::string& key, const ojson& v) {
  const int api = p.api == Api::kChat ? kChatOnly : kCompletionOnly;
  for (const Field& f : kFields)
    if ((f.apis & api) && key == f.name) {
      if (!v.is_null()) f.parse(p, key, v);  // null is "not given", as OpenAI takes it
      return;
    }
  bad_request(key, str_cat("unrecognized request argument '", key, "' for ",
                           p.api == Api::kChat ? "/v1/chat/completions" : "/v1/completions"));
}

void Parser::finish() {
  GenerationRequest& g = out.generation;
  const char* prompt_field = api == Api::kChat ? "messages" : "prompt";
  if (api == Api::kChat) {
    if (!messages_given) bad_request("messages", "'messages' is required");
    if (served.chat == nullptr)
      bad_request("messages", served.chat_refusal.empty()
                                  ? "the model has no chat template: use /v1/completions"
                                  : str_cat("the model's chat template cannot be used (",
                                            served.chat_refusal, "): use /v1/completions"));
    std::string text;
    try {
      text = served.chat->render(messages, template_kwargs, {.cancelled = cancelled},
                                 template_tools(tools));
    } catch (const Error& e) {  // the template refused the conversation (raise_exception, ...)
      const char* field = template_kwargs.empty() ? "messages" : "chat_template_kwargs";
      bad_request(field, str_cat("the chat template cannot render '", field, "': ", e.what()));
    }
    g.prompt = served.chat->encode(text);
    out.chat_output = chat_output_options(tools, *served.chat, text, served.reasoning_split);
    // tool_choice required / named, strict tools: a grammar over the answer's calls.
    if (std::optional<GrammarField> g =
            tool_call_grammar(tools, *served.chat, text, served.tokenizer, served.grammar)) {
      if (grammar)
        bad_request(g->field, str_cat("'", g->field, "' and '", grammar->field,
                                      "' both constrain the output; send one"));
      grammar = std::move(g);
    }
    if (top_logprobs && !logprobs)
      bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  } else if (!prompt_given) {
    bad_request("prompt", "'prompt' is required");
  }
  if (g.prompt.empty()) bad_request(prompt_field, str_cat("'", prompt_field, "' has no tokens"));
  const int64_t n = int64_t(g.prompt.size());
  if (n >= served.context)
    context_exceeded(prompt_field, str_cat("the prompt of '", prompt_field, "' has ", n,
                                           " tokens; this server's context holds ", served.context,
                                           " (--ctx-size), prompt and completion together"));
  g.logprobs = logprobs;
  g.top_logprobs = int(top_logprobs.value_or(0));
  const std::optional<int64_t> limit = max_completion_tokens ? max_completion_tokens : max_tokens;
  if (limit && *limit > served.context - n)  // as OpenAI and vLLM: refused, not cut short
    context_exceeded(
        prompt_field,
        str_cat("the prompt of '", prompt_field, "' has ", n, " tokens and '",
                max_completion_tokens ? "max_completion_tokens" : "max_tokens", "' asks for ",
                *limit, " more; this server's context holds ", served.context,
                " (--ctx-size), prompt and completion together: ask for at most ",
                served.context - n, " or send a shorter prompt"));
  out.max_tokens_given = bool(limit);
  g.params.max_tokens = limit ? *limit : served.context - n;
  if (min_tokens && *min_tokens > g.params.max_tokens)
    bad_request("min_tokens", str_cat("'min_tokens' (", *min_tokens, ") is more than the ",
                                      g.params.max_tokens, " tokens the request may generate"));
  g.params.min_tokens = min_tokens.value_or(0);
  model::apply_sampling_defaults(served.generation, given, g.params.sampling);
  if (!seed_given) g.params.sampling.seed = random_seed();
  finish_grammar();
}

// Compiled last, once every other field is known good (compiling costs the most).
void Parser::finish_grammar() {
  if (!grammar) return;
  if (out.generation.params.ignore_eos)
    bad_request("ignore_eos", str_cat("'ignore_eos' cannot be used with '", grammar->field,
                                      "': the output ends where the grammar does"));
  out.generation.grammar = compile_grammar(*grammar, served.grammar);
}

}  // namespace

ApiRequest parse_request(Api api, std::string_view body, const ServedModel& model,
                         const std::function<bool()>& cancelled) {
  ojson j;
  try {
    check_object_sizes(parse_json_text_strict(body, "request body", JsonTextRules{}), "");
    j = ojson::parse(body.begin(), body.end());
  } catch (const Error& e) {
    bad_request("", e.what());
  } catch (const ojson::exception& e) {
    bad_request("", str_cat("request body: invalid JSON (", e.what(), ")"));
  }
  if (!j.is_object())
    bad_request("", str_cat("request body must be a JSON object, got ", type_of(j)));
  Parser p(api, model, cancelled);
  for (const auto& [key, value] : j.items()) parse_field(p, key, value);
  p.finish();
  return std::move(p.out);
}

}  // namespace moex::serve
