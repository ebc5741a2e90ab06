// ChatPrompt: OpenAI's `developer` role reaches a template that never names it as `system`,
// and a template that names it as it is; the tool_use template is judged on its own.
#include "serve/chat_prompt.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "serve/serve_test_util.h"

namespace moex::serve {
namespace {

using ojson = nlohmann::ordered_json;
using testing::TestModel;

ojson conversation(const std::string& first_role) {
  return ojson::array({{{"role", first_role}, {"content", "Answer in French."}},
                       {{"role", "user"}, {"content", "hi"}}});
}

// The ChatML test template writes every role as it is and never mentions "developer".
TEST(ChatPrompt, DeveloperBecomesSystemForATemplateWithoutTheRole) {
  TestModel m;
  EXPECT_TRUE(m.chat->developer_as_system());
  const std::string text = m.chat->render(conversation("developer"));
  EXPECT_EQ(text, m.chat->render(conversation("system")));
  EXPECT_NE(text.find("<|im_start|>system\nAnswer in French."), std::string::npos) << text;
  EXPECT_EQ(text.find("developer"), std::string::npos) << text;
}

// Qwen3's template keeps only the roles it names: without the mapping the message vanishes.
TEST(ChatPrompt, DeveloperIsNotDroppedByATemplateThatSkipsUnknownRoles) {
  TestModel m;
  std::ofstream(m.dir.file("chat_template.jinja"))
      << "{%- for x in messages -%}{%- if x.role in ['system', 'user', 'assistant'] -%}"
         "[{{ x.role }}] {{ x.content }};{%- endif -%}{%- endfor -%}";
  const ChatPrompt chat(m.dir.path(), *m.tokenizer);
  EXPECT_EQ(chat.render(conversation("developer")), "[system] Answer in French.;[user] hi;");
}

// A template that handles the role (as gpt-oss's harmony template does) gets it unchanged.
TEST(ChatPrompt, DeveloperStaysForATemplateThatNamesIt) {
  TestModel m;
  std::ofstream(m.dir.file("chat_template.jinja"))
      << "{%- for x in messages -%}{%- if x.role == 'developer' -%}# Instructions\n"
         "{%- endif -%}<|{{ x.role }}|>{{ x.content }};{%- endfor -%}";
  const ChatPrompt chat(m.dir.path(), *m.tokenizer);
  EXPECT_FALSE(chat.developer_as_system());
  EXPECT_EQ(chat.render(conversation("developer")),
            "# Instructions<|developer|>Answer in French.;<|user|>hi;");
}

// tokenizer_config.json with a default and a tool_use template: each is judged on its own.
TEST(ChatPrompt, TheToolUseTemplateIsJudgedOnItsOwn) {
  TestModel m;
  std::filesystem::remove(m.dir.file("chat_template.jinja"));
  ojson config = ojson::parse(std::ifstream(m.dir.file("tokenizer_config.json")));
  config["chat_template"] = ojson::array(
      {{{"name", "default"},
        {"template", "{%- for x in messages -%}<{{ x.role }}>{{ x.content }}{%- endfor -%}"}},
       {{"name", "tool_use"},
        {"template",
         "{%- for x in messages -%}{%- if x.role == 'developer' -%}DEV{%- endif -%}"
         "<{{ x.role }}>{{ x.content }}{%- endfor -%}{{ tools | length }}"}}});
  std::ofstream(m.dir.file("tokenizer_config.json")) << config.dump();
  const ChatPrompt chat(m.dir.path(), *m.tokenizer);
  EXPECT_TRUE(chat.developer_as_system(false));
  EXPECT_FALSE(chat.developer_as_system(true));
  const ojson tools = ojson::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  EXPECT_EQ(chat.render(conversation("developer")), "<system>Answer in French.<user>hi");
  EXPECT_EQ(chat.render(conversation("developer"), ojson::object(), {}, tools),
            "DEV<developer>Answer in French.<user>hi1");
}

}  // namespace
}  // namespace moex::serve
