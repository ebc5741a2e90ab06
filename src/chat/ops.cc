// The arithmetic operators with Python's semantics (floor division and modulo, str and list
// repetition and concatenation); integers are 64-bit and overflow is an error.
#include <cmath>

#include "chat/builtins.h"
#include "chat/py_text.h"

namespace moex::chat {

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw RenderError("TypeError: unsupported operand type(s) for " + op + ": '" + type_name(a) +
                    "' and '" + type_name(b) + "'");
}

[[noreturn]] void overflow() {
  throw RenderError("OverflowError: integer result out of 64-bit range");
}

Value repeat(const Value& seq, int64_t n) {
  const bool empty = seq.is_string() ? seq.str().empty() : seq.items().empty();
  if (n <= 0 || empty) return seq.is_string() ? Value("") : Value::list({}, seq.is_tuple());
  if (seq.is_string()) {
    const std::string& s = seq.str();
    size_t total;
    if (__builtin_mul_overflow(s.size(), size_t(n), &total)) total = SIZE_MAX;
    check_string_size(total);
    charge_bytes(total);
    std::string out;
    out.reserve(total);
    for (int64_t i = 0; i < n; ++i) out += s;
    return seq.is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
  }
  const auto& items = seq.items();
  size_t total;
  if (__builtin_mul_overflow(items.size(), size_t(n), &total)) total = SIZE_MAX;
  check_list_size(total);
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.is_tuple());
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t int_pow(int64_t base, int64_t exp) {
  int64_t r = 1;
  while (exp > 0) {
    if (exp & 1)
      if (__builtin_mul_overflow(r, base, &r)) overflow();
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
  }
  return r;
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  const bool nums = a.is_number() && b.is_number();
  const bool floats = nums && (a.is_float() || b.is_float());
  if (op == "+") {
    if (floats) return Value(a.as_double() + b.as_double());
    if (nums) {
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value(r);
    }
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() || b.is_markup()) {  // Markup.__add__ / __radd__ escape the plain side
        const std::string l = a.is_markup() ? a.str() : html_escape(a.str());
        const std::string r = b.is_markup() ? b.str() : html_escape(b.str());
        check_string_size(l.size() + r.size());
        charge_bytes(l.size() + r.size());
        return Value::markup(l + r);
      }
      check_string_size(a.str().size() + b.str().size());
      charge_bytes(a.str().size() + b.str().size());
      return Value(a.str() + b.str());
    }
    if (a.is_plain_list() && b.is_plain_list() && a.seq() == b.seq()) {
      check_list_size(a.items().size() + b.items().size());
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.is_tuple());
    }
    if (a.is_string())
      throw RenderError("TypeError: can only concatenate str (not \"" + type_name(b) +
                        "\") to str");
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (floats) return Value(a.as_double() - b.as_double());
    if (!nums) unsupported(op, a, b);
    int64_t r;
    if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
    return Value(r);
  }
  if (op == "*") {
    if (floats) return Value(a.as_double() * b.as_double());
    if (nums) {
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value(r);
    }
    if ((a.is_string() || a.is_plain_list()) && (b.is_int() || b.is_bool()))
      return repeat(a, b.as_int());
    if ((b.is_string() || b.is_plain_list()) && (a.is_int() || a.is_bool()))
      return repeat(b, a.as_int());
    unsupported(op, a, b);
  }
  if (op == "/" || op == "//" || op == "%") {
    if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b));
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) throw RenderError("ZeroDivisionError: division by zero");
    if (op == "/") return Value(a.as_double() / b.as_double());
    if (floats) {
      const double x = a.as_double(), y = b.as_double();
      if (op == "//") return Value(std::floor(x / y));
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value(m);
    }
    const int64_t q = floor_div(a.as_int(), b.as_int());
    if (op == "//") return Value(q);
    return Value(a.as_int() - q * b.as_int());
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (floats || b.as_int() < 0) return Value(std::pow(a.as_double(), b.as_double()));
    return Value(int_pow(a.as_int(), b.as_int()));
  }
  throw RenderError("unknown operator " + op);
}

}  // namespace moex::chat
