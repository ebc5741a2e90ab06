// Reading a Hermes call ({"name": N, "arguments": {...}}) as it is decoded, so that its
// arguments can be streamed while the call is open: the header up to the arguments' object,
// then where that object ends.
#pragma once

#include <string>
#include <string_view>

namespace moex::generate {

enum class Scan { kNeedMore, kFail, kDone };

// `{"name": "N", "arguments": ` (any JSON whitespace between the tokens), then the `{` that
// opens the arguments. kDone: `name` set and `args_at` the offset of that `{` in `s`; kFail:
// `s` does not start that way (other key orders and shapes are parsed whole at the end).
Scan scan_hermes_header(std::string_view s, std::string& name, size_t& args_at);

// After the arguments' object: `}` closing the call's object, then `end_marker` (whitespace
// around both). kDone: `after` is the offset past the marker.
Scan scan_hermes_tail(std::string_view s, std::string_view end_marker, size_t& after);

// Finds the end of a JSON object from its `{`, one byte at a time: brackets counted outside
// strings, escapes skipped. kFail for a byte JSON cannot have outside a string (`<`, letters
// other than those of true/false/null) or anything after the object; no more is checked (the
// whole text is parsed once it ends).
class JsonObjectEnd {
 public:
  Scan feed(char c);

 private:
  int depth_ = 0;
  bool in_string_ = false, escape_ = false, done_ = false;
};

}  // namespace moex::generate
