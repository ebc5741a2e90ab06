// Finding a checkpoint's chat template the way transformers' tokenizer loading does:
// chat_template.jinja (and additional_chat_templates/*.jinja) beside tokenizer_config.json take
// priority over its `chat_template` entry (a string or a list of {name, template}).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace moex::chat {

struct ChatTemplateSource {
  std::string source;  // the template text
  std::string origin;  // the file (and template name) it came from, for messages
  // bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token as strings
  // (tokenizer_config.json; an AddedToken object gives its "content"); absent ones omitted.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
};

// The template of checkpoint directory `dir` (or of a tokenizer_config.json path). With
// several named templates: "tool_use" when with_tools and present, else "default", else a
// moex::Error listing the names (transformers' get_chat_template). moex::Error when the
// directory has no chat template at all.
ChatTemplateSource load_chat_template(const std::string& dir, bool with_tools);

// A JSON file (messages, tools) with object key order kept, as Python's json.load keeps it;
// moex::Error naming `path` and `what` when it is missing, too large or not valid JSON.
nlohmann::ordered_json read_json_file_ordered(const std::string& path, const std::string& what);

}  // namespace moex::chat
