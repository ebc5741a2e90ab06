// The tool-call parser for the formats whose calls sit between a begin and an end marker:
// text outside is content (the end of it held back while it could start the begin marker),
// a block is held whole until its end marker, then parsed into calls, or given back as
// content when it is malformed or never closed.
#include <utility>

#include "generate/marker_text.h"
#include "generate/tool_calls.h"

namespace moex::generate {
namespace {

using Kind = OutputEvent::Kind;

class MarkedToolCalls final : public OutputParser {
 public:
  MarkedToolCalls(ToolCallFormat f, ToolCallOptions options)
      : format_(f), markers_(tool_call_markers(f)), options_(std::move(options)) {}

  void push(std::string_view text, OutputEvents& out) override {
    if (stopped_) return;
    held_ += text;
    while (!stopped_) {
      if (!inside_) {
        const size_t at = held_.find(markers_.begin);
        if (at == std::string::npos) {
          const size_t keep = partial_marker_suffix(held_, markers_.begin);
          content(std::string_view(held_).substr(0, held_.size() - keep), out);
          held_.erase(0, held_.size() - keep);
          return;
        }
        content(std::string_view(held_).substr(0, at), out);
        held_.erase(0, at + markers_.begin.size());
        inside_ = true;
      }
      const size_t end = held_.find(markers_.end);
      if (end == std::string::npos) return;  // the block is held until it closes
      block(std::string_view(held_).substr(0, end), out);
      held_.erase(0, end + markers_.end.size());
      inside_ = false;
    }
    held_.clear();
  }

  void flush(OutputEvents& out) override {
    if (stopped_) return;
    // A block never closed (max_tokens, the end of the context) stays text, markers included.
    content(inside_ ? markers_.begin + held_ : held_, out);
    held_.clear();
    pending_space_.clear();  // whitespace after the last call is not content
  }

  bool stopped() const override { return stopped_; }
  const char* name() const override { return tool_call_format_name(format_); }

 private:
  // After a call, whitespace is held: dropped between and after calls, content before text.
  void content(std::string_view text, OutputEvents& out) {
    if (calls_ > 0 && all_space(text)) {
      pending_space_ += text;
      return;
    }
    append_text(out, Kind::kContent, pending_space_);
    pending_space_.clear();
    append_text(out, Kind::kContent, text);
  }

  void block(std::string_view body, OutputEvents& out) {
    std::vector<ParsedToolCall> calls;
    if (!parse_tool_call_block(format_, body, options_.schemas, calls) || calls.empty()) {
      content(markers_.begin + std::string(body) + markers_.end, out);  // malformed: text
      return;
    }
    pending_space_.clear();
    for (ParsedToolCall& c : calls) {
      out.push_back({Kind::kToolCallBegin, std::move(c.name)});
      out.push_back({Kind::kToolCallArguments, std::move(c.arguments)});
      out.push_back({Kind::kToolCallEnd, {}});
      ++calls_;
      if (!options_.parallel) {  // one call asked for: the output ends with it
        stopped_ = true;
        return;
      }
    }
  }

  ToolCallFormat format_;
  ToolCallMarkers markers_;
  ToolCallOptions options_;
  std::string held_;           // text not yet given out (inside_: the open block's text)
  std::string pending_space_;  // whitespace after a call, given out only before more text
  bool inside_ = false;
  bool stopped_ = false;
  int calls_ = 0;
};

}  // namespace

std::unique_ptr<OutputParser> make_tool_call_parser(ToolCallFormat f, ToolCallOptions options) {
  return std::make_unique<MarkedToolCalls>(f, std::move(options));
}

}  // namespace moex::generate
