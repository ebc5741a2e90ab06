// Stop strings on streamed text: text goes in as the detokenizer makes it, and comes out
// once no stop string can begin in it. Text that could be the start of a stop string is held
// back; on a match the text before it is released and nothing after it ever is.
#pragma once

#include "generate/output_parser.h"

#include <string>
#include <string_view>
#include <vector>

namespace moex::generate {

class StopStrings final : public TextOutputParser {
 public:
  explicit StopStrings(std::vector<std::string> stops);  // empty strings are dropped
  using TextOutputParser::flush;
  using TextOutputParser::push;

  // Adds `text` (whole UTF-8 characters) and returns what is now safe to emit. After a match
  // (stopped() true) it returns the text before the match once, then only "".
  std::string push(std::string_view text) override;
  // At the end of generation: the text still held back (no stop string can complete now).
  std::string flush() override;
  bool stopped() const override { return stopped_; }
  const char* name() const override { return "stop_strings"; }
  // Bytes held back now (a proper prefix of some stop string ends the text seen).
  size_t held() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace moex::generate
