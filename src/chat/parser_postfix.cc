// Postfix parsing: attribute and item access, slices, calls, filters (|f) and tests (is t).
#include "chat/parser.h"
#include "chat/py_text.h"
#include "core/error.h"

namespace moex::chat {

ExprPtr Parser::parse_postfix(ExprPtr node) {
  for (;;) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

// A call is located where its callee starts (raise_exception(...) points at the name).
ExprPtr Parser::parse_call(ExprPtr callee) {
  auto call = make(ExprKind::kCall, cur());
  call->line = callee->line;
  call->col = callee->col;
  call->args.push_back(std::move(callee));
  parse_call_args(call.get());
  return grown(std::move(call));
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  for (;;) {
    if (is_op("|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token at = next();
  if (at.value == ".") {
    const Token attr = next();
    if (attr.type == Tok::kName) {
      auto e = make(ExprKind::kGetattr, attr);
      e->name = attr.value;
      e->args.push_back(std::move(node));
      return grown(std::move(e));
    }
    if (attr.type != Tok::kInt)
      error(attr, "expected a name or number after '.', got " + describe(attr));
    auto e = make(ExprKind::kGetitem, attr);
    auto idx = make(ExprKind::kLiteral, attr);
    const std::optional<int64_t> n = parse_digits(attr.value);
    if (!n) error(attr, "number '" + attr.value + "' after '.' is out of range");
    idx->literal = Value(*n);
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(idx));
    return grown(std::move(e));
  }
  // '[' subscript (',' subscript)* ']', each an expression or a slice a:b:c.
  std::vector<ExprPtr> subs;
  while (!is_op("]")) {
    if (!subs.empty()) expect_op(",");
    const Token st = cur();
    ExprPtr parts[3];
    if (!is_op(":")) {
      parts[0] = parse_expression();
      if (!is_op(":")) {
        subs.push_back(std::move(parts[0]));
        continue;
      }
    }
    next();  // ':'
    if (!is_op("]") && !is_op(",") && !is_op(":")) parts[1] = parse_expression();
    if (skip_op(":") && !is_op("]") && !is_op(",")) parts[2] = parse_expression();
    auto s = make(ExprKind::kSlice, st);
    s->args.push_back(nullptr);  // the object, filled below
    for (auto& p : parts) s->args.push_back(std::move(p));
    subs.push_back(grown(std::move(s)));
  }
  expect_op("]");
  if (subs.empty()) error(at, "expected a subscript inside '[]'");
  if (subs.size() == 1 && subs[0]->kind == ExprKind::kSlice) {
    subs[0]->args[0] = std::move(node);
    return grown(std::move(subs[0]));
  }
  auto e = make(ExprKind::kGetitem, at);
  e->args.push_back(std::move(node));
  if (subs.size() == 1) {
    e->args.push_back(std::move(subs[0]));
  } else {
    auto tup = make(ExprKind::kTuple, at);
    for (auto& s : subs) {
      if (s->kind == ExprKind::kSlice) error(at, "multi-dimensional slices are not supported");
      tup->args.push_back(std::move(s));
    }
    e->args.push_back(grown(std::move(tup)));
  }
  return grown(std::move(e));
}

void Parser::parse_call_args(Expr* call) {
  expect_op("(");
  bool need_comma = false;
  while (!is_op(")")) {
    if (need_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) error(cur(), "*args and **kwargs in calls are not supported");
    if (cur().type == Tok::kName && peek().type == Tok::kOp && peek().value == "=") {
      std::string key = next().value;
      next();
      call->kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!call->kwargs.empty()) error(cur(), "positional argument after a keyword argument");
      call->args.push_back(parse_expression());
    }
    need_comma = true;
  }
  expect_op(")");
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    const Token at = cur();
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    auto f = make(ExprKind::kFilter, at);
    f->name = std::move(name);
    f->args.push_back(std::move(node));
    if (is_op("(")) parse_call_args(f.get());
    node = grown(std::move(f));
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  next();  // 'is'
  auto t = make(ExprKind::kTest, cur());
  t->negated = skip_name("not");
  std::string name = expect_name();
  while (skip_op(".")) name += "." + expect_name();
  t->name = std::move(name);
  t->args.push_back(std::move(node));
  const Tok ty = cur().type;
  if (is_op("(")) {
    parse_call_args(t.get());
  } else if ((ty == Tok::kName || ty == Tok::kString || ty == Tok::kInt || ty == Tok::kFloat ||
              is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) error(cur(), "tests cannot be chained with 'is'");
    t->args.push_back(parse_postfix(parse_primary()));
  }
  return grown(std::move(t));
}

}  // namespace moex::chat
