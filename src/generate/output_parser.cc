// OutputParserChain and the event helpers (see output_parser.h).
#include "generate/output_parser.h"

namespace moex::generate {

void append_text(OutputEvents& out, OutputEvent::Kind kind, std::string_view text) {
  if (text.empty()) return;
  if (!out.empty() && out.back().kind == kind &&
      (kind == OutputEvent::Kind::kContent || kind == OutputEvent::Kind::kReasoning ||
       kind == OutputEvent::Kind::kToolCallArguments))
    out.back().text += text;
  else
    out.push_back({kind, std::string(text)});
}

std::string content_of(const OutputEvents& events) {
  std::string s;
  for (const OutputEvent& e : events)
    if (e.kind == OutputEvent::Kind::kContent || e.kind == OutputEvent::Kind::kToolCallAbandon)
      s += e.text;
  return s;
}

void TextOutputParser::push(std::string_view text, OutputEvents& out) {
  append_text(out, OutputEvent::Kind::kContent, push(text));
}

void TextOutputParser::flush(OutputEvents& out) {
  append_text(out, OutputEvent::Kind::kContent, flush());
}

namespace {

// `in` through parser `p`: content is parsed, other events pass as they are.
OutputEvents through(OutputParser& p, const OutputEvents& in) {
  OutputEvents out;
  for (const OutputEvent& e : in) {
    if (e.kind == OutputEvent::Kind::kContent)
      p.push(e.text, out);
    else
      out.push_back(e);
  }
  return out;
}

}  // namespace

OutputEvents OutputParserChain::push(std::string_view text) {
  OutputEvents t;
  append_text(t, OutputEvent::Kind::kContent, text);
  for (auto& p : parsers_) t = through(*p, t);
  return t;
}

// Each parser's held text goes through the parsers after it before their own flush.
OutputEvents OutputParserChain::flush() {
  OutputEvents t;
  for (auto& p : parsers_) {
    t = through(*p, t);
    p->flush(t);
  }
  return t;
}

bool OutputParserChain::stopped() const {
  for (const auto& p : parsers_)
    if (p->stopped()) return true;
  return false;
}

}  // namespace moex::generate
