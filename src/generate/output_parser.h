// Output parsers: what reads the generated text as it is decoded and decides what the client
// sees. A chain of them (stop strings now; the hook for tool-call and reasoning parsers) sits
// after the detokenizer in every front end that streams text.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moex::generate {

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // Takes decoded text (whole UTF-8 characters) and returns the text that is now final for
  // the client; it may hold text back until it knows. Once stopped(), returns "".
  virtual std::string push(std::string_view text) = 0;
  // At the end of generation: the text still held back.
  virtual std::string flush() = 0;
  // The parser ended the output (a stop string matched): what follows is not wanted.
  virtual bool stopped() const = 0;
  virtual const char* name() const = 0;
};

// Parsers in order: each one's output is the next one's input.
class OutputParserChain {
 public:
  void add(std::unique_ptr<OutputParser> p) { parsers_.push_back(std::move(p)); }
  std::string push(std::string_view text);
  std::string flush();
  bool stopped() const;
  bool empty() const { return parsers_.empty(); }

 private:
  std::vector<std::unique_ptr<OutputParser>> parsers_;
};

}  // namespace moex::generate
