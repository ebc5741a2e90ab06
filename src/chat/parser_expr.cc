// Expression parsing with jinja2's precedence: condexpr < or < and < not < compare < +,- < ~ <
// *,/,//,% < ** < unary -,+ < postfix (.attr, [i], (call)) < filters and tests.
#include "chat/limits.h"
#include "chat/parser.h"
#include "core/error.h"

namespace moex::chat {

Parser::Depth::Depth(Parser* parser) : p(parser) {
  if (++p->depth_ > kMaxNestingDepth)
    p->error(p->cur(), str_cat("expressions and blocks nest deeper than ", kMaxNestingDepth,
                               " levels (kMaxNestingDepth)"));
}

const Token& Parser::peek(size_t k) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }

bool Parser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view n) {
  if (!is_name(n)) return false;
  next();
  return true;
}

std::string Parser::describe(const Token& t) const {
  switch (t.type) {
    case Tok::kEof:
      return "end of template";
    case Tok::kBlockEnd:
      return "end of statement block";
    case Tok::kVarEnd:
      return "end of print statement";
    case Tok::kData:
      return "template text";
    case Tok::kString:
      return "string literal";
    default:
      return "'" + t.value + "'";
  }
}

void Parser::error(const Token& at, const std::string& what) const {
  throw Error(located(origin_, at.line, at.col, what));
}

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) error(cur(), str_cat("expected '", op, "', got ", describe(cur())));
}

std::string Parser::expect_name() {
  if (cur().type != Tok::kName) error(cur(), "expected a name, got " + describe(cur()));
  return next().value;
}

ExprPtr Parser::make(ExprKind k, const Token& at) const {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = at.line;
  e->col = at.col;
  return e;
}

ExprPtr Parser::grown(ExprPtr e) const {
  int h = 0;
  for (const auto& a : e->args)
    if (a) h = std::max(h, a->height);
  for (const auto& [k, a] : e->kwargs) h = std::max(h, a->height);
  e->height = h + 1;
  if (e->height > kMaxExpressionDepth)
    throw Error(located(origin_, e->line, e->col,
                        str_cat("the expression is more than ", kMaxExpressionDepth,
                                " levels deep (kMaxExpressionDepth); a chain of operators, "
                                "filters, attributes or calls counts one level per link")));
  return e;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  Depth d(this);
  if (!with_condexpr) return parse_or();
  ExprPtr expr = parse_or();
  while (is_name("if")) {
    const Token at = next();
    auto c = make(ExprKind::kCondExpr, at);
    c->args.push_back(parse_or());
    c->args.push_back(std::move(expr));
    c->args.push_back(skip_name("else") ? parse_expression() : nullptr);
    expr = grown(std::move(c));
  }
  return expr;
}

ExprPtr Parser::parse_tuple(bool with_condexpr, bool allow_empty) {
  const Token at = cur();
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  for (;;) {
    if (!args.empty()) expect_op(",");
    const Tok t = cur().type;
    if (t == Tok::kVarEnd || t == Tok::kBlockEnd || is_op(")") ||
        (!with_condexpr && (is_name("if") || is_name("recursive"))))
      break;
    args.push_back(parse_expression(with_condexpr));
    if (is_op(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!allow_empty) error(cur(), "expected an expression, got " + describe(cur()));
  }
  auto tup = make(ExprKind::kTuple, at);
  tup->args = std::move(args);
  return grown(std::move(tup));
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    auto e = make(ExprKind::kOr, next());
    e->args.push_back(std::move(left));
    e->args.push_back(parse_and());
    left = grown(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    auto e = make(ExprKind::kAnd, next());
    e->args.push_back(std::move(left));
    e->args.push_back(parse_not());
    left = grown(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (!is_name("not")) return parse_compare();
  Depth d(this);
  auto e = make(ExprKind::kUnary, next());
  e->name = "not";
  e->args.push_back(parse_not());
  return grown(std::move(e));
}

ExprPtr Parser::parse_compare() {
  const Token at = cur();
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  for (;;) {
    std::string op;
    if (cur().type == Tok::kOp &&
        (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
         cur().value == ">" || cur().value == ">=")) {
      op = next().value;
    } else if (is_name("in")) {
      next();
      op = "in";
    } else if (is_name("not") && peek().type == Tok::kName && peek().value == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::kCompare, at);
      cmp->args.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? grown(std::move(cmp)) : std::move(first);
}

namespace {
ExprPtr binary(ExprPtr e, ExprPtr l, ExprPtr r, std::string op) {
  e->name = std::move(op);
  e->args.push_back(std::move(l));
  e->args.push_back(std::move(r));
  return e;
}
}  // namespace

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token at = next();
    left = grown(binary(make(ExprKind::kBinary, at), std::move(left), parse_concat(), at.value));
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    const Token at = next();
    left = grown(binary(make(ExprKind::kBinary, at), std::move(left), parse_math2(), "~"));
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token at = next();
    left = grown(binary(make(ExprKind::kBinary, at), std::move(left), parse_pow(), at.value));
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const Token at = next();
    left = grown(binary(make(ExprKind::kBinary, at), std::move(left), parse_unary(true), "**"));
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Depth d(this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const Token at = next();
    node = make(ExprKind::kUnary, at);
    node->name = at.value;
    node->args.push_back(parse_unary(false));
    node = grown(std::move(node));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token at = cur();
  switch (at.type) {
    case Tok::kName: {
      next();
      auto e = make(ExprKind::kLiteral, at);
      if (at.value == "true" || at.value == "True")
        e->literal = Value(true);
      else if (at.value == "false" || at.value == "False")
        e->literal = Value(false);
      else if (at.value == "none" || at.value == "None")
        e->literal = Value::none();
      else {
        e->kind = ExprKind::kName;
        e->name = at.value;
      }
      return e;
    }
    case Tok::kString: {
      std::string s;
      while (cur().type == Tok::kString) s += next().value;
      auto e = make(ExprKind::kLiteral, at);
      e->literal = Value(std::move(s));
      return e;
    }
    case Tok::kInt:
    case Tok::kFloat: {
      next();
      auto e = make(ExprKind::kLiteral, at);
      try {
        if (at.type == Tok::kFloat)
          e->literal = Value(std::stod(at.value));
        else
          e->literal = Value(int64_t(std::stoll(at.value)));
      } catch (const std::exception&) {
        error(at, "number literal '" + at.value + "' is out of range");
      }
      return e;
    }
    default:
      break;
  }
  if (is_op("(")) {
    next();
    ExprPtr e = parse_tuple(true, true);
    expect_op(")");
    return e;
  }
  if (is_op("[")) return parse_list();
  if (is_op("{")) return parse_dict();
  error(at, "unexpected " + describe(at));
}

ExprPtr Parser::parse_list() {
  auto e = make(ExprKind::kList, next());
  while (!is_op("]")) {
    if (!e->args.empty()) expect_op(",");
    if (is_op("]")) break;
    e->args.push_back(parse_expression());
  }
  expect_op("]");
  return grown(std::move(e));
}

ExprPtr Parser::parse_dict() {
  auto e = make(ExprKind::kDict, next());
  while (!is_op("}")) {
    if (!e->args.empty()) expect_op(",");
    if (is_op("}")) break;
    e->args.push_back(parse_expression());
    expect_op(":");
    e->args.push_back(parse_expression());
  }
  expect_op("}");
  return grown(std::move(e));
}

}  // namespace moex::chat
