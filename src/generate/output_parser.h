// Output parsers: what reads the generated text as it is decoded and decides what the client
// sees. A chain of them (stop strings, reasoning, tool calls) sits after the detokenizer in
// every front end that streams text; each emits typed events (content, reasoning, tool calls).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moex::generate {

// One piece of parsed output. A tool call is kToolCallBegin (text: the function's name), then
// kToolCallArguments pieces (their concatenation is the arguments' JSON text), then
// kToolCallEnd; calls do not nest or interleave. A call whose arguments are streamed while it
// is open may turn out malformed (or never close): it then ends with kToolCallAbandon instead,
// whose text (the call's text as written) is content.
struct OutputEvent {
  enum class Kind {
    kContent,
    kReasoning,
    kToolCallBegin,
    kToolCallArguments,
    kToolCallEnd,
    kToolCallAbandon
  };
  Kind kind = Kind::kContent;
  std::string text;
  bool operator==(const OutputEvent&) const = default;
};
using OutputEvents = std::vector<OutputEvent>;

// Appends text of `kind`, merged into the last event when it has the same kind ("" is dropped).
void append_text(OutputEvents& out, OutputEvent::Kind kind, std::string_view text);
// The content text of `events` (abandoned calls' text included), joined.
std::string content_of(const OutputEvents& events);

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // Takes content text (whole UTF-8 characters) and appends the events that are now final; it
  // may hold text back until it knows what it is. Once stopped(), appends nothing.
  virtual void push(std::string_view text, OutputEvents& out) = 0;
  // At the end of generation: what is still held back, as events.
  virtual void flush(OutputEvents& out) = 0;
  // The parser ended the output (a stop string matched, the one allowed tool call closed):
  // what follows is not wanted.
  virtual bool stopped() const = 0;
  virtual const char* name() const = 0;
};

// A parser that only holds back or cuts text (stop strings): content in, content out.
class TextOutputParser : public OutputParser {
 public:
  virtual std::string push(std::string_view text) = 0;
  virtual std::string flush() = 0;
  void push(std::string_view text, OutputEvents& out) final;
  void flush(OutputEvents& out) final;
};

// Parsers in order: each one reads the content events of the one before; the other events
// pass through unchanged, in order.
class OutputParserChain {
 public:
  void add(std::unique_ptr<OutputParser> p) { parsers_.push_back(std::move(p)); }
  OutputEvents push(std::string_view text);
  OutputEvents flush();
  bool stopped() const;
  bool empty() const { return parsers_.empty(); }

 private:
  std::vector<std::unique_ptr<OutputParser>> parsers_;
};

}  // namespace moex::generate
