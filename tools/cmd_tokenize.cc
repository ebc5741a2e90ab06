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
#include "tokenizer/tokenizer.h"
#include "tools/command.h"

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
  bool skip_special = false;
  bool show_tokens = false;
};

int run_tokenize(const TokenizeFlags& f) {
  const Tokenizer tok = Tokenizer::load(f.tokenizer);
  if (!f.decode.empty()) {
    std::vector<int32_t> ids;
    std::istringstream in(f.decode);
    for (std::string word; in >> word;) {
      ids.push_back(int32_t(parse_int_strict(word, "--decode", INT32_MIN, INT32_MAX)));
    }
    std::cout << tok.decode(ids, f.skip_special) << std::endl;
    return 0;
  }
  std::string text = f.text;
  if (!f.file.empty()) text = read_small_file(f.file, kMaxTextFileBytes, "--file input");
  const auto ids = tok.encode(text, !f.no_special);
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
                                       "checkpoint directory or tokenizer.json")
                            ->required();
                        auto* text = sub.add_option("-t,--text", f->text, "text to encode");
                        auto* file = sub.add_option("-f,--file", f->file, "file to encode");
                        auto* dec = sub.add_option("-d,--decode", f->decode,
                                                   "space-separated ids to decode");
                        text->excludes(file)->excludes(dec);
                        file->excludes(dec);
                        sub.add_flag("--no-special", f->no_special,
                                     "do not add the post-processor's special tokens (BOS...)");
                        sub.add_flag("--skip-special", f->skip_special,
                                     "decode: drop special added tokens");
                        sub.add_flag("--tokens", f->show_tokens, "print id:token pairs");
                        return [f] { return run_tokenize(*f); };
                      });

}  // namespace moex::tools
