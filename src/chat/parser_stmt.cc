// Statement parsing: text, {{ print }}, and the tags for/if/set/macro/call/filter/break/
// continue/generation; anything else (include, extends, block...) is an error naming the tag.
#include "chat/parser.h"
#include "core/error.h"

namespace moex::chat {

Body parse_template(std::vector<Token> tokens, const std::string& origin) {
  return Parser(std::move(tokens), origin).parse_all();
}

Body Parser::parse_all() {
  std::string which;
  Body body = parse_body({}, &which);
  if (cur().type != Tok::kEof) error(cur(), "unexpected " + describe(cur()));
  return body;
}

void Parser::expect_block_end() {
  if (cur().type != Tok::kBlockEnd)
    error(cur(), "expected end of statement block ('%}'), got " + describe(cur()));
  next();
}

namespace {
std::string join_tags(const std::vector<std::string>& tags) {
  std::string s;
  for (size_t i = 0; i < tags.size(); ++i) s += (i ? " or '" : "'") + tags[i] + "'";
  return s;
}
}  // namespace

// Nodes up to one of `end_tags` (a {% tag %} whose name is left as the current token, its
// name stored in *which), or to the end of the template when end_tags is empty.
Body Parser::parse_body(const std::vector<std::string>& end_tags, std::string* which) {
  Depth d(this);
  Body body;
  for (;;) {
    const Token& t = cur();
    if (t.type == Tok::kEof) {
      if (!end_tags.empty())
        error(t, "unexpected end of template; expected " + join_tags(end_tags));
      return body;
    }
    if (t.type == Tok::kData) {
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::kText;
      n->line = t.line;
      n->col = t.col;
      n->text = next().value;
      body.push_back(std::move(n));
    } else if (t.type == Tok::kVarBegin) {
      next();
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::kPrint;
      n->line = cur().line;
      n->col = cur().col;
      n->expr = parse_tuple();
      if (cur().type != Tok::kVarEnd)
        error(cur(), "expected end of print statement ('}}'), got " + describe(cur()));
      next();
      body.push_back(std::move(n));
    } else if (t.type == Tok::kBlockBegin) {
      const Token& name = peek();
      if (name.type == Tok::kName)
        for (const auto& e : end_tags)
          if (name.value == e) {
            next();
            *which = e;
            return body;
          }
      next();
      body.push_back(parse_statement());
      expect_block_end();
    } else {
      error(t, "unexpected " + describe(t));
    }
  }
}

NodePtr Parser::parse_statement() {
  const Token at = cur();
  if (at.type != Tok::kName) error(at, "expected a tag name, got " + describe(at));
  const std::string& tag = at.value;
  if (tag == "for") return parse_for(next());
  if (tag == "if") return parse_if(next());
  if (tag == "set") return parse_set(next());
  if (tag == "macro") return parse_macro(next());
  if (tag == "call") return parse_call_block(next());
  if (tag == "filter") return parse_filter_block(next());
  auto n = std::make_unique<Node>();
  n->line = at.line;
  n->col = at.col;
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) error(at, "'" + tag + "' outside a for loop");
    next();
    n->kind = tag == "break" ? NodeKind::kBreak : NodeKind::kContinue;
    return n;
  }
  if (tag == "generation") {
    next();
    expect_block_end();
    std::string which;
    n->kind = NodeKind::kScope;
    n->body = parse_body({"endgeneration"}, &which);
    next();
    return n;
  }
  if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block" ||
      tag == "with" || tag == "autoescape" || tag == "do" || tag == "trans")
    error(at, "the '" + tag + "' tag is not supported in chat templates");
  error(at, "unknown tag '" + tag + "'");
}

void Parser::parse_targets(Node* n, const char* stop_word) {
  const bool paren = skip_op("(");
  for (;;) {
    n->targets.push_back(expect_name());
    if (!skip_op(",")) break;
    n->target_tuple = true;
    if (is_name(stop_word) || is_op(")") || is_op("=")) break;
  }
  if (paren) {
    expect_op(")");
    if (n->targets.size() > 1) n->target_tuple = true;
  }
}

NodePtr Parser::parse_for(const Token& at) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kFor;
  n->line = at.line;
  n->col = at.col;
  parse_targets(n.get(), "in");
  if (!skip_name("in")) error(cur(), "expected 'in' in the for tag, got " + describe(cur()));
  n->expr = parse_tuple(false);
  if (skip_name("if")) n->expr2 = parse_expression();
  if (is_name("recursive")) error(cur(), "recursive for loops are not supported");
  expect_block_end();
  std::string which;
  ++loop_depth_;
  n->body = parse_body({"endfor", "else"}, &which);
  --loop_depth_;
  next();
  if (which == "else") {
    expect_block_end();
    n->else_body = parse_body({"endfor"}, &which);
    next();
  }
  return n;
}

NodePtr Parser::parse_if(const Token& at) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kIf;
  n->line = at.line;
  n->col = at.col;
  std::string which;
  for (;;) {
    ExprPtr cond = parse_tuple(false);
    expect_block_end();
    Body body = parse_body({"elif", "else", "endif"}, &which);
    next();
    n->branches.emplace_back(std::move(cond), std::move(body));
    if (which != "elif") break;
  }
  if (which == "else") {
    expect_block_end();
    n->else_body = parse_body({"endif"}, &which);
    next();
  }
  return n;
}

NodePtr Parser::parse_set(const Token& at) {
  auto n = std::make_unique<Node>();
  n->line = at.line;
  n->col = at.col;
  if (cur().type == Tok::kName && peek().type == Tok::kOp && peek().value == ".") {
    n->targets.push_back(next().value);
    next();
    n->ns_attr = expect_name();
  } else {
    parse_targets(n.get(), "");
  }
  if (skip_op("=")) {
    n->kind = NodeKind::kSet;
    n->expr = parse_tuple();
    return n;
  }
  if (!n->ns_attr.empty() || n->target_tuple)
    error(cur(), "a block set ({% set x %}...{% endset %}) takes one plain name");
  n->kind = NodeKind::kSetBlock;
  if (is_op("|")) n->expr = parse_filter(nullptr, false);
  expect_block_end();
  std::string which;
  n->body = parse_body({"endset"}, &which);
  next();
  return n;
}

void Parser::parse_params(Node* n) {
  expect_op("(");
  while (!is_op(")")) {
    if (!n->params.empty()) expect_op(",");
    if (is_op(")")) break;
    n->params.push_back(expect_name());
    if (skip_op("=")) {
      n->defaults.push_back(parse_expression());
    } else {
      if (!n->defaults.empty() && n->defaults.back())
        error(cur(), "non-default argument follows default argument");
      n->defaults.push_back(nullptr);
    }
  }
  expect_op(")");
}

NodePtr Parser::parse_macro(const Token& at) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kMacro;
  n->line = at.line;
  n->col = at.col;
  n->text = expect_name();
  parse_params(n.get());
  expect_block_end();
  std::string which;
  const int loops = loop_depth_;
  loop_depth_ = 0;
  n->body = parse_body({"endmacro"}, &which);
  loop_depth_ = loops;
  next();
  return n;
}

NodePtr Parser::parse_call_block(const Token& at) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kCallBlock;
  n->line = at.line;
  n->col = at.col;
  if (is_op("(")) parse_params(n.get());
  n->expr = parse_expression();
  if (n->expr->kind != ExprKind::kCall) error(at, "expected a call after 'call'");
  expect_block_end();
  std::string which;
  const int loops = loop_depth_;
  loop_depth_ = 0;
  n->body = parse_body({"endcall"}, &which);
  loop_depth_ = loops;
  next();
  return n;
}

NodePtr Parser::parse_filter_block(const Token& at) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kFilterBlock;
  n->line = at.line;
  n->col = at.col;
  n->expr = parse_filter(nullptr, true);
  expect_block_end();
  std::string which;
  n->body = parse_body({"endfilter"}, &which);
  next();
  return n;
}

}  // namespace moex::chat
