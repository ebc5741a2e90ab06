// `moex chat-template`: renders a checkpoint's chat template over a conversation (a JSON file
// of messages) exactly as transformers' apply_chat_template does, and prints the prompt.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chat/template.h"
#include "chat/template_files.h"
#include "model/gguf/gguf_model.h"
#include "core/error.h"
#include "core/file_read.h"
#include "tools/command.h"
#include "tools/util_flags.h"

namespace moex::tools {
namespace {

struct ChatTemplateFlags {
  std::string model;
  std::string template_file;
  std::string messages;
  std::string tools;
  std::vector<std::string> vars;
  bool add_generation_prompt = false;
};

// --var k=v: v as JSON when it parses (true, 3, "x", [1]), else as a plain string.
void add_var(nlohmann::ordered_json* extra, const std::string& kv) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    fail("--var: '", kv, "' is not NAME=VALUE (e.g. --var enable_thinking=false)");
  const std::string value = kv.substr(eq + 1);
  nlohmann::ordered_json v = nlohmann::ordered_json::parse(value, nullptr, false);
  (*extra)[kv.substr(0, eq)] = v.is_discarded() ? nlohmann::ordered_json(value) : v;
}

int run_chat_template(const ChatTemplateFlags& f) {
  if (f.model.empty() == f.template_file.empty())
    fail("chat-template: give exactly one of -m DIR and --template FILE");
  chat::ChatTemplateArgs args;
  args.messages = chat::read_json_file_ordered(f.messages, "--messages file");
  if (!f.tools.empty()) args.tools = chat::read_json_file_ordered(f.tools, "--tools file");
  args.add_generation_prompt = f.add_generation_prompt;
  chat::ChatTemplateSource src;
  if (!f.model.empty()) {
    src = model::load_model_chat_template(f.model, !f.tools.empty());
  } else {
    src.source = read_small_file(f.template_file, int64_t{1} << 20, "--template file");
    src.origin = f.template_file;
  }
  args.special_tokens = src.special_tokens;
  for (const auto& kv : f.vars) add_var(&args.extra, kv);
  const chat::Template t = chat::Template::parse(src.source, src.origin);
  const std::string prompt = chat::apply_chat_template(t, args);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

MOEX_REGISTER_COMMAND(
    chat_template, "chat-template",
    "render a chat template over a conversation as transformers' apply_chat_template does",
    [](CLI::App& sub) -> std::function<int()> {
      auto f = std::make_shared<ChatTemplateFlags>();
      sub.add_option("-m,--model", f->model,
                     "checkpoint directory (chat_template.jinja or tokenizer_config.json)")
          ->type_name("DIR")
          ->check(non_empty());
      sub.add_option("--template", f->template_file, "a template file instead of a checkpoint")
          ->type_name("FILE")
          ->check(non_empty());
      sub.add_option("--messages", f->messages, "JSON array of {role, content, ...} messages")
          ->type_name("FILE")
          ->required()
          ->check(non_empty());
      sub.add_option("--tools", f->tools, "JSON array of tool schemas")
          ->type_name("FILE")
          ->check(non_empty());
      sub.add_option("--var", f->vars,
                     "template variable NAME=VALUE (VALUE as JSON if it parses, else a string), "
                     "e.g. enable_thinking=false; repeatable")
          ->type_name("NAME=VALUE");
      sub.add_flag("--add-generation-prompt", f->add_generation_prompt,
                   "end with the header of the assistant's turn");
      return [=] { return run_chat_template(*f); };
    });

}  // namespace moex::tools
