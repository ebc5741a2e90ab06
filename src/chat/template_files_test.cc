// Finding a checkpoint's chat template as transformers does (chat_template.jinja over
// tokenizer_config.json, named templates, tool_use), special tokens, and the context
// apply_chat_template builds (null keys dropped, reasoning aliased).
#include "chat/template_files.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_test_util.h"

namespace moex::chat::testing {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() /
           ("moex_chat_tpl_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name, std::ios::binary) << text;
  }
  fs::path path;
  static inline int counter = 0;
};

TEST(ChatTemplateFiles, ConfigStringAndSpecialTokens) {
  TempDir d;
  d.write(
      "tokenizer_config.json",
      R"({"chat_template": "{{ bos_token }}x", "bos_token": {"__type": "AddedToken", "content": "<s>"},
              "eos_token": "</s>", "unk_token": null})");
  const ChatTemplateSource s = load_chat_template(d.path.string(), false);
  EXPECT_EQ(s.source, "{{ bos_token }}x");
  EXPECT_EQ(s.special_tokens.dump(), R"({"bos_token":"<s>","eos_token":"</s>"})");
  EXPECT_NE(s.origin.find("tokenizer_config.json"), std::string::npos);
}

TEST(ChatTemplateFiles, NamedTemplatesPickToolUseWithTools) {
  TempDir d;
  d.write(
      "tokenizer_config.json",
      R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})");
  EXPECT_EQ(load_chat_template(d.path.string(), false).source, "D");
  EXPECT_EQ(load_chat_template(d.path.string(), true).source, "T");
}

TEST(ChatTemplateFiles, NoDefaultAmongSeveralIsAnError) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "a", "template": "A"}, {"name": "b", "template": "B"}]})");
  EXPECT_THROW(load_chat_template(d.path.string(), false), Error);
}

TEST(ChatTemplateFiles, JinjaFileTakesPriorityOverTheConfig) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"chat_template": "from config", "eos_token": "</s>"})");
  d.write("chat_template.jinja", "from file");
  const ChatTemplateSource s = load_chat_template(d.path.string(), false);
  EXPECT_EQ(s.source, "from file");
  EXPECT_EQ(s.special_tokens["eos_token"], "</s>");
  d.write("additional_chat_templates/tool_use.jinja", "tools file");
  EXPECT_EQ(load_chat_template(d.path.string(), true).source, "tools file");
  EXPECT_EQ(load_chat_template(d.path.string(), false).source, "from file");
}

TEST(ChatTemplateFiles, MissingTemplateIsAnErrorNamingTheDirectory) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  try {
    load_chat_template(d.path.string(), false);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
  }
}

TEST(ChatApply, NullKeysDroppedAndReasoningAliased) {
  const Template t = Template::parse(
      "{% for m in messages %}{{ m|tojson }};{% endfor %}{{ add_generation_prompt }}{{ tools }}"
      "{{ eos_token }}{{ enable_thinking }}",
      "t");
  ChatTemplateArgs a;
  a.messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "q", "tool_calls": null},
          {"role": "assistant", "content": "a", "reasoning": "r"}])");
  a.add_generation_prompt = true;
  a.special_tokens["eos_token"] = "</s>";
  a.extra["enable_thinking"] = false;
  EXPECT_EQ(
      apply_chat_template(t, a),
      R"({"role": "user", "content": "q"};{"thinking": "r", "role": "assistant", "content": "a", )"
      R"("reasoning": "r", "reasoning_content": "r"};TrueNone</s>False)");
}

}  // namespace
}  // namespace moex::chat::testing
