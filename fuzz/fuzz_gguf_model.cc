// Fuzz target: a GGUF file as a model (src/model/gguf): the config from its metadata, the
// checkpoint bound through the family's tensor table, the tokenizer and the chat template. The
// input is written to a file named *.gguf (the loaders take paths) and every loader runs on it;
// moex::Error is the only acceptable failure. Checks: an accepted tokenizer encodes and decodes
// a mixed text with ids inside its vocabulary, and an accepted checkpoint's tensors lie inside
// the file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/gguf/gguf_model.h"

namespace {

using moex::str_cat;
using moex::fuzz::invariant_failed;

const std::string& input_path() {
  static const std::string path = [] {
    const std::string dir = str_cat(std::filesystem::temp_directory_path().string(),
                                    "/moex_fuzz_gguf_model.", ::getpid());
    std::filesystem::create_directories(dir);
    return dir + "/model.gguf";
  }();
  return path;
}

void write_input(const uint8_t* data, size_t size) {
  std::ofstream f(input_path(), std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  if (!f) {
    std::perror("moex fuzz: writing the input file");
    std::abort();
  }
}

template <class Load>
void tolerate_errors(Load&& load) {
  try {
    load();
  } catch (const moex::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_input(data, size);
  const std::string& path = input_path();
  tolerate_errors([&] { (void)moex::model::load_gguf_model_config(path); });
  tolerate_errors([&] {
    const moex::model::ModelCheckpoint mc =
        moex::model::open_gguf_model_checkpoint(path, moex::model::CheckOptions{});
    (void)mc;
  });
  tolerate_errors([&] {
    const moex::Tokenizer tok = moex::model::load_gguf_tokenizer(path);
    const std::vector<int32_t> ids = tok.encode("Hello, world! 12 345 \xc3\xbc \xe4\xb8\xad\n\t x");
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size())
        invariant_failed("gguf model", str_cat("encode gave id ", id, " outside [0, ",
                                               tok.vocab_size(), ")"));
    (void)tok.decode(ids);
  });
  tolerate_errors([&] { (void)moex::model::load_gguf_chat_template(path, false); });
  return 0;
}
