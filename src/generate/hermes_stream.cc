// The incremental Hermes scanners (see hermes_stream.h).
#include "generate/hermes_stream.h"

#include <nlohmann/json.hpp>

#include "generate/marker_text.h"

namespace moex::generate {
namespace {

// A cursor over `s`: each step either matches, runs out of text (need more) or fails.
struct Cursor {
  std::string_view s;
  size_t at = 0;
  Scan state = Scan::kDone;

  void space() {
    while (at < s.size() && is_space(s[at])) ++at;
  }
  bool more() {
    space();
    if (at < s.size()) return true;
    state = Scan::kNeedMore;
    return false;
  }
  bool literal(std::string_view lit) {
    if (!more()) return false;
    const size_t n = std::min(lit.size(), s.size() - at);
    if (s.substr(at, n) != lit.substr(0, n)) {
      state = Scan::kFail;
      return false;
    }
    if (n < lit.size()) {
      state = Scan::kNeedMore;
      return false;
    }
    at += n;
    return true;
  }
  // A JSON string, decoded into `out`.
  bool string(std::string& out) {
    if (!literal("\"")) return false;
    const size_t begin = at - 1;
    for (bool escape = false; at < s.size(); ++at) {
      if (escape) {
        escape = false;
      } else if (s[at] == '\\') {
        escape = true;
      } else if (s[at] == '"') {
        ++at;
        const auto j = nlohmann::json::parse(s.substr(begin, at - begin), nullptr, false);
        if (!j.is_string()) {
          state = Scan::kFail;
          return false;
        }
        out = j.get<std::string>();
        return true;
      }
    }
    state = Scan::kNeedMore;
    return false;
  }
};

}  // namespace

Scan scan_hermes_header(std::string_view s, std::string& name, size_t& args_at) {
  Cursor c{s};
  std::string key, n;
  if (c.literal("{") && c.literal("\"name\"") && c.literal(":") && c.string(n) &&
      c.literal(",") && c.literal("\"arguments\"") && c.literal(":") && c.more()) {
    if (s[c.at] != '{') return Scan::kFail;
    name = std::move(n);
    args_at = c.at;
    return Scan::kDone;
  }
  return c.state;
}

Scan scan_hermes_tail(std::string_view s, std::string_view end_marker, size_t& after) {
  Cursor c{s};
  if (c.literal("}") && c.literal(end_marker)) {
    after = c.at;
    return Scan::kDone;
  }
  return c.state;
}

Scan JsonObjectEnd::feed(char c) {
  if (done_) return Scan::kFail;
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return Scan::kNeedMore;
  }
  if (depth_ == 0 && c != '{') return Scan::kFail;
  // Outside strings JSON has brackets, separators, whitespace, numbers and true/false/null:
  // anything else (a marker's `<`, prose) ends the call as malformed at once.
  if (std::string_view("\"{}[],: \t\r\n-+.0123456789eEtrufalsn").find(c) == std::string_view::npos)
    return Scan::kFail;
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    if (--depth_ == 0) {
      done_ = true;
      return Scan::kDone;
    }
  }
  return Scan::kNeedMore;
}

}  // namespace moex::generate
