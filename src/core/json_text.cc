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

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (rules_.reject_duplicate_keys) open_keys_.emplace_back();
    return enter();
  }
  bool key(string_t& k) override {
    if (!rules_.reject_duplicate_keys || open_keys_.back().insert(k).second) return true;
    error_ = str_cat(file_, ": duplicate JSON key '", k, "' (at nesting depth ", depth_,
                     "); expected every key of an object to be unique");
    return false;
  }
  bool end_object() override {
    if (rules_.reject_duplicate_keys) open_keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = str_cat(file_, ": invalid JSON (", e.what(), ")");
    return false;
  }

 private:
  bool enter() {
    if (++depth_ <= rules_.max_depth) return true;
    error_ = str_cat(file_, ": JSON nesting deeper than ", rules_.max_depth,
                     " levels; expected a shallow document");
    return false;
  }

  const std::string& file_;
  const JsonTextRules& rules_;
  std::string error_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> open_keys_;  // one set per open object
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
