// Parser: the trees for precedence and postfix chains, statement structure, and syntax errors
// with line:col.
#include "chat/parser.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace moex::chat {
namespace {

Body parse(const std::string& src) { return parse_template(tokenize(src, "t"), "t"); }

const Expr& print_expr(const Body& b, size_t i = 0) { return *b.at(i)->expr; }

std::string parse_error(const std::string& src) {
  try {
    parse(src);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatParser, FiltersBindTighterThanUnaryMinusOperand) {
  // -x|abs is (-x)|abs; not a is b is not (a is b); a ~ b + c is a ~ (b + c)
  const Body b = parse("{{ -x|abs }}{{ not a is b }}{{ a ~ b + c }}");
  EXPECT_EQ(print_expr(b, 0).kind, ExprKind::kFilter);
  EXPECT_EQ(print_expr(b, 0).args[0]->kind, ExprKind::kUnary);
  EXPECT_EQ(print_expr(b, 1).kind, ExprKind::kUnary);
  EXPECT_EQ(print_expr(b, 1).args[0]->kind, ExprKind::kTest);
  const Expr& cat = print_expr(b, 2);
  EXPECT_EQ(cat.name, "+");
  EXPECT_EQ(cat.args[0]->name, "~");
}

TEST(ChatParser, PostfixChainsAndSlices) {
  const Body b = parse("{{ m[0].content[1:].strip() }}");
  const Expr& call = print_expr(b);
  ASSERT_EQ(call.kind, ExprKind::kCall);
  const Expr& attr = *call.args[0];
  EXPECT_EQ(attr.kind, ExprKind::kGetattr);
  EXPECT_EQ(attr.name, "strip");
  EXPECT_EQ(attr.args[0]->kind, ExprKind::kSlice);
  EXPECT_EQ(attr.args[0]->args[0]->kind, ExprKind::kGetattr);
}

TEST(ChatParser, CompareChainAndNotIn) {
  const Body b = parse("{{ 1 < x <= 3 }}{{ a not in b }}");
  EXPECT_EQ(print_expr(b, 0).ops, (std::vector<std::string>{"<", "<="}));
  EXPECT_EQ(print_expr(b, 1).ops, (std::vector<std::string>{"notin"}));
}

TEST(ChatParser, StatementShapes) {
  const Body b = parse(
      "{% for k, v in d.items() if v %}{% else %}{% endfor %}"
      "{% if a %}{% elif b %}{% else %}{% endif %}"
      "{% set ns.x = 1 %}{% set y %}t{% endset %}"
      "{% macro m(a, b=2) %}{% endmacro %}{% call(z) m(1) %}{% endcall %}");
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(b[0]->kind, NodeKind::kFor);
  EXPECT_EQ(b[0]->targets, (std::vector<std::string>{"k", "v"}));
  EXPECT_TRUE(b[0]->expr2 != nullptr);
  EXPECT_EQ(b[1]->branches.size(), 2u);
  EXPECT_EQ(b[2]->ns_attr, "x");
  EXPECT_EQ(b[3]->kind, NodeKind::kSetBlock);
  EXPECT_EQ(b[4]->params, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(b[4]->defaults[0], nullptr);
  EXPECT_EQ(b[5]->kind, NodeKind::kCallBlock);
  EXPECT_EQ(b[5]->params, (std::vector<std::string>{"z"}));
}

TEST(ChatParser, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("a\n{% if x %}b"),
            "t:2:12: unexpected end of template; expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(parse_error("{% frobnicate %}"), "t:1:4: unknown tag 'frobnicate'");
  EXPECT_EQ(parse_error("{% include 'x' %}"),
            "t:1:4: the 'include' tag is not supported in chat templates");
  EXPECT_EQ(parse_error("{{ 1 + }}"), "t:1:8: unexpected end of print statement");
  EXPECT_EQ(parse_error("{% break %}"), "t:1:4: 'break' outside a for loop");
  EXPECT_EQ(parse_error("{% for x in y recursive %}{% endfor %}"),
            "t:1:15: recursive for loops are not supported");
  EXPECT_EQ(parse_error("{% macro m(a=1, b) %}{% endmacro %}"),
            "t:1:18: non-default argument follows default argument");
  EXPECT_EQ(parse_error("{{ f(a=1, 2) }}"), "t:1:11: positional argument after a keyword argument");
  EXPECT_EQ(parse_error("{% set x %}"), "t:1:12: unexpected end of template; expected 'endset'");
}

}  // namespace
}  // namespace moex::chat
