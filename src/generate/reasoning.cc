// The <think> reasoning parser (see reasoning.h).
#include "generate/reasoning.h"

#include "generate/marker_text.h"

namespace moex::generate {
namespace {

using Kind = OutputEvent::Kind;
constexpr std::string_view kOpen = "<think>", kClose = "</think>";

class ThinkParser final : public OutputParser {
 public:
  explicit ThinkParser(bool open) : state_(open ? kReasoning : kStart) {}

  void push(std::string_view text, OutputEvents& out) override {
    held_ += text;
    if (state_ == kStart) {  // whitespace, then <think> or anything else
      const std::string_view t = held_;
      size_t i = 0;
      while (i < t.size() && is_space(t[i])) ++i;
      const std::string_view rest = t.substr(i);
      if (rest.starts_with(kOpen)) {
        held_.erase(0, i + kOpen.size());
        state_ = kReasoning;
      } else if (rest.size() < kOpen.size() && kOpen.starts_with(rest)) {
        return;  // could still be <think>
      } else {
        state_ = kContent;
      }
    }
    if (state_ == kReasoning) {
      const size_t close = held_.find(kClose);
      if (close == std::string::npos) {
        const size_t keep = partial_marker_suffix(held_, kClose);
        append_text(out, Kind::kReasoning, std::string_view(held_).substr(0, held_.size() - keep));
        held_.erase(0, held_.size() - keep);
        return;
      }
      append_text(out, Kind::kReasoning, std::string_view(held_).substr(0, close));
      held_.erase(0, close + kClose.size());
      state_ = kAfterClose;
    }
    if (state_ == kAfterClose) {  // the newlines between </think> and the answer
      size_t i = 0;
      while (i < held_.size() && is_space(held_[i])) ++i;
      held_.erase(0, i);
      if (held_.empty()) return;
      state_ = kContent;
    }
    append_text(out, Kind::kContent, held_);
    held_.clear();
  }

  void flush(OutputEvents& out) override {
    append_text(out, state_ == kReasoning ? Kind::kReasoning : Kind::kContent,
                state_ == kAfterClose ? std::string() : held_);
    held_.clear();
  }

  bool stopped() const override { return false; }
  const char* name() const override { return "think"; }

 private:
  enum State { kStart, kReasoning, kAfterClose, kContent } state_;
  std::string held_;
};

}  // namespace

const char* reasoning_format_name(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kNone: return "none";
    case ReasoningFormat::kThink: return "think";
    case ReasoningFormat::kHarmony: return "harmony";
  }
  return "?";
}

ReasoningFormat detect_reasoning_format(std::string_view t) {
  if (t.find("<|channel|>") != std::string_view::npos) return ReasoningFormat::kHarmony;
  if (t.find("</think>") != std::string_view::npos) return ReasoningFormat::kThink;
  return ReasoningFormat::kNone;
}

bool prompt_opens_thinking(std::string_view prompt) {
  prompt = trim(prompt);
  return prompt.ends_with(kOpen);
}

std::unique_ptr<OutputParser> make_think_parser(bool open) {
  return std::make_unique<ThinkParser>(open);
}

}  // namespace moex::generate
