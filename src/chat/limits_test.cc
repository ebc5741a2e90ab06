// Each hard limit of limits.h is reached by a small hostile template and ends in a moex::Error
// naming the limit, not a hang, a crash or unbounded memory.
#include "chat/limits.h"

#include <string>

#include "chat/chat_test_util.h"

namespace moex::chat::testing {
namespace {

void expect_limit(const std::string& tpl, const std::string& limit) {
  const std::string err = error_of(tpl);
  EXPECT_NE(err.find(limit), std::string::npos) << tpl.substr(0, 80) << " -> " << err;
}

TEST(ChatLimits, NestingDepthOfExpressionsAndBlocks) {
  const int n = kMaxNestingDepth + 5;
  expect_limit("{{ " + std::string(n, '(') + "1" + std::string(n, ')') + " }}", "kMaxNestingDepth");
  std::string ifs;
  for (int i = 0; i < n; ++i) ifs += "{% if true %}";
  for (int i = 0; i < n; ++i) ifs += "{% endif %}";
  expect_limit(ifs, "kMaxNestingDepth");
  expect_limit("{{ " + std::string(size_t(n), '[') + std::string(size_t(n), ']') + " }}",
               "kMaxNestingDepth");
  // Below the bound it parses.
  EXPECT_EQ(render("{{ " + std::string(20, '(') + "1" + std::string(20, ')') + " }}"), "1");
}

TEST(ChatLimits, MacroCallDepth) {
  expect_limit("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "kMaxCallDepth");
  expect_limit("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}",
               "kMaxCallDepth");
}

TEST(ChatLimits, WorkBudgetOfLoops) {
  expect_limit("{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}",
               "kMaxRenderWork");
  // Filters walking lists count too.
  expect_limit("{% for i in range(100000) %}{{ range(100)|join }}{% endfor %}", "kMaxRenderWork");
}

// RenderOptions::max_work lowers the budget (the fuzz harness's), never raises it.
TEST(ChatLimits, CallerBudget) {
  const Template t =
      Template::parse("{% for i in range(n) %}{{ i % 10 }}{% endfor %}", "budget.jinja");
  const auto ctx = [](int n) { return nlohmann::ordered_json{{"n", n}}; };
  RenderOptions small;
  small.max_work = 20000;
  // ~20 units per iteration: 500 iterations fit in 20000, 5000 do not.
  EXPECT_EQ(t.render(ctx(500), small).size(), 500u);
  try {
    t.render(ctx(5000), small);
    ADD_FAILURE() << "a render past max_work must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 20000 units"), std::string::npos) << e.what();
  }
  // Above kMaxRenderWork it is kMaxRenderWork: the loop of WorkBudgetOfLoops still fails.
  RenderOptions huge;
  huge.max_work = kMaxRenderWork * 4;
  const Template loops = Template::parse(
      "{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "t");
  try {
    loops.render(nlohmann::ordered_json::object(), huge);
    ADD_FAILURE() << "max_work must not raise the budget past kMaxRenderWork";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kMaxRenderWork"), std::string::npos) << e.what();
  }
}

TEST(ChatLimits, OutputAndStringSize) {
  expect_limit("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "kMaxOutputBytes");
  expect_limit("{{ 'x' * 100000000 }}", "kMaxOutputBytes");
  expect_limit("{{ 'ab' * 9223372036854775807 }}", "kMaxOutputBytes");
  expect_limit("{{ ('x' * 10000000) ~ ('y' * 10000000) }}", "kMaxOutputBytes");
  expect_limit(
      "{{ ('x' * 100000)|replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy' * 10) }}",
      "kMaxOutputBytes");
  expect_limit("{{ [1] * 10000000 }}", "kMaxListItems");
}

TEST(ChatLimits, WorkBudgetOfQuadraticConcatenation) {
  expect_limit(
      "{% set ns = namespace(s='') %}{% for i in range(4000) %}{% set ns.s = ns.s ~ ('x' * 1000) "
      "%}{% endfor %}",
      "kMaxRenderWork");
}

TEST(ChatLimits, SandboxRange) {
  expect_limit("{{ range(100001)|length }}", "MAX_RANGE");
  EXPECT_EQ(render("{{ range(100000)|length }}"), "100000");
}

TEST(ChatLimits, TemplateSize) {
  expect_limit(std::string(kMaxTemplateBytes + 1, 'x'), "kMaxTemplateBytes");
}

}  // namespace
}  // namespace moex::chat::testing
