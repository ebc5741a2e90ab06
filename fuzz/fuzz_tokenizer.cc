// Fuzz target: tokenizer.json through Tokenizer::load, then encode / decode / stream-decode.
// Input: tokenizer.json [NUL text [NUL tokenizer_config.json [NUL generation_config.json]]].
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr std::string_view kDefaultText = "Hello, world! 12345 \xc3\xa9t\xc3\xa9 <|im_end|>\n\n  x";

void exercise(const moex::Tokenizer& tok, std::string_view text) {
  const std::vector<int32_t> ids = tok.encode(text, true);
  (void)tok.encode(text, false);
  const std::string back = tok.decode(ids, false);
  (void)tok.decode(ids, true);
  moex::StreamDecoder stream(tok);
  std::string streamed;
  for (int32_t id : ids) streamed += stream.step(id);
  streamed += stream.flush();
  if (streamed != back)
    moex::fuzz::invariant_failed("tokenizer", "StreamDecoder output differs from decode()");
  // Ids outside the vocabulary are skipped, never an error.
  (void)tok.decode({-1, tok.vocab_size(), tok.vocab_size() + 1000, 0}, false);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size())
      moex::fuzz::invariant_failed("tokenizer", "encode() produced an id outside the vocabulary");
    if (auto t = tok.id_to_token(id)) (void)tok.token_to_id(*t);
    (void)tok.is_special(id);
  }
  (void)tok.eos_ids();
  (void)tok.bos_id();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = moex::fuzz::split_at_nul(data, size, 4);
  const std::string& dir = moex::fuzz::scratch_dir();
  const std::string json_path = dir + "/tokenizer.json";
  moex::fuzz::write_file(json_path, parts[0]);
  // The companion files exist only when the input carries them.
  const char* companions[] = {"tokenizer_config.json", "generation_config.json"};
  for (size_t i = 0; i < 2; ++i) {
    const std::string path = dir + "/" + companions[i];
    if (parts.size() > i + 2)
      moex::fuzz::write_file(path, parts[i + 2]);
    else
      moex::fuzz::remove_file(path);
  }
  try {
    const moex::Tokenizer tok = moex::Tokenizer::load(json_path);
    exercise(tok, parts.size() > 1 ? parts[1] : kDefaultText);
  } catch (const moex::Error&) {
  }
  return 0;
}
