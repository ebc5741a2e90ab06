// CompletionText (see completion_text.h).
#include "serve/completion_text.h"

#include "generate/stop_strings.h"

namespace moex::serve {

int64_t utf8_chars(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

CompletionText::CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stops,
                               bool logprobs)
    : tok_(tokenizer),
      decoder_(tokenizer, /*skip_special=*/true),
      logprobs_(logprobs) {
  if (!stops.empty()) parsers_.add(std::make_unique<generate::StopStrings>(std::move(stops)));
}

LogprobToken CompletionText::alternative(int32_t id, float logprob) const {
  return {id, tok_.decode({id}, /*skip_special=*/false), logprob, tok_.token_bytes(id)};
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
    const std::string piece = decoder_.step(t.id);
    decoded_chars_ += utf8_chars(piece);
    d.text += parsers_.push(piece);
  }
  return d;
}

CompletionText::Delta CompletionText::finish() {
  Delta d;
  if (parsers_.stopped()) return d;
  d.text = parsers_.push(decoder_.flush());
  d.text += parsers_.flush();
  return d;
}

}  // namespace moex::serve
