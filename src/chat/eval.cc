// Expression evaluation: names, literals, operators, attribute/item access, calls, filters
// and tests; every error is given the line:col of the innermost expression that raised it.
#include "chat/lexer.h"
#include "chat/limits.h"
#include "chat/py_text.h"
#include "chat/renderer.h"
#include "core/error.h"

namespace moex::chat {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get())
    for (const auto& [k, v] : s->vars)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars)
    if (k == name) {
      old = std::move(v);
      return;
    }
  vars.emplace_back(name, std::move(v));
}

Renderer::Nest::Nest(Renderer* renderer) : r(renderer) {
  if (++r->eval_depth_ > kMaxEvalDepth) {
    --r->eval_depth_;
    throw RenderError(str_cat("expressions and statements evaluate nested deeper than ",
                              kMaxEvalDepth, " levels, macro calls included (kMaxEvalDepth)"));
  }
}

Value Renderer::eval(const Expr& e) {
  try {
    Nest nest(this);
    charge(1);
    Value v = eval_inner(e);
    if (v.is_string()) {
      check_string_size(v.str().size());
      if (e.kind != ExprKind::kName && e.kind != ExprKind::kLiteral &&
          e.kind != ExprKind::kGetattr && e.kind != ExprKind::kGetitem)
        charge_bytes(v.str().size());
    }
    return v;
  } catch (const RenderError& err) {
    throw Error(located(origin_, e.line, e.col, err.what()));
  }
}

CallArgs Renderer::eval_args(const Expr& e, size_t first) {
  CallArgs a;
  for (size_t i = first; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i]));
  for (const auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x));
  return a;
}

Value Renderer::eval_inner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName: {
      const Value* v = scope_->find(e.name);
      return v ? *v : Value::undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      for (const auto& x : e.args) items.push_back(eval(*x));
      return Value::list(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        if (k.is_list() && !k.is_tuple()) throw RenderError("TypeError: unhashable type: 'list'");
        if (k.is_dict()) throw RenderError("TypeError: unhashable type: 'dict'");
        d.dict_obj().set(k, eval(*e.args[i + 1]));
      }
      return d;
    }
    case ExprKind::kGetattr:
      return get_attr(eval(*e.args[0]), e.name);
    case ExprKind::kGetitem: {
      Value obj = eval(*e.args[0]);
      return get_item(obj, eval(*e.args[1]));
    }
    case ExprKind::kSlice: {
      Value obj = eval(*e.args[0]);
      Value parts[3];
      for (int i = 0; i < 3; ++i) parts[i] = e.args[1 + i] ? eval(*e.args[1 + i]) : Value::none();
      return slice_value(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::kCall:
      return eval_call(e);
    case ExprKind::kFilter: {
      // A filter block's chain starts from the block's rendered text (block_input_).
      Value input = e.args[0] ? eval(*e.args[0]) : block_input_;
      CallArgs a = eval_args(e, 1);
      return apply_filter(e.name, input, a);
    }
    case ExprKind::kTest: {
      Value v = eval(*e.args[0]);
      CallArgs a = eval_args(e, 1);
      return Value(apply_test(e.name, v, a) != e.negated);
    }
    case ExprKind::kUnary: {
      Value v = eval(*e.args[0]);
      if (e.name == "not") return Value(!truthy(v));
      if (v.is_undefined()) v.fail_undefined();
      if (!v.is_number())
        throw RenderError("TypeError: bad operand type for unary " + e.name + ": '" + type_name(v) +
                          "'");
      if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
      if (v.is_float()) return Value(-v.as_double());
      if (v.as_int() == INT64_MIN) throw RenderError("OverflowError: integer too large");
      return Value(-v.as_int());
    }
    case ExprKind::kBinary: {
      Value a = eval(*e.args[0]);
      Value b = eval(*e.args[1]);
      if (e.name == "~") {
        std::string s = py_str(a);
        const std::string t = py_str(b);
        check_string_size(s.size() + t.size());
        return Value(s += t);
      }
      return binary_op(e.name, a, b);
    }
    case ExprKind::kAnd: {
      Value a = eval(*e.args[0]);
      return truthy(a) ? eval(*e.args[1]) : a;
    }
    case ExprKind::kOr: {
      Value a = eval(*e.args[0]);
      return truthy(a) ? a : eval(*e.args[1]);
    }
    case ExprKind::kCompare:
      return eval_compare(e);
    case ExprKind::kCondExpr:
      if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
      return e.args[2] ? eval(*e.args[2]) : Value::undefined("the inline if had no else");
  }
  throw RenderError("internal error: unknown expression kind");
}

Value Renderer::eval_compare(const Expr& e) {
  Value left = eval(*e.args[0]);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i + 1]);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==")
      ok = equals(left, right);
    else if (op == "!=")
      ok = !equals(left, right);
    else if (op == "in")
      ok = contains(right, left);
    else if (op == "notin")
      ok = !contains(right, left);
    else {
      const int c = compare(left, right);
      ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Renderer::eval_call(const Expr& e) {
  Value callee = eval(*e.args[0]);
  if (callee.is_undefined()) callee.fail_undefined();
  if (!callee.is_callable())
    throw RenderError("TypeError: '" + type_name(callee) + "' object is not callable");
  CallArgs a = eval_args(e, 1);
  charge(int64_t(a.pos.size() + a.kw.size()));
  return callee.callable_obj().fn(a);
}

}  // namespace moex::chat
