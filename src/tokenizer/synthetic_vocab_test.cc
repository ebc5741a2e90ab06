// Unit tests: write_synthetic_tokenizer gives exactly vocab_size ids (up to 250k), specials at
// the top, deterministic files, round-trips text, and rejects bad sizes.
#include "tokenizer/synthetic_vocab.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tokenizer/test_util.h"

namespace moex {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SyntheticVocab, ExactSizeSpecialsAndRoundTrip) {
  for (int64_t n : {1000, 4096, 250000}) {
    const auto dir = tok_test::temp_dir("v" + std::to_string(n));
    write_synthetic_tokenizer(dir.string(), n);
    const Tokenizer t = Tokenizer::load(dir.string());
    EXPECT_EQ(t.vocab_size(), n);
    EXPECT_EQ(t.token_to_id("<|endoftext|>"), n - 3);
    EXPECT_EQ(t.token_to_id("<|im_end|>"), n - 1);
    EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{static_cast<int32_t>(n - 3)}));
    for (int32_t id = 0; id < n; id += 997) EXPECT_TRUE(t.id_to_token(id).has_value()) << id;
    const std::string text = "the rain in spain <|im_start|>\xE4\xBD\xA0\xE5\xA5\xBD 42\n";
    const auto ids = t.encode(text);
    EXPECT_LT(ids.size(), text.size());  // merges apply
    EXPECT_EQ(t.decode(ids), text);
    for (int32_t id : ids) EXPECT_LT(id, n);
  }
}

TEST(SyntheticVocab, DeterministicAndValidated) {
  const auto a = tok_test::temp_dir("a"), b = tok_test::temp_dir("b");
  write_synthetic_tokenizer(a.string(), 3000);
  write_synthetic_tokenizer(b.string(), 3000);
  EXPECT_EQ(slurp(a / "tokenizer.json"), slurp(b / "tokenizer.json"));
  EXPECT_EQ(slurp(a / "tokenizer_config.json"), slurp(b / "tokenizer_config.json"));
  EXPECT_THROW(write_synthetic_tokenizer(a.string(), 200), moex::Error);
  SyntheticTokenizerArgs args;
  args.vocab_size = 1000;
  args.num_special_tokens = 0;
  EXPECT_THROW(write_synthetic_tokenizer(a.string(), args), moex::Error);
}

// A full disk (/dev/full: ENOSPC) is named with the file and the system's reason (it used to
// say "cannot write file" alone).
TEST(SyntheticVocab, AFullDiskSaysWhy) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const auto dir = tok_test::temp_dir("full");
  std::filesystem::create_symlink("/dev/full", dir / "tokenizer.json");
  try {
    write_synthetic_tokenizer(dir.string(), 3000);
    FAIL() << "wrote to /dev/full";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find((dir / "tokenizer.json").string()), std::string::npos) << m;
    EXPECT_NE(m.find(std::strerror(ENOSPC)), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace moex
