// parse_json_text_strict: a DOM-free SAX pass for depth and duplicate keys, then the parse.
#include "core/json_text.h"

#include <unordered_set>
#include <vector>

#include "core/error.h"

namespace moex {
namespace {

using nlohmann::json;

class StructureCheck final : public nlohmann::json_sax<json> {
 public:
  StructureCheck(const std::string& file, const JsonTextRules& rules) : file_(file), rules_(rules) {}
  const std::string& error() const { return error_; }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return enter(false); }
  bool key(string_t& k) override {
    Open& o = open_.back();
    o.key = k;
    if (!o.check_keys || o.keys.insert(k).second) return true;
    error_ = str_cat(file_, ": duplicate JSON key '", k, "' in ",
                     open_.size() == 1 ? std::string("the top-level object") : o.path,
                     "; expected every key of an object to be unique");
    return false;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return enter(true); }
  bool end_array() override {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = str_cat(file_, ": invalid JSON (", e.what(), ")");
    return false;
  }

 private:
  // An open object or array. The path (`model`, `added_tokens[2]`) is kept only for objects
  // whose keys are checked, the ones an error can name.
  struct Open {
    bool array = false;
    bool check_keys = false;
    size_t next = 0;  // array: the index of the next element
    std::string key;  // object: the last key read
    std::string path;
    std::unordered_set<std::string> keys;
  };

  // A value starts: in an array, it takes the next index.
  bool value() {
    if (!open_.empty() && open_.back().array) ++open_.back().next;
    return true;
  }

  bool enter(bool array) {
    const int depth = int(open_.size()) + 1;
    if (depth > rules_.max_depth) {
      error_ = str_cat(file_, ": JSON nesting deeper than ", rules_.max_depth,
                       " levels; expected a shallow document");
      return false;
    }
    Open o;
    o.array = array;
    o.check_keys =
        !array && rules_.reject_duplicate_keys && depth <= rules_.duplicate_keys_max_depth;
    if (depth <= rules_.duplicate_keys_max_depth && !open_.empty()) {
      const Open& up = open_.back();
      o.path = up.array ? str_cat(up.path, "[", up.next, "]")
                        : (up.path.empty() ? up.key : str_cat(up.path, ".", up.key));
    }
    value();
    open_.push_back(std::move(o));
    return true;
  }

  const std::string& file_;
  const JsonTextRules& rules_;
  std::string error_;
  std::vector<Open> open_;
};

}  // namespace

json parse_json_text_strict(std::string_view text, const std::string& file,
                            const JsonTextRules& rules) {
  // nlohmann takes a NUL byte for the end of the input and would ignore what follows.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(file, ": NUL byte at offset ", nul, "; expected JSON text");
  StructureCheck check(file, rules);
  if (!json::sax_parse(text.begin(), text.end(), &check))
    fail(check.error().empty() ? str_cat(file, ": invalid JSON") : check.error());
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(file, ": invalid JSON (", e.what(), ")");
  }
}

}  // namespace moex
