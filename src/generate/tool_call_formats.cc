// The tool-call formats (see tool_calls.h): names, detection from a template's source, markers,
// and each format's block parser. The shapes follow the templates of the llama.cpp corpus and
// the parsers of llama.cpp (common/chat.cpp) and vLLM (tool_parsers/).
#include <nlohmann/json.hpp>

#include "generate/marker_text.h"
#include "generate/tool_calls.h"

namespace moex::generate {
namespace {

using ojson = nlohmann::ordered_json;

// DeepSeek's markers use U+FF5C (fullwidth vertical line) and U+2581 (lower one eighth block).
constexpr std::string_view kDsCallsBegin = "<\uFF5Ctool\u2581calls\u2581begin\uFF5C>";
constexpr std::string_view kDsCallsEnd = "<\uFF5Ctool\u2581calls\u2581end\uFF5C>";
constexpr std::string_view kDsCallBegin = "<\uFF5Ctool\u2581call\u2581begin\uFF5C>";
constexpr std::string_view kDsCallEnd = "<\uFF5Ctool\u2581call\u2581end\uFF5C>";
constexpr std::string_view kDsSep = "<\uFF5Ctool\u2581sep\uFF5C>";

// JSON text of an object, or "" when `text` is not one.
std::string object_text(std::string_view text) {
  const ojson j = ojson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j.dump() : std::string();
}

bool add_call(std::vector<ParsedToolCall>& calls, std::string_view name, std::string args) {
  name = trim(name);
  if (name.empty() || args.empty()) return false;
  calls.push_back({std::string(name), std::move(args)});
  return true;
}

// {"name": N, "arguments": {...}} (also "parameters", and arguments as a JSON string).
bool hermes(std::string_view body, std::vector<ParsedToolCall>& calls) {
  const ojson j = ojson::parse(body.begin(), body.end(), nullptr, false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  const char* key = j.contains("arguments") ? "arguments" : "parameters";
  if (!j.contains(key)) return add_call(calls, j["name"].get<std::string>(), "{}");
  const ojson& a = j[key];
  std::string args = a.is_object()   ? a.dump()
                     : a.is_string() ? object_text(a.get<std::string>())
                                     : std::string();
  return add_call(calls, j["name"].get<std::string>(), std::move(args));
}

// A value between tags: one newline the template writes on each side is not part of it.
std::string_view strip_newlines(std::string_view v) {
  if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  return v;
}

// <function=NAME>\n<parameter=P>\nV\n</parameter>\n...</function>
bool qwen3_coder(std::string_view body, const ToolSchemas& s, std::vector<ParsedToolCall>& calls) {
  size_t at = 0;
  std::string_view fn;
  if (!take_between(body, at, "<function=", "</function>", fn) || !all_space(body.substr(at)))
    return false;
  const size_t gt = fn.find('>');
  if (gt == std::string_view::npos) return false;
  const std::string_view name = trim(fn.substr(0, gt));
  ojson args = ojson::object();
  std::string_view rest = fn.substr(gt + 1);
  size_t p = 0;
  std::string_view param;
  while (take_between(rest, p, "<parameter=", "</parameter>", param)) {
    const size_t e = param.find('>');
    if (e == std::string_view::npos) return false;
    const std::string key(trim(param.substr(0, e)));
    args[key] = s.value(name, key, strip_newlines(param.substr(e + 1)));
  }
  if (!all_space(rest.substr(p))) return false;
  return add_call(calls, name, args.dump());
}

// NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>...
bool glm45(std::string_view body, const ToolSchemas& s, std::vector<ParsedToolCall>& calls) {
  const size_t first = body.find("<arg_key>");
  const std::string_view name = trim(body.substr(0, first));
  if (name.find('<') != std::string_view::npos || name.find('\n') != std::string_view::npos)
    return false;
  ojson args = ojson::object();
  size_t p = first == std::string_view::npos ? body.size() : first;
  std::string_view key, value;
  while (take_between(body, p, "<arg_key>", "</arg_key>", key)) {
    if (!take_between(body, p, "<arg_value>", "</arg_value>", value)) return false;
    args[std::string(trim(key))] = s.value(name, trim(key), value);
  }
  if (!all_space(body.substr(p))) return false;
  return add_call(calls, name, args.dump());
}

// <invoke name="N"><parameter name="P">V</parameter>...</invoke>, one or more.
bool minimax_m2(std::string_view body, const ToolSchemas& s, std::vector<ParsedToolCall>& calls) {
  size_t p = 0;
  std::string_view invoke;
  bool any = false;
  while (take_between(body, p, "<invoke name=", "</invoke>", invoke)) {
    const size_t gt = invoke.find('>');
    if (gt == std::string_view::npos) return false;
    std::string_view name = trim(invoke.substr(0, gt));
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
      name = name.substr(1, name.size() - 2);
    ojson args = ojson::object();
    const std::string_view inner = invoke.substr(gt + 1);
    size_t q = 0;
    std::string_view param;
    while (take_between(inner, q, "<parameter name=", "</parameter>", param)) {
      const size_t e = param.find('>');
      if (e == std::string_view::npos) return false;
      std::string_view key = trim(param.substr(0, e));
      if (key.size() >= 2 && key.front() == '"' && key.back() == '"')
        key = key.substr(1, key.size() - 2);
      args[std::string(key)] = s.value(name, key, trim(param.substr(e + 1)));
    }
    if (!all_space(inner.substr(q)) || !add_call(calls, name, args.dump())) return false;
    any = true;
  }
  return any && all_space(body.substr(p));
}

// V3:   <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
// V3.1: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
bool deepseek_v3(std::string_view body, std::vector<ParsedToolCall>& calls) {
  size_t p = 0;
  std::string_view call;
  bool any = false;
  while (take_between(body, p, kDsCallBegin, kDsCallEnd, call)) {
    const size_t sep = call.find(kDsSep);
    if (sep == std::string_view::npos) return false;
    std::string_view head = trim(call.substr(0, sep)), tail = call.substr(sep + kDsSep.size());
    std::string_view name = head, args = tail;
    if (head == "function") {
      const size_t nl = tail.find('\n');
      if (nl == std::string_view::npos) return false;
      name = tail.substr(0, nl);
      args = trim(tail.substr(nl + 1));
      if (args.starts_with("```json")) args.remove_prefix(7);
      if (args.ends_with("```")) args.remove_suffix(3);
    }
    if (!add_call(calls, name, object_text(trim(args)))) return false;
    any = true;
  }
  return any && all_space(body.substr(p));
}

// <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>ARGS<|tool_call_end|>...
bool kimi_k2(std::string_view body, std::vector<ParsedToolCall>& calls) {
  size_t p = 0;
  std::string_view call;
  bool any = false;
  while (take_between(body, p, "<|tool_call_begin|>", "<|tool_call_end|>", call)) {
    constexpr std::string_view kArgs = "<|tool_call_argument_begin|>";
    const size_t a = call.find(kArgs);
    if (a == std::string_view::npos) return false;
    std::string_view id = trim(call.substr(0, a));
    if (id.starts_with("functions.")) id.remove_prefix(10);
    const size_t colon = id.rfind(':');
    if (colon != std::string_view::npos) id = id.substr(0, colon);
    if (!add_call(calls, id, object_text(trim(call.substr(a + kArgs.size()))))) return false;
    any = true;
  }
  return any && all_space(body.substr(p));
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kQwen3Coder: return "qwen3_coder";
    case ToolCallFormat::kGlm45: return "glm45";
    case ToolCallFormat::kMiniMaxM2: return "minimax_m2";
    case ToolCallFormat::kDeepSeekV3: return "deepseek_v3";
    case ToolCallFormat::kKimiK2: return "kimi_k2";
    case ToolCallFormat::kHarmony: return "harmony";
  }
  return "?";
}

// Most specific first: several formats open their calls with <tool_call>.
ToolCallFormat detect_tool_call_format(std::string_view t) {
  auto has = [&](std::string_view s) { return t.find(s) != std::string_view::npos; };
  if (has("<|channel|>")) return ToolCallFormat::kHarmony;
  if (has("<minimax:tool_call>")) return ToolCallFormat::kMiniMaxM2;
  if (has("<|tool_calls_section_begin|>")) return ToolCallFormat::kKimiK2;
  if (has("tool\u2581calls\u2581begin")) return ToolCallFormat::kDeepSeekV3;
  if (has("<arg_key>")) return ToolCallFormat::kGlm45;
  if (has("<function=") && has("<parameter=")) return ToolCallFormat::kQwen3Coder;
  if (has("<tool_call>")) return ToolCallFormat::kHermes;
  return ToolCallFormat::kNone;
}

bool deepseek_calls_in_code_block(std::string_view t) {
  return t.find("```json") != std::string_view::npos;
}

ToolCallMarkers tool_call_markers(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kMiniMaxM2: return {"<minimax:tool_call>", "</minimax:tool_call>"};
    case ToolCallFormat::kKimiK2:
      return {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"};
    case ToolCallFormat::kDeepSeekV3: return {std::string(kDsCallsBegin), std::string(kDsCallsEnd)};
    default: return {"<tool_call>", "</tool_call>"};
  }
}

std::vector<std::string> tool_call_special_markers(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwen3Coder: return {"<tool_call>", "</tool_call>"};
    case ToolCallFormat::kGlm45:
      return {"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
              "</arg_value>"};
    case ToolCallFormat::kMiniMaxM2: return {"<minimax:tool_call>", "</minimax:tool_call>"};
    case ToolCallFormat::kDeepSeekV3:
      return {std::string(kDsCallsBegin), std::string(kDsCallsEnd), std::string(kDsCallBegin),
              std::string(kDsCallEnd), std::string(kDsSep)};
    case ToolCallFormat::kKimiK2:
      return {"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
              "<|tool_call_argument_begin|>", "<|tool_call_end|>"};
    case ToolCallFormat::kHarmony:
      return {"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>"};
    case ToolCallFormat::kNone: return {};
  }
  return {};
}

bool parse_tool_call_block(ToolCallFormat f, std::string_view block, const ToolSchemas& schemas,
                           std::vector<ParsedToolCall>& calls) {
  switch (f) {
    case ToolCallFormat::kHermes: return hermes(trim(block), calls);
    case ToolCallFormat::kQwen3Coder: return qwen3_coder(block, schemas, calls);
    case ToolCallFormat::kGlm45: return glm45(block, schemas, calls);
    case ToolCallFormat::kMiniMaxM2: return minimax_m2(block, schemas, calls);
    case ToolCallFormat::kDeepSeekV3: return deepseek_v3(block, calls);
    case ToolCallFormat::kKimiK2: return kimi_k2(block, calls);
    default: return false;
  }
}

ToolSchemas::ToolSchemas(const ojson& tools) : tools_(tools) {}

ojson ToolSchemas::value(std::string_view function, std::string_view param,
                         std::string_view text) const {
  std::string type = "string";
  for (const ojson& t : tools_) {
    const auto f = t.find("function");
    if (f == t.end() || !f->is_object() || f->value("name", "") != function) continue;
    const auto p = f->find("parameters");
    if (p == f->end() || !p->is_object() || !p->contains("properties")) break;
    const ojson& props = (*p)["properties"];
    const std::string key(param);
    if (props.is_object() && props.contains(key) && props[key].is_object() &&
        props[key].contains("type") && props[key]["type"].is_string())
      type = props[key]["type"].get<std::string>();
    break;
  }
  if (type == "string") return std::string(text);
  const std::string_view t = trim(text);
  ojson j = ojson::parse(t.begin(), t.end(), nullptr, false);
  return j.is_discarded() ? ojson(std::string(text)) : j;
}

}  // namespace moex::generate
