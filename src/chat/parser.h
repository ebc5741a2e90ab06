// The template parser: tokens -> statement and expression trees with jinja2's grammar and
// operator precedence. Expressions live in parser_expr.cc, statements in parser_stmt.cc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace moex::chat {

// moex::Error "origin:line:col: ..." for malformed or unsupported syntax, and for nesting
// past kMaxNestingDepth.
Body parse_template(std::vector<Token> tokens, const std::string& origin);

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& origin)
      : toks_(std::move(tokens)), origin_(origin) {}

  Body parse_all();

  // Expressions (parser_expr.cc).
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_tuple(bool with_condexpr = true, bool allow_empty = false);

 private:
  // Statements (parser_stmt.cc).
  Body parse_body(const std::vector<std::string>& end_tags, std::string* which);
  NodePtr parse_statement();
  NodePtr parse_for(const Token& at);
  NodePtr parse_if(const Token& at);
  NodePtr parse_set(const Token& at);
  NodePtr parse_macro(const Token& at);
  NodePtr parse_call_block(const Token& at);
  NodePtr parse_filter_block(const Token& at);
  void parse_params(Node* n);
  void parse_targets(Node* n, const char* stop_word);

  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_call(ExprPtr callee);
  void parse_call_args(Expr* call);
  ExprPtr parse_list();
  ExprPtr parse_dict();

  // Token access.
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t k = 1) const;
  const Token& next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool is_op(std::string_view op) const { return cur().type == Tok::kOp && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == Tok::kName && cur().value == n; }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view n);
  void expect_op(std::string_view op);
  std::string expect_name();
  void expect_block_end();
  [[noreturn]] void error(const Token& at, const std::string& what) const;
  std::string describe(const Token& t) const;
  ExprPtr make(ExprKind k, const Token& at) const;
  // Sets e's height from its children's; an error past kMaxExpressionDepth (chains such as
  // a ~ b ~ c... grow one level per link without nesting in the parser).
  ExprPtr grown(ExprPtr e) const;

  // Counts nesting for kMaxNestingDepth.
  struct Depth {
    explicit Depth(Parser* p);
    ~Depth() { --p->depth_; }
    Parser* p;
  };

  std::vector<Token> toks_;
  const std::string& origin_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for loops around the current statement, inside one macro body
};

}  // namespace moex::chat
