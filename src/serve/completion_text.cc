// CompletionText (see completion_text.h).
#include "serve/completion_text.h"

#include <algorithm>

#include "generate/stop_strings.h"

namespace moex::serve {

int64_t utf8_chars(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

CompletionText::CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stops,
                               bool logprobs, const generate::ChatOutputOptions* chat)
    : tok_(tokenizer), decoder_(tokenizer, /*skip_special=*/true), logprobs_(logprobs) {
  if (!stops.empty()) parsers_.add(std::make_unique<generate::StopStrings>(std::move(stops)));
  if (chat != nullptr) keep_special_ = generate::add_chat_output_parsers(parsers_, *chat);
  // With markers to read, special tokens are decoded and the others dropped by skipped().
  if (!keep_special_.empty()) decoder_ = StreamDecoder(tokenizer, /*skip_special=*/false);
}

LogprobToken CompletionText::alternative(int32_t id, float logprob) const {
  return {id, tok_.decode({id}, /*skip_special=*/false), logprob, tok_.token_bytes(id)};
}

bool CompletionText::skipped(int32_t id) const {
  if (keep_special_.empty() || !tok_.is_special(id)) return false;
  const std::string text = tok_.decode({id}, /*skip_special=*/false);
  return std::find(keep_special_.begin(), keep_special_.end(), text) == keep_special_.end();
}

void CompletionText::take(generate::OutputEvents events, Delta& d) const {
  d.text += generate::content_of(events);
  for (generate::OutputEvent& e : events) {
    if (e.kind == generate::OutputEvent::Kind::kContent ||
        e.kind == generate::OutputEvent::Kind::kReasoning ||
        e.kind == generate::OutputEvent::Kind::kToolCallArguments)
      generate::append_text(d.events, e.kind, e.text);
    else
      d.events.push_back(std::move(e));
  }
}

CompletionText::Delta CompletionText::add(const std::vector<GeneratedToken>& tokens) {
  Delta d;
  for (const GeneratedToken& t : tokens) {
    if (parsers_.stopped()) break;
    ++tokens_;
    if (logprobs_) {
      LogprobEntry lp{alternative(t.id, t.logprob), {}, decoded_chars_};
      for (const auto& alt : t.top) lp.top.push_back(alternative(alt.id, alt.logprob));
      d.logprobs.push_back(std::move(lp));
    }
    if (skipped(t.id)) continue;
    const std::string piece = decoder_.step(t.id);
    decoded_chars_ += utf8_chars(piece);
    take(parsers_.push(piece), d);
  }
  return d;
}

CompletionText::Delta CompletionText::finish() {
  Delta d;
  // After a stop, the decoder's rest is not wanted; the parsers after the one that stopped
  // still give what they hold of the text before it.
  if (!parsers_.stopped()) take(parsers_.push(decoder_.flush()), d);
  take(parsers_.flush(), d);
  return d;
}

}  // namespace moex::serve
