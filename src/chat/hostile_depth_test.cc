// Hostile templates that used to overflow the stack (issue #32): long operator chains, values
// that contain themselves, values nested 100k deep. Each must end in an error naming the
// limit (or print as jinja2 prints), never a crash.
#include <string>

#include "chat/chat_test_util.h"
#include "chat/limits.h"

namespace moex::chat::testing {
namespace {

// `first` then `n - 1` times `link`: "1 + 1 + 1 ...", "x.a.a.a ...".
std::string chain(const std::string& first, const std::string& link, int n) {
  std::string s = first;
  s.reserve(first.size() + link.size() * size_t(n));
  for (int i = 1; i < n; ++i) s += link;
  return s;
}

void expect_error(const std::string& tpl, const std::string& what, const std::string& ctx = "{}") {
  const std::string err = error_of(tpl, ctx);
  EXPECT_NE(err.find(what), std::string::npos) << tpl.substr(0, 60) << " -> " << err;
}

TEST(ChatHostileDepth, LongChainsAreRefusedByTheParser) {
  const char* const links[][2] = {{"1", " + 1"},  {"'a'", " ~ 'a'"}, {"true", " and true"},
                                  {"x", ".a"},    {"x", "[0]"},      {"'a'", "|trim"},
                                  {"1", " if 1"}, {"f", "()"},       {"1", " is number or 1"}};
  for (const auto& [first, link] : links) {
    SCOPED_TRACE(link);
    expect_error("{{ " + chain(first, link, 10000) + " }}", "kMaxExpressionDepth");
  }
  // 100k links: the parser stops at the limit instead of building (and freeing) a 100k-deep tree.
  expect_error("{{ " + chain("1", " + 1", 100000) + " }}", "kMaxExpressionDepth");
  expect_error("{% set x = " + chain("1", " ~ 1", 100000) + " %}", "kMaxExpressionDepth");
  // Below the limit a chain works.
  EXPECT_EQ(render("{{ " + chain("1", " + 1", 200) + " }}"), "200");
  EXPECT_EQ(render("{{ " + chain("' a '", "|trim", 200) + " }}"), "a");
}

TEST(ChatHostileDepth, EvaluationDepthCountsThroughMacroCalls) {
  // Each call level evaluates a 200-level chain with the recursive call at its bottom: the
  // stack grows by the chain times the calls, which kMaxEvalDepth bounds.
  const std::string body = chain("f(n - 1)", " ~ ''", 200);
  expect_error(
      "{% macro f(n) %}{% if n > 0 %}{{ " + body + " }}{% endif %}{% endmacro %}{{ f(30) }}",
      "kMaxEvalDepth");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ " + body +
                   " }}{% else %}x{% endif %}{% endmacro %}{{ f(3) }}"),
            "x");
}

TEST(ChatHostileDepth, ValuesThatContainThemselvesPrintAsJinja2) {
  // jinja2 3.1.6 prints these (Python's repr marks the self reference).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|string }}"),
            "<Namespace {'me': <Namespace {...}>}>");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set l = [ns] %}{% set ns.l = l %}{{ l }}"),
            "[<Namespace {'l': [...]}>]");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set d = {'k': ns} %}{% set ns.d = d %}{{ d }}"),
            "{'k': <Namespace {'d': {...}}>}");
  expect_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}",
               "TypeError: Object of type Namespace is not JSON serializable");
}

TEST(ChatHostileDepth, ValuesNested100kDeepAreRefused) {
  // Built one level per loop iteration (well within the work budget).
  const std::string loop = "{% for i in range(100000) %}";
  expect_error("{% set ns = namespace(l=[]) %}" + loop +
                   "{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l|tojson }}",
               "kMaxValueDepth");
  expect_error("{% set ns = namespace(l=[]) %}" + loop +
                   "{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l|string }}",
               "kMaxValueDepth");
  expect_error("{% set ns = namespace(d={}) %}" + loop +
                   "{% set ns.d = {'k': ns.d} %}{% endfor %}{{ ns.d|tojson }}",
               "kMaxValueDepth");
  // A chain of namespaces (mutable, so not depth-counted when built) is refused when printed,
  // and freed without recursion when the render ends.
  expect_error("{% set ns = namespace(n=none) %}" + loop +
                   "{% set ns.n = namespace(next=ns.n) %}{% endfor %}{{ ns|string }}",
               "kMaxValueDepth");
  EXPECT_EQ(render("{% set ns = namespace(n=none) %}" + loop +
                   "{% set ns.n = namespace(next=ns.n) %}{% endfor %}done"),
            "done");
  // Below the limit deep values work.
  EXPECT_EQ(render("{% set ns = namespace(l=[]) %}{% for i in range(3) %}{% set ns.l = [ns.l] "
                   "%}{% endfor %}{{ ns.l|tojson }} {{ ns.l }}"),
            "[[[[]]]] [[[[]]]]");
}

TEST(ChatHostileDepth, DeepJsonContextIsRefused) {
  const int n = kMaxValueDepth + 10;
  const std::string deep = std::string(size_t(n), '[') + std::string(size_t(n), ']');
  expect_error("{{ x|length }}", "kMaxValueDepth", "{\"x\": " + deep + "}");
}

}  // namespace
}  // namespace moex::chat::testing
