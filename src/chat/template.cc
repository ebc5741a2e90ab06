// Template::parse / render and apply_chat_template (transformers' context building).
#include "chat/template.h"

#include "chat/ast.h"
#include "chat/builtins.h"
#include "chat/filters_impl.h"
#include "chat/lexer.h"
#include "chat/limits.h"
#include "chat/parser.h"
#include "chat/py_text.h"
#include "chat/renderer.h"
#include "core/error.h"

namespace moex::chat {

namespace {

// jinja2 resolves filter and test names when it compiles: an unknown one is an error even in
// code that never runs, except inside an if (test or branches) or an inline if, where jinja2
// defers the check to run time (its "soft" frames; a for loop or macro inside starts a fresh one).
void check_names(const Expr* e, const std::string& origin, bool soft) {
  if (e == nullptr) return;
  if (!soft && e->kind == ExprKind::kFilter && !has_filter(e->name))
    throw Error(located(origin, e->line, e->col, "no filter named '" + e->name + "'"));
  if (!soft && e->kind == ExprKind::kTest && !has_test(e->name))
    throw Error(located(origin, e->line, e->col, "no test named '" + e->name + "'"));
  soft = soft || e->kind == ExprKind::kCondExpr;
  for (const auto& a : e->args) check_names(a.get(), origin, soft);
  for (const auto& [k, a] : e->kwargs) check_names(a.get(), origin, soft);
}

void check_names(const Body& body, const std::string& origin, bool soft) {
  for (const auto& n : body) {
    const bool fresh = n->kind == NodeKind::kFor || n->kind == NodeKind::kMacro ||
                       n->kind == NodeKind::kCallBlock || n->kind == NodeKind::kFilterBlock ||
                       n->kind == NodeKind::kSetBlock || n->kind == NodeKind::kScope;
    const bool inner = fresh ? false : soft;
    check_names(n->expr.get(), origin, n->kind == NodeKind::kFilterBlock ? false : soft);
    check_names(n->expr2.get(), origin, inner);
    for (const auto& d : n->defaults) check_names(d.get(), origin, inner);
    for (const auto& [c, b] : n->branches) {
      check_names(c.get(), origin, true);
      check_names(b, origin, true);
    }
    check_names(n->body, origin, inner);
    check_names(n->else_body, origin, n->kind == NodeKind::kIf ? true : inner);
  }
}

}  // namespace

Template Template::parse(std::string_view source, std::string origin) {
  if (source.size() > kMaxTemplateBytes)
    fail(origin, ": the template has ", source.size(), " bytes, more than ", kMaxTemplateBytes,
         " (kMaxTemplateBytes)");
  Template t;
  t.origin_ = std::move(origin);
  auto body = std::make_shared<Body>(parse_template(tokenize(source, t.origin_), t.origin_));
  check_names(*body, t.origin_, false);
  t.body_ = std::move(body);
  return t;
}

std::string Template::render(const nlohmann::ordered_json& context,
                             const RenderOptions& options) const {
  if (!context.is_object()) fail(origin_, ": the render context must be a JSON object");
  RenderBudget budget(options.cancelled, options.max_work);  // outlives every value of the render
  ActiveBudget active(&budget);
  try {
    Value globals = Value::dict();
    add_globals(&globals);
    for (const auto& [k, v] : context.items()) globals.dict_obj().set(Value(k), from_json(v));
    Renderer r(origin_, globals);
    return r.render(*body_);
  } catch (const RenderError& e) {  // raised outside any node: the context, or a limit
    fail(origin_, ": ", e.what());
  }
}

namespace {

using ojson = nlohmann::ordered_json;

// _normalize_chat_messages and _alias_reasoning_fields of transformers' chat_template_utils.
ojson normalize_messages(const ojson& messages) {
  if (!messages.is_array()) fail("chat messages: expected a JSON array of message objects");
  if (messages.empty())
    fail("chat messages: cannot apply a chat template to an empty conversation");
  ojson out = ojson::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const ojson& m = messages[i];
    if (!m.is_object()) fail("chat messages[", i, "]: expected an object, got ", m.type_name());
    ojson kept = ojson::object();
    for (const auto& [k, v] : m.items())
      if (!v.is_null()) kept[k] = v;
    const ojson* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"})
      if (kept.contains(key)) {
        reasoning = &kept[key];
        break;
      }
    if (reasoning != nullptr) {
      ojson aliased = ojson::object();
      aliased["thinking"] = *reasoning;
      for (const auto& [k, v] : kept.items())
        if (k != "thinking") aliased[k] = v;
      aliased["reasoning_content"] = *reasoning;
      kept = std::move(aliased);
    }
    out.push_back(std::move(kept));
  }
  return out;
}

}  // namespace

std::string apply_chat_template(const Template& t, const ChatTemplateArgs& args,
                                const RenderOptions& options) {
  if (!args.tools.is_null() && !args.tools.is_array())
    fail("chat tools: expected a JSON array of tool schemas");
  if (!args.tools.is_null())
    for (const auto& tool : args.tools)
      if (!tool.is_object()) fail("chat tools: each tool must be a JSON object (a schema)");
  if (!args.documents.is_null() && !args.documents.is_array())
    fail("chat documents: expected a JSON array");
  ojson ctx = ojson::object();
  ctx["messages"] = normalize_messages(args.messages);
  ctx["tools"] = args.tools;
  ctx["documents"] = args.documents;
  ctx["add_generation_prompt"] = args.add_generation_prompt;
  for (const ojson* src : {&args.special_tokens, &args.extra}) {
    if (!src->is_object()) fail("chat template variables: expected a JSON object");
    for (const auto& [k, v] : src->items()) {
      if (k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt")
        fail("chat template variable '", k, "' is set by apply_chat_template itself");
      ctx[k] = v;
    }
  }
  return t.render(ctx, options);
}

}  // namespace moex::chat
