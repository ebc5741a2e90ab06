// The tool-call parser for the formats whose calls sit between a begin and an end marker:
// text outside is content (the end of it held back while it could start the begin marker),
// a block is held whole until its end marker, then parsed into calls, or given back as
// content when it is malformed or never closed. Hermes calls written {"name", "arguments"} in
// that order are read as they come instead: the call begins once its name is known and its
// arguments go out in pieces as decoded (hermes_stream.h); one that turns out malformed or
// never closes is abandoned, its text content.
#include <utility>

#include "generate/hermes_stream.h"
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
        mode_ = format_ == ToolCallFormat::kHermes ? Mode::kHeader : Mode::kWhole;
      }
      if (mode_ != Mode::kWhole) {
        if (!stream(out)) return;  // the call is still open
        continue;
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
    if (inside_ && (mode_ == Mode::kArguments || mode_ == Mode::kTail)) {
      abandon(held_.size(), out);  // begun, never closed (max_tokens, the context's end)
    } else {
      // A block never closed stays text, markers included.
      content(inside_ ? markers_.begin + held_ : held_, out);
      held_.clear();
    }
    pending_space_.clear();  // whitespace after the last call is not content
  }

  bool stopped() const override { return stopped_; }
  const char* name() const override { return tool_call_format_name(format_); }

 private:
  // How the open block is read: kWhole held to its end marker; the others streamed.
  enum class Mode { kWhole, kHeader, kArguments, kTail };

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
      end_call(out);
      if (stopped_) return;
    }
  }

  void end_call(OutputEvents& out) {
    out.push_back({Kind::kToolCallEnd, {}});
    ++calls_;
    if (!options_.parallel) stopped_ = true;  // one call asked for: the output ends with it
  }

  // Reads the open Hermes block in held_ on from pos_; true once the block is over (closed,
  // abandoned, or left to kWhole), with held_ then starting after what it used.
  bool stream(OutputEvents& out) {
    if (mode_ == Mode::kHeader) {
      std::string name;
      switch (scan_hermes_header(held_, name, args_at_)) {
        case Scan::kNeedMore: return false;
        case Scan::kFail: mode_ = Mode::kWhole; return true;
        case Scan::kDone: break;
      }
      pending_space_.clear();
      out.push_back({Kind::kToolCallBegin, std::move(name)});
      mode_ = Mode::kArguments;
      pos_ = sent_ = args_at_;
      object_ = JsonObjectEnd();
    }
    if (mode_ == Mode::kArguments) {
      for (; pos_ < held_.size(); ++pos_) {
        const Scan s = object_.feed(held_[pos_]);
        if (s == Scan::kFail) {  // what was read before it went out, as in any split
          send_arguments(out);
          return abandon(pos_, out);
        }
        if (s != Scan::kDone) continue;
        ++pos_;
        send_arguments(out);
        const std::string_view args = std::string_view(held_).substr(args_at_, pos_ - args_at_);
        if (!nlohmann::json::accept(args.begin(), args.end())) return abandon(pos_, out);
        mode_ = Mode::kTail;
        break;
      }
      if (mode_ == Mode::kArguments) {
        send_arguments(out);
        return false;
      }
    }
    size_t after = 0;
    switch (scan_hermes_tail(std::string_view(held_).substr(pos_), markers_.end, after)) {
      case Scan::kNeedMore: return false;
      case Scan::kFail: return abandon(pos_, out);
      case Scan::kDone: break;
    }
    held_.erase(0, pos_ + after);
    inside_ = false;
    end_call(out);
    return true;
  }

  void send_arguments(OutputEvents& out) {
    append_text(out, Kind::kToolCallArguments, std::string_view(held_).substr(sent_, pos_ - sent_));
    sent_ = pos_;
  }

  // The open call is malformed: its text up to `upto` (with the begin marker) becomes content;
  // what follows is read again as text.
  bool abandon(size_t upto, OutputEvents& out) {
    out.push_back({Kind::kToolCallAbandon, markers_.begin + held_.substr(0, upto)});
    held_.erase(0, upto);
    inside_ = false;
    return true;
  }

  ToolCallFormat format_;
  ToolCallMarkers markers_;
  ToolCallOptions options_;
  std::string held_;           // text not yet given out (inside_: the open block's text)
  std::string pending_space_;  // whitespace after a call, given out only before more text
  bool inside_ = false;
  bool stopped_ = false;
  int calls_ = 0;
  Mode mode_ = Mode::kWhole;
  size_t args_at_ = 0, pos_ = 0, sent_ = 0;  // streaming: the arguments' start, scan, sent
  JsonObjectEnd object_;
};

}  // namespace

std::unique_ptr<OutputParser> make_tool_call_parser(ToolCallFormat f, ToolCallOptions options) {
  return std::make_unique<MarkedToolCalls>(f, std::move(options));
}

}  // namespace moex::generate
