// Value construction and the Python semantics of truth, equality and ordering.
#include "chat/value.h"

#include <algorithm>
#include <cmath>

#include "chat/budget.h"
#include "chat/limits.h"
#include "core/error.h"

namespace moex::chat {

namespace {
const std::vector<Value> kNoItems;
const std::string kNoHint;
}  // namespace

Value Value::undefined(std::string hint, bool unsafe) {
  Value v;
  v.s_ = std::make_shared<const std::string>(std::move(hint));
  v.i_ = unsafe ? 1 : 0;
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(std::string s)
    : kind_(Kind::kString), s_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.i_ = 1;
  return v;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  return sequence(std::move(items), tuple ? Seq::kTuple : Seq::kList);
}

Value Value::sequence(std::vector<Value> items, Seq kind) {
  Value v;
  v.kind_ = Kind::kList;
  auto l = std::make_shared<ListObj>();
  charge(1 + int64_t(items.size()));
  for (const Value& x : items) l->depth = std::max(l->depth, 1 + x.depth());
  if (l->depth > kMaxValueDepth)
    throw RenderError(str_cat("a list or tuple nested ", l->depth, " deep would pass ",
                              kMaxValueDepth, " levels (kMaxValueDepth)"));
  l->items = std::move(items);
  l->seq = kind;
  v.l_ = std::move(l);
  return v;
}

Value Value::dict() {
  Value v;
  v.kind_ = Kind::kDict;
  v.d_ = std::make_shared<DictObj>();
  return v;
}

Value Value::namespace_object() {
  Value v = dict();
  v.d_->is_namespace = true;
  adopt_namespace(v.d_);
  return v;
}

Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.c_ = std::make_shared<const CallableObj>(CallableObj{std::move(name), std::move(fn)});
  return v;
}

bool Value::is_tuple() const { return is_list() && l_->seq == Seq::kTuple; }
Seq Value::seq() const { return l_->seq; }
bool Value::is_namespace() const { return is_dict() && d_->is_namespace; }
const std::vector<Value>& Value::items() const { return is_list() ? l_->items : kNoItems; }
const std::string& Value::undefined_hint() const { return s_ ? *s_ : kNoHint; }

int Value::depth() const {
  if (is_list()) return l_->depth;
  if (is_dict()) return d_->is_namespace ? 1 : d_->depth;
  return 0;
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::kList:
      return l_.get();
    case Kind::kDict:
      return d_.get();
    case Kind::kCallable:
      return c_.get();
    default:
      return nullptr;
  }
}

void Value::fail_undefined() const {
  const std::string& h = undefined_hint();
  if (unsafe_undefined()) throw RenderError("SecurityError: " + h);
  throw RenderError("UndefinedError: " + (h.empty() ? std::string("value is undefined") : h));
}

bool Value::same_object(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kList:
      return l_ == o.l_;
    case Kind::kDict:
      return d_ == o.d_;
    case Kind::kCallable:
      return c_ == o.c_;
    case Kind::kString:
      return s_ == o.s_ || *s_ == *o.s_;
    default:
      return equals(*this, o);
  }
}

Value CallArgs::take(size_t index, std::string_view name, Value fallback) {
  used_pos.resize(pos.size());
  used_kw.resize(kw.size());
  if (index < pos.size()) {
    used_pos[index] = true;
    return pos[index];
  }
  for (size_t i = 0; i < kw.size(); ++i)
    if (kw[i].first == name) {
      used_kw[i] = true;
      return kw[i].second;
    }
  return fallback;
}

void CallArgs::finish(std::string_view fn) const {
  for (size_t i = 0; i < pos.size(); ++i)
    if (i >= used_pos.size() || !used_pos[i])
      throw RenderError("TypeError: " + std::string(fn) + "() got too many positional arguments");
  for (size_t i = 0; i < kw.size(); ++i)
    if (i >= used_kw.size() || !used_kw[i])
      throw RenderError("TypeError: " + std::string(fn) +
                        "() got an unexpected keyword argument '" + kw[i].first + "'");
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return false;
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return v.as_int() != 0;
    case Kind::kFloat:
      return v.as_double() != 0.0;
    case Kind::kString:
      return !v.str().empty();
    case Kind::kList:
      return v.is_iterator() || !v.items().empty();
    case Kind::kDict:
      return v.is_namespace() || !v.dict_obj().entries.empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      if (a.str().size() != b.str().size()) return false;
      charge_bytes(a.str().size());
      return a.str() == b.str();
    case Kind::kList: {
      if (a.is_iterator() || b.is_iterator()) return a.same_object(b);
      if (a.seq() != b.seq() || a.items().size() != b.items().size()) return false;
      if (a.same_object(b)) return true;
      charge(int64_t(a.items().size()));
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!equals(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return a.same_object(b);
      const auto& ea = a.dict_obj().entries;
      if (ea.size() != b.dict_obj().entries.size()) return false;
      if (a.same_object(b)) return true;
      charge(int64_t(ea.size()));
      for (const auto& [k, v] : ea) {
        const Value* o = b.dict_obj().find(k);
        if (o == nullptr || !equals(v, *o)) return false;
      }
      return true;
    }
    case Kind::kCallable:
      return a.same_object(b);
    default:
      return false;
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (y < x ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (b.as_int() < a.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_plain_list() && b.is_plain_list() && a.seq() == b.seq()) {
    const auto &x = a.items(), &y = b.items();
    charge(int64_t(std::min(x.size(), y.size())));
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return compare(x[i], y[i]);
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw RenderError("TypeError: '<' not supported between instances of '" + type_name(a) +
                    "' and '" + type_name(b) + "'");
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      switch (v.seq()) {
        case Seq::kList:
          return "list";
        case Seq::kTuple:
          return "tuple";
        case Seq::kGenerator:
          return "generator";
        case Seq::kReverse:
          return "list_reverseiterator";
        case Seq::kDictItems:
          return "dict_items";
        case Seq::kDictKeys:
          return "dict_keys";
        case Seq::kDictValues:
          return "dict_values";
      }
      return "list";
    case Kind::kDict:
      return v.is_namespace() ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

}  // namespace moex::chat
