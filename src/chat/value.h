// The values a chat template computes with: Python's None/bool/int/float/str/list/tuple/dict
// as jinja2 sees them, plus jinja2's Undefined, callables (macros, globals) and namespaces.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace moex::chat {

// A render-time error before it is given a template location (the evaluator adds line:col).
class RenderError : public std::runtime_error {
 public:
  explicit RenderError(const std::string& what) : std::runtime_error(what) {}
};

// raise_exception(msg) from the template itself.
class RaisedError : public RenderError {
 public:
  explicit RaisedError(const std::string& what) : RenderError(what) {}
};

class Value;
struct CallArgs;
struct DictObj;
struct ListObj;
using NativeFn = std::function<Value(CallArgs&)>;

struct CallableObj {
  std::string name;
  NativeFn fn;
};

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

// What a kList value is in Python: a list or tuple, one of the lazy iterators jinja2's filters
// return (map, select, items...: always true, no len(), not subscriptable, not JSON), or a
// dict view of d.items()/keys()/values() (len() but not subscriptable nor JSON).
enum class Seq { kList, kTuple, kGenerator, kReverse, kDictItems, kDictKeys, kDictValues };

class Value {
 public:
  Value() = default;  // Undefined
  static Value undefined(std::string hint, bool unsafe = false);
  static Value none();
  Value(bool b) : kind_(Kind::kBool), i_(b) {}
  Value(int v) : kind_(Kind::kInt), i_(v) {}
  Value(int64_t v) : kind_(Kind::kInt), i_(v) {}
  Value(double v) : kind_(Kind::kFloat), f_(v) {}
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  // markupsafe's Markup (from |safe, |escape): `+` with a plain str escapes the plain side.
  static Value markup(std::string s);
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value sequence(std::vector<Value> items, Seq kind);
  static Value dict();
  static Value namespace_object();
  static Value callable(std::string name, NativeFn fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return kind_ == Kind::kString && i_ != 0; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_tuple() const;
  Seq seq() const;
  bool is_plain_list() const { return is_list() && (seq() == Seq::kList || seq() == Seq::kTuple); }
  bool is_iterator() const {
    return is_list() && (seq() == Seq::kGenerator || seq() == Seq::kReverse);
  }
  bool is_namespace() const;

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }  // also for bool
  double as_double() const { return is_float() ? f_ : double(i_); }
  const std::string& str() const { return *s_; }  // kString (and the Undefined hint)
  const std::vector<Value>& items() const;
  DictObj& dict_obj() const { return *d_; }
  const CallableObj& callable_obj() const { return *c_; }
  bool unsafe_undefined() const { return kind_ == Kind::kUndefined && i_ != 0; }
  const std::string& undefined_hint() const;
  // Lists and dicts nested in this value, itself included (a namespace counts as 1: it is
  // mutable, and whatever it holds is walked with its own guard).
  int depth() const;
  // The shared object of a list, dict or callable (null for scalars): identity for `is sameas`,
  // hashing and cycle detection.
  const void* identity() const;

  // Raises jinja2's UndefinedError (or SecurityError for an unsafe attribute).
  [[noreturn]] void fail_undefined() const;
  // Same identity: for `is sameas`, namespaces and callables.
  bool same_object(const Value& o) const;

 private:
  Kind kind_ = Kind::kUndefined;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const ListObj> l_;
  std::shared_ptr<DictObj> d_;
  std::shared_ptr<const CallableObj> c_;
};

struct ListObj {
  std::vector<Value> items;
  Seq seq = Seq::kList;
  int depth = 1;
};

// Insertion-ordered like a Python dict; keys are compared with Python equality and found
// through a hash index once the dict is larger than a few entries. `entries` only grows: keys
// are appended (set, append) and never changed or removed, values may be replaced.
struct DictObj {
  std::vector<std::pair<Value, Value>> entries;
  bool is_namespace = false;
  int depth = 1;  // as Value::depth(); not kept for namespaces
  const Value* find(const Value& key) const;
  const Value* find_str(std::string_view key) const;
  void set(const Value& key, Value v);
  // A key known to be absent (a JSON object's, a copy's).
  void append(Value key, Value v);

 private:
  void note_depth(const Value& key, const Value& v);
  void index_entries() const;
  mutable std::unordered_multimap<uint64_t, size_t> index_;  // hash_value(key) -> entry
  mutable size_t indexed_ = 0;                               // entries covered by index_
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument `name` at position `index` or by keyword, else `fallback`; consumed.
  Value take(size_t index, std::string_view name, Value fallback = Value());
  // After the takes: any positional or keyword argument left over is an error naming `fn`.
  void finish(std::string_view fn) const;
  std::vector<bool> used_pos;
  std::vector<bool> used_kw;
};

// Python semantics used everywhere.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// Python's hash, consistent with equals (1, 1.0 and True hash alike); lists and dicts, which
// Python refuses to hash, hash by content and as one constant.
uint64_t hash_value(const Value& v);
// -1, 0, 1 as Python's <; a TypeError (RenderError) for types Python cannot order.
int compare(const Value& a, const Value& b);
std::string type_name(const Value& v);  // Python's type name: 'str', 'list', 'NoneType'...

}  // namespace moex::chat
