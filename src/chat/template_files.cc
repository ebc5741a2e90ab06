// load_chat_template: chat_template.jinja / additional_chat_templates/*.jinja /
// tokenizer_config.json "chat_template", selected as transformers selects them.
#include "chat/template_files.h"

#include <filesystem>
#include <map>
#include <system_error>

#include "chat/limits.h"
#include "core/error.h"
#include "core/file_read.h"
#include "core/json_text.h"

namespace moex::chat {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int64_t kMaxTokenizerConfigBytes = int64_t{64} << 20;

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

}  // namespace

ojson read_json_file_ordered(const std::string& path, const std::string& what) {
  const std::string text = read_small_file(path, kMaxTokenizerConfigBytes, what);
  JsonTextRules rules;
  rules.reject_duplicate_keys = false;  // Python's json.load keeps the last, as nlohmann does
  (void)parse_json_text_strict(text, path, rules);
  return ojson::parse(text);
}

namespace {

std::string read_template(const fs::path& p) {
  return read_small_file(p.string(), int64_t(kMaxTemplateBytes), "chat template");
}

}  // namespace

ChatTemplateSource load_chat_template(const std::string& dir_or_file, bool with_tools) {
  fs::path dir = dir_or_file, config = dir / "tokenizer_config.json";
  if (fs::path(dir_or_file).filename() == "tokenizer_config.json") {
    config = dir_or_file;
    dir = config.parent_path();
  }
  ChatTemplateSource out;
  ojson cfg = ojson::object();
  if (path_exists(config)) {
    cfg = read_json_file_ordered(config.string(), "tokenizer config");
    if (!cfg.is_object()) fail(config.string(), ": expected a JSON object");
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                            "cls_token", "mask_token"}) {
      const auto it = cfg.find(key);
      if (it == cfg.end() || it->is_null()) continue;
      if (it->is_string())
        out.special_tokens[key] = *it;
      else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        out.special_tokens[key] = (*it)["content"];
      else
        fail(config.string(), ": ", key, ": expected a string or an object with \"content\"");
    }
  }
  // name -> (text, origin); files beside the config take priority over its entry.
  std::map<std::string, std::pair<std::string, std::string>> named;
  const fs::path jinja = dir / "chat_template.jinja", extra = dir / "additional_chat_templates";
  if (path_exists(jinja)) named["default"] = {read_template(jinja), jinja.string()};
  std::error_code ec;
  if (fs::is_directory(extra, ec))
    for (const auto& e : fs::directory_iterator(extra, ec))
      if (e.path().extension() == ".jinja")
        named[e.path().stem().string()] = {read_template(e.path()), e.path().string()};
  bool single = named.size() == 1 && named.count("default");
  if (named.empty()) {
    const auto it = cfg.find("chat_template");
    if (it == cfg.end() || it->is_null())
      fail(dir.string(),
           ": no chat template (neither chat_template.jinja nor a \"chat_template\" "
           "entry in tokenizer_config.json)");
    const std::string where = config.string() + ": chat_template";
    if (it->is_string()) {
      named["default"] = {it->get<std::string>(), where};
      single = true;
    } else if (it->is_array()) {
      for (const auto& t : *it) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
            !t.contains("template") || !t["template"].is_string())
          fail(where, ": expected a list of {\"name\": ..., \"template\": ...} objects");
        const std::string name = t["name"].get<std::string>();
        named[name] = {t["template"].get<std::string>(), where + "[" + name + "]"};
      }
    } else {
      fail(where, ": expected a string or a list of named templates, got ", it->type_name());
    }
  }
  std::string pick = "default";
  if (!single) {
    if (with_tools && named.count("tool_use"))
      pick = "tool_use";
    else if (!named.count("default")) {
      std::string names;
      for (const auto& [n, t] : named) names += (names.empty() ? "" : ", ") + n;
      fail(dir.string(), ": several chat templates and none named \"default\" (", names, ")");
    }
  }
  out.source = named[pick].first;
  out.origin = named[pick].second;
  return out;
}

}  // namespace moex::chat
