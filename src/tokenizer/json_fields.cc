// File reading and parsing (size and depth bounded) and the few non-inline helpers of
// json_fields.h.
#include "tokenizer/json_fields.h"

#include "core/file_read.h"
#include "tokenizer/utf8.h"

namespace moex::tok {

std::string single_char_field(const Json& obj, const char* key, const std::string& where) {
  std::string s = string_field(obj, key, where);
  char32_t cp;
  if (s.empty() || utf8_sequence(s, 0, &cp) != s.size()) {
    fail(field_path(where, key), ": expected exactly one character, got \"", s, "\"");
  }
  return s;
}

namespace {

// A first pass that builds nothing and stops at the first container opened past
// kMaxJsonDepth. (nlohmann's callback parser could count depth while building, but it rescans
// the enclosing container at the end of every object: 50,000 added tokens took 70 s.)
class DepthCheck final : public nlohmann::json_sax<Json> {
 public:
  bool too_deep() const { return too_deep_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool key(string_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  // Syntax errors are left to the real parse, whose exception says where.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool open() {
    too_deep_ = ++depth_ > kMaxJsonDepth;
    return !too_deep_;
  }
  bool close() {
    --depth_;
    return true;
  }
  int depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

Json parse_json_text(std::string_view text, const std::string& file) {
  // nlohmann takes a NUL byte for the end of the input and would ignore what follows.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(file, ": NUL byte at offset ", nul, "; expected JSON text");
  // nlohmann's parser keeps its own stack, but what walks the result recursively does not.
  DepthCheck depth;
  Json::sax_parse(text.begin(), text.end(), &depth);
  if (depth.too_deep())
    fail(file, ": JSON nesting deeper than ", kMaxJsonDepth,
         " levels; expected a shallow document");
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    fail(file, ": invalid JSON: ", e.what());
  }
}

Json read_json_file(const std::string& path, int64_t max_bytes) {
  return parse_json_text(read_small_file(path, max_bytes, "JSON file"), path);
}

void check_sequence_depth(int depth, const std::string& where) {
  if (depth >= kMaxSequenceDepth)
    fail(where, ": Sequence nested more than ", kMaxSequenceDepth,
         " levels deep; expected at most ", kMaxSequenceDepth,
         " (real tokenizers nest one or two)");
}

}  // namespace moex::tok
