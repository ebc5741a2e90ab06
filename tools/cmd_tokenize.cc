// `moex tokenize`: text -> token ids (or ids -> text with --decode) with a checkpoint's
// tokenizer.json, for checking moex against the model's own tokenizer by hand.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/file_read.h"
#include "core/strict_parse.h"
#include "model/gguf/gguf_model.h"
#include "tokenizer/tokenizer.h"
#include "tools/command.h"
#include "tools/util_flags.h"

namespace moex::tools {
namespace {

// Largest --file read into memory at once (a regular file only: a directory or FIFO is an
// error); far more text than a hand check needs.
constexpr int64_t kMaxTextFileBytes = int64_t{256} << 20;

struct TokenizeFlags {
  std::string tokenizer;
  std::string text;
  std::string file;
  std::string decode;
  bool no_special = false;
  bool no_parse_special = false;
  bool skip_special = false;
  bool show_tokens = false;
  bool anything = false;  // one of -t, -f, --decode was given
  bool decoding = false;  // --decode was given (its list may be empty)
};

// --decode ids: "1,2,3", "1 2 3" or "1, 2, 3"; an empty item between commas is an error. An
// empty (or blank) list is no ids: it decodes to the empty string, as tokenizers' decode([])
// does.
std::vector<int32_t> parse_decode_ids(const std::string& s) {
  std::vector<int32_t> ids;
  const bool commas = s.find(',') != std::string::npos;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    std::istringstream words(s.substr(start, comma == std::string::npos ? comma : comma - start));
    int n = 0;
    for (std::string w; words >> w; ++n)
      ids.push_back(int32_t(parse_int_strict(w, "--decode", 0, INT32_MAX)));
    if (n == 0 && commas)
      fail("--decode: '", s,
           "' has an empty item; expected token ids separated by commas or spaces");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

int run_tokenize(const TokenizeFlags& f) {
  if (!f.anything) fail("tokenize: nothing to do; give -t TEXT, -f FILE or --decode 1,2,3");
  const std::vector<int32_t> decode_ids =
      f.decoding ? parse_decode_ids(f.decode) : std::vector<int32_t>{};
  const Tokenizer tok = model::load_model_tokenizer(f.tokenizer);
  if (f.decoding) {
    std::cout << tok.decode(decode_ids, f.skip_special) << std::endl;
    return 0;
  }
  std::string text = f.text;
  if (!f.file.empty()) text = read_small_file(f.file, kMaxTextFileBytes, "--file input");
  const auto ids = tok.encode(text, !f.no_special, !f.no_parse_special);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::cout << (i ? " " : "") << ids[i];
    if (f.show_tokens) std::cout << ":" << tok.id_to_token(ids[i]).value_or("?");
  }
  std::cout << std::endl;
  return 0;
}

}  // namespace

MOEX_REGISTER_COMMAND(tokenize, "tokenize", "encode text to token ids, or decode ids to text",
                      [](CLI::App& sub) -> std::function<int()> {
                        auto f = std::make_shared<TokenizeFlags>();
                        sub.add_option("tokenizer", f->tokenizer,
                                       "checkpoint directory, tokenizer.json or GGUF model file")
                            ->type_name("PATH")
                            ->required();
                        auto* text = sub.add_option("-t,--text", f->text, "text to encode");
                        auto* file = sub.add_option("-f,--file", f->file, "file to encode")
                                         ->type_name("FILE")
                                         ->check(non_empty());
                        auto* dec = sub.add_option("-d,--decode", f->decode,
                                                   "ids to decode, e.g. 1,2,3 or \"1 2 3\"")
                                        ->type_name("IDS");
                        text->excludes(file)->excludes(dec);
                        file->excludes(dec);
                        sub.add_flag("--no-special", f->no_special,
                                     "do not add the post-processor's special tokens (BOS...)");
                        sub.add_flag("--no-parse-special", f->no_parse_special,
                                     "tokenize the text of special tokens as plain text "
                                     "(llama.cpp's parse_special off)");
                        sub.add_flag("--skip-special", f->skip_special,
                                     "decode: drop special added tokens");
                        sub.add_flag("--tokens", f->show_tokens, "print id:token pairs");
                        return [=] {
                          f->decoding = dec->count() > 0;
                          f->anything = text->count() + file->count() + f->decoding > 0;
                          return run_tokenize(*f);
                        };
                      });

}  // namespace moex::tools
