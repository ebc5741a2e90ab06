// The harmony parser (see harmony.h): a header is held until <|message|>; a body streams out
// as reasoning or content (holding back what could begin a marker), or is held whole when it
// is a call's arguments, which must be a JSON object or the message stays content.
#include "generate/harmony.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "generate/marker_text.h"

namespace moex::generate {
namespace {

using Kind = OutputEvent::Kind;
constexpr std::string_view kMessage = "<|message|>", kStart = "<|start|>",
                           kChannel = "<|channel|>";
constexpr std::array<std::string_view, 4> kEnds = {"<|end|>", "<|call|>", "<|return|>", kStart};

class HarmonyParser final : public OutputParser {
 public:
  explicit HarmonyParser(HarmonyOptions o) : options_(o) {}

  void push(std::string_view text, OutputEvents& out) override {
    if (stopped_) return;
    held_ += text;
    while (!stopped_) {
      if (!in_body_) {
        const size_t m = held_.find(kMessage);
        if (m == std::string::npos) return;
        header_ = held_.substr(0, m);
        held_.erase(0, m + kMessage.size());
        begin_message();
      }
      size_t end = std::string::npos, end_len = 0;
      for (std::string_view e : kEnds) {
        const size_t at = held_.find(e);
        if (at < end) end = at, end_len = e == kStart ? 0 : e.size();
      }
      if (end == std::string::npos) {
        if (kind_ == Kind::kToolCallBegin) return;  // arguments are held whole
        size_t keep = 0;
        for (std::string_view e : kEnds) keep = std::max(keep, partial_marker_suffix(held_, e));
        body(std::string_view(held_).substr(0, held_.size() - keep), out);
        held_.erase(0, held_.size() - keep);
        return;
      }
      body(std::string_view(held_).substr(0, end), out);
      held_.erase(0, end + end_len);
      end_message(out);
    }
  }

  void flush(OutputEvents& out) override {
    if (stopped_) return;
    if (in_body_) {
      body(held_, out);
      end_message(out);  // <|call|> and <|return|> are stop tokens: never seen here
    } else if (!trim(held_).empty()) {
      append_text(out, Kind::kContent, held_);  // a header never finished: its text
    }
    held_.clear();
  }

  bool stopped() const override { return stopped_; }
  const char* name() const override { return "harmony"; }

 private:
  // header_: [<|start|>assistant][ to=R]<|channel|>C[ to=R][ <|constrain|>json| json]
  void begin_message() {
    in_body_ = true;
    args_.clear();
    std::string_view h = header_;
    std::string channel, recipient;
    const size_t c = h.find(kChannel);
    if (c != std::string_view::npos) {
      std::string_view rest = h.substr(c + kChannel.size());
      const size_t sp = rest.find_first_of(" <");
      channel = std::string(trim(rest.substr(0, sp)));
    }
    const size_t to = h.find("to=");
    if (to != std::string_view::npos) {
      std::string_view r = h.substr(to + 3);
      r = r.substr(0, r.find_first_of(" <"));
      recipient = std::string(r);
    }
    if (options_.tool_calls && recipient.starts_with("functions.")) {
      kind_ = Kind::kToolCallBegin;
      name_ = recipient.substr(10);
    } else if (channel == "analysis") {
      kind_ = options_.reasoning ? Kind::kReasoning : Kind::kContent;
    } else {
      kind_ = Kind::kContent;
    }
  }

  void body(std::string_view text, OutputEvents& out) {
    if (kind_ == Kind::kToolCallBegin)
      args_ += text;
    else
      append_text(out, kind_, text);
  }

  void end_message(OutputEvents& out) {
    in_body_ = false;
    if (kind_ != Kind::kToolCallBegin) return;
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(args_, nullptr, false);
    if (!j.is_object() || name_.empty()) {  // malformed: the message as text
      append_text(out, Kind::kContent, header_ + std::string(kMessage) + args_);
      return;
    }
    out.push_back({Kind::kToolCallBegin, name_});
    out.push_back({Kind::kToolCallArguments, j.dump()});
    out.push_back({Kind::kToolCallEnd, {}});
    if (!options_.parallel) stopped_ = true;
  }

  HarmonyOptions options_;
  std::string held_, header_, args_, name_;
  bool in_body_ = false, stopped_ = false;
  Kind kind_ = Kind::kContent;
};

}  // namespace

std::unique_ptr<OutputParser> make_harmony_parser(HarmonyOptions options) {
  return std::make_unique<HarmonyParser>(options);
}

}  // namespace moex::generate
