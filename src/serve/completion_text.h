// One choice's output built from the scheduler's tokens: incremental detokenization
// (StreamDecoder, special tokens skipped as vLLM and llama.cpp do), the output parsers on the
// decoded text (generate/output_parser.h: stop strings, and any added), and each token's log-probabilities in the form the responses report them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "generate/chat_output.h"
#include "generate/output_parser.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace moex::serve {

struct LogprobToken {  // one token as logprobs report it
  int32_t id = 0;
  std::string text;  // the token alone, decoded (special tokens written out)
  float logprob = 0;
  std::string bytes;  // its raw bytes (part of a character when the token splits one)
};

struct LogprobEntry {             // a generated token with its alternatives
  LogprobToken token;             // the generated token
  std::vector<LogprobToken> top;  // most likely first
  int64_t text_offset = 0;        // characters of completion text before this token
};

class CompletionText {
 public:
  // `chat` (may be null): the reasoning and tool-call parsers of a chat answer, after the stop
  // strings; the special tokens their markers are written with are then decoded, the others
  // still skipped.
  CompletionText(const Tokenizer& tokenizer, std::vector<std::string> stops, bool logprobs,
                 const generate::ChatOutputOptions* chat = nullptr);
  // Appends a parser after the stop strings (a tool-call or reasoning parser).
  void add_parser(std::unique_ptr<generate::OutputParser> p) { parsers_.add(std::move(p)); }

  struct Delta {
    std::string text;                    // new content to emit (whole UTF-8 characters)
    generate::OutputEvents events;       // everything parsed now, content included, in order
    std::vector<LogprobEntry> logprobs;  // the tokens consumed now (when asked for)
  };
  // Consumes generated tokens in order. Once a stop string has matched, further tokens are
  // ignored (they were generated before the cancellation took effect).
  Delta add(const std::vector<GeneratedToken>& tokens);
  // The end of generation (also after a stop): the text the detokenizer and the parsers still
  // hold. Call it once.
  Delta finish();

  bool stopped() const { return parsers_.stopped(); }  // a parser ended the output
  // Tokens consumed: up to and including the one that completed a stop string.
  int64_t tokens() const { return tokens_; }

 private:
  LogprobToken alternative(int32_t id, float logprob) const;
  void take(generate::OutputEvents events, Delta& d) const;
  bool skipped(int32_t id) const;  // a special token no parser reads

  const Tokenizer& tok_;
  StreamDecoder decoder_;
  generate::OutputParserChain parsers_;
  bool logprobs_;
  int64_t tokens_ = 0;
  int64_t decoded_chars_ = 0;  // characters the decoder has produced
  std::vector<std::string> keep_special_;  // special tokens' texts the parsers read
};

// Code points of valid UTF-8 text.
int64_t utf8_chars(std::string_view s);

}  // namespace moex::serve
