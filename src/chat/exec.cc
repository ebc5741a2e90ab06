// Statement execution: text and prints, if, for (loop.*, filter, else, break/continue), set
// (plain, tuple, namespace attribute, block), macros with caller(), filter blocks.
#include "chat/lexer.h"
#include "chat/limits.h"
#include "chat/py_text.h"
#include "chat/renderer.h"
#include "core/error.h"

namespace moex::chat {

namespace {

// Swaps a member for the lifetime of the guard.
template <typename T>
struct Swap {
  Swap(T* slot, T value) : slot(slot), saved(std::move(*slot)) { *slot = std::move(value); }
  ~Swap() { *slot = std::move(saved); }
  T* slot;
  T saved;
};

std::vector<Value> unpack(const Value& v, size_t n) {
  if (!v.is_list() && !v.is_string() && !v.is_dict())
    throw RenderError("TypeError: cannot unpack non-iterable " + type_name(v) + " object");
  std::vector<Value> items = iterate(v);
  if (items.size() < n)
    throw RenderError(str_cat("ValueError: not enough values to unpack (expected ", n, ", got ",
                              items.size(), ")"));
  if (items.size() > n)
    throw RenderError(str_cat("ValueError: too many values to unpack (expected ", n, ")"));
  return items;
}

}  // namespace

Renderer::Renderer(const std::string& origin, Value globals) : origin_(origin) {
  scope_ = root_ = std::make_shared<Scope>();
  for (const auto& [k, v] : globals.dict_obj().entries)
    if (k.is_string()) scope_->set(k.str(), v);
}

std::string Renderer::render(const Body& body) {
  std::string out;
  out_ = &out;
  exec_body(body);
  out_ = nullptr;
  return out;
}

void Renderer::write(const std::string& s) {
  if (out_->size() + s.size() > kMaxOutputBytes)
    throw RenderError(
        str_cat("the rendered text would pass ", kMaxOutputBytes, " bytes (kMaxOutputBytes)"));
  charge_bytes(s.size());
  out_->append(s);
}

Flow Renderer::exec_body(const Body& body) {
  for (const auto& n : body) {
    const Flow f = exec(*n);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Renderer::capture(const Body& body, std::shared_ptr<Scope> scope) {
  std::string text;
  Swap<std::string*> out(&out_, &text);
  Swap<std::shared_ptr<Scope>> sc(&scope_, std::move(scope));
  exec_body(body);
  return text;
}

Value Renderer::apply_block_filters(const Expr& chain, Value input) {
  Swap<Value> in(&block_input_, std::move(input));
  return eval(chain);
}

Flow Renderer::exec(const Node& n) {
  try {
    Nest nest(this);
    charge(1);
    switch (n.kind) {
      case NodeKind::kText:
        write(n.text);
        return Flow::kNormal;
      case NodeKind::kPrint:
        write(py_str(eval(*n.expr)));
        return Flow::kNormal;
      case NodeKind::kIf:
        for (const auto& [cond, body] : n.branches)
          if (truthy(eval(*cond))) return exec_body(body);
        return exec_body(n.else_body);
      case NodeKind::kFor:
        return exec_for(n);
      case NodeKind::kSet:
        exec_set(n);
        return Flow::kNormal;
      case NodeKind::kSetBlock: {
        auto child = std::make_shared<Scope>();
        child->parent = scope_;
        Value v(capture(n.body, child));
        if (n.expr) v = apply_block_filters(*n.expr, v);
        assign(n, v);
        return Flow::kNormal;
      }
      case NodeKind::kMacro:
        scope_->set(n.text, make_macro(n));
        return Flow::kNormal;
      case NodeKind::kCallBlock: {
        Value caller = Value::callable("caller", [this, &n, closure = weak_scope()](CallArgs& a) {
          return call_macro(n, closure_or_root(closure), a);
        });
        Value callee = eval(*n.expr->args[0]);
        if (callee.is_undefined()) callee.fail_undefined();
        if (!callee.is_callable())
          throw RenderError("TypeError: '" + type_name(callee) + "' object is not callable");
        CallArgs a = eval_args(*n.expr, 1);
        a.kw.emplace_back("caller", caller);
        write(py_str(callee.callable_obj().fn(a)));
        return Flow::kNormal;
      }
      case NodeKind::kFilterBlock: {
        auto child = std::make_shared<Scope>();
        child->parent = scope_;
        write(py_str(apply_block_filters(*n.expr, Value(capture(n.body, child)))));
        return Flow::kNormal;
      }
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
      case NodeKind::kScope: {
        auto child = std::make_shared<Scope>();
        child->parent = scope_;
        Swap<std::shared_ptr<Scope>> sc(&scope_, child);
        return exec_body(n.body);
      }
    }
  } catch (const RenderError& err) {
    throw Error(located(origin_, n.line, n.col, err.what()));
  }
  return Flow::kNormal;
}

namespace {
Value loop_object(const std::vector<Value>& items, size_t i, const Value& cycle) {
  const auto n = int64_t(items.size()), k = int64_t(i);
  Value loop = Value::dict();
  DictObj& d = loop.dict_obj();
  d.append(Value("index"), Value(k + 1));
  d.append(Value("index0"), Value(k));
  d.append(Value("revindex"), Value(n - k));
  d.append(Value("revindex0"), Value(n - k - 1));
  d.append(Value("first"), Value(k == 0));
  d.append(Value("last"), Value(k == n - 1));
  d.append(Value("length"), Value(n));
  d.append(Value("depth"), Value(1));
  d.append(Value("depth0"), Value(0));
  d.append(Value("previtem"), i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  d.append(Value("nextitem"),
           i + 1 < items.size() ? items[i + 1] : Value::undefined("there is no next item"));
  d.append(Value("cycle"), cycle);
  return loop;
}
}  // namespace

Flow Renderer::exec_for(const Node& n) {
  std::vector<Value> items = iterate(eval(*n.expr));
  const std::shared_ptr<Scope> parent = scope_;
  auto bind = [&](Scope* s, const Value& item) {
    if (!n.target_tuple) {
      s->set(n.targets[0], item);
      return;
    }
    const std::vector<Value> parts = unpack(item, n.targets.size());
    for (size_t k = 0; k < parts.size(); ++k) s->set(n.targets[k], parts[k]);
  };
  if (n.expr2) {
    std::vector<Value> kept;
    for (const Value& item : items) {
      charge(kLoopIterationUnits);
      auto s = std::make_shared<Scope>();
      s->parent = parent;
      bind(s.get(), item);
      Swap<std::shared_ptr<Scope>> sc(&scope_, s);
      if (truthy(eval(*n.expr2))) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(n.else_body);
  for (size_t i = 0; i < items.size(); ++i) {
    charge(kLoopIterationUnits);
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    bind(s.get(), items[i]);
    Value cycle = Value::callable("cycle", [i](CallArgs& a) {
      if (a.pos.empty()) throw RenderError("TypeError: no items for cycling given");
      return a.pos[i % a.pos.size()];
    });
    s->set("loop", loop_object(items, i, cycle));
    Swap<std::shared_ptr<Scope>> sc(&scope_, s);
    if (exec_body(n.body) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Renderer::assign(const Node& n, const Value& v) {
  if (!n.target_tuple) {
    scope_->set(n.targets[0], v);
    return;
  }
  const std::vector<Value> parts = unpack(v, n.targets.size());
  for (size_t k = 0; k < parts.size(); ++k) scope_->set(n.targets[k], parts[k]);
}

void Renderer::exec_set(const Node& n) {
  Value v = eval(*n.expr);
  if (n.ns_attr.empty()) {
    assign(n, v);
    return;
  }
  const Value* ns = scope_->find(n.targets[0]);
  if (ns == nullptr || !ns->is_namespace())
    throw RenderError("TemplateRuntimeError: cannot assign attribute on non-namespace object");
  if (n.ns_attr[0] == '_')
    throw RenderError(
        "SecurityError: chat templates cannot store underscore-prefixed attributes "
        "on a namespace, but got '" +
        n.ns_attr + "'");
  ns->dict_obj().set(Value(n.ns_attr), std::move(v));
}

// Macros hold their defining scope weakly: the scope holds the macro, so a strong reference
// would be a cycle that outlives the render. A macro called after its scope is gone (stored in
// a namespace and called after its loop ended) sees the template's top-level scope instead.
std::weak_ptr<Scope> Renderer::weak_scope() const { return scope_; }

std::shared_ptr<Scope> Renderer::closure_or_root(const std::weak_ptr<Scope>& closure) const {
  std::shared_ptr<Scope> s = closure.lock();
  return s ? s : root_;
}

Value Renderer::make_macro(const Node& n) {
  return Value::callable(n.text, [this, &n, closure = weak_scope()](CallArgs& a) {
    return call_macro(n, closure_or_root(closure), a);
  });
}

Value Renderer::call_macro(const Node& def, const std::shared_ptr<Scope>& closure, CallArgs& args) {
  if (call_depth_ >= kMaxCallDepth)
    throw RenderError(str_cat("macro calls nest deeper than ", kMaxCallDepth, " (kMaxCallDepth)"));
  Swap<int> depth(&call_depth_, call_depth_ + 1);
  auto s = std::make_shared<Scope>();
  s->parent = closure;
  const size_t np = def.params.size();
  std::vector<bool> bound(np, false);
  std::vector<Value> extra;
  for (size_t i = 0; i < args.pos.size(); ++i) {
    if (i < np) {
      s->set(def.params[i], args.pos[i]);
      bound[i] = true;
    } else {
      extra.push_back(args.pos[i]);
    }
  }
  Value kwargs = Value::dict();
  for (const auto& [k, v] : args.kw) {
    size_t p = 0;
    while (p < np && def.params[p] != k) ++p;
    if (p < np) {
      if (bound[p])
        throw RenderError("TypeError: macro '" + def.text + "' got multiple values for argument '" +
                          k + "'");
      s->set(k, v);
      bound[p] = true;
    } else if (k == "caller") {
      s->set("caller", v);
    } else {
      kwargs.dict_obj().set(Value(k), v);
    }
  }
  s->set("varargs", Value::list(std::move(extra)));
  s->set("kwargs", kwargs);
  for (size_t p = 0; p < np; ++p) {
    if (bound[p]) continue;
    if (def.defaults[p]) {
      Swap<std::shared_ptr<Scope>> sc(&scope_, s);
      s->set(def.params[p], eval(*def.defaults[p]));
    } else {
      s->set(def.params[p], Value::undefined("parameter '" + def.params[p] + "' was not provided"));
    }
  }
  return Value(capture(def.body, s));
}

}  // namespace moex::chat
