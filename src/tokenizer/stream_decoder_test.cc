// Unit tests: StreamDecoder never emits a partial UTF-8 sequence, holds bytes back until a
// later token completes them, and its outputs concatenate to decode(all ids).
#include <gtest/gtest.h>

#include "tokenizer/synthetic_vocab.h"
#include "tokenizer/test_util.h"
#include "tokenizer/utf8.h"

namespace moex {
namespace {

TEST(StreamDecoder, HoldsBackIncompleteUtf8) {
  const std::string dir = tok_test::temp_dir("syn").string();
  write_synthetic_tokenizer(dir, 2000);
  const Tokenizer t = Tokenizer::load(dir);
  // Byte tokens (id == byte): "a", then the 4 bytes of U+1F600, then "b".
  StreamDecoder sd(t);
  EXPECT_EQ(sd.step('a'), "a");
  EXPECT_EQ(sd.step(0xF0), "");
  EXPECT_EQ(sd.step(0x9F), "");
  EXPECT_EQ(sd.step(0x98), "");
  EXPECT_EQ(sd.step(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(sd.step('b'), "b");
  // A truncated sequence is only released by flush (as U+FFFD).
  EXPECT_EQ(sd.step(0xE4), "");
  EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");
}

TEST(StreamDecoder, PrimedWithContextKeepsTheFirstSpace) {
  const Tokenizer t = Tokenizer::load(tok_test::write_tokenizer("sp_stream", tok_test::sp_json()));
  const auto prompt = t.encode("abc"), more = t.encode("abc", false);  // "▁abc"
  StreamDecoder plain(t);
  EXPECT_EQ(plain.step(more[0]), "abc");  // the decoder strips the first token's space
  StreamDecoder primed(t);
  primed.prime({prompt.back()});
  EXPECT_EQ(primed.step(more[0]), " abc");
  EXPECT_EQ(primed.flush(), "");
}

TEST(StreamDecoder, ConcatenationEqualsDecodeOnMixedText) {
  const std::string dir = tok_test::temp_dir("syn").string();
  write_synthetic_tokenizer(dir, 5000);
  const Tokenizer t = Tokenizer::load(dir);
  const std::string text =
      "Hello \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 "
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 <|im_start|>x<|im_end|> 12345\t\t end";
  const auto ids = t.encode(text);
  for (bool skip : {false, true}) {
    StreamDecoder sd(t, skip);
    std::string all;
    for (int32_t id : ids) {
      const std::string piece = sd.step(id);
      EXPECT_TRUE(tok::is_valid_utf8(piece));
      EXPECT_EQ(piece.find("\xEF\xBF\xBD"), std::string::npos) << "emitted a partial character";
      all += piece;
    }
    all += sd.flush();
    EXPECT_EQ(all, t.decode(ids, skip));
  }
  EXPECT_EQ(t.decode(ids), text);
}

TEST(StreamDecoder, SentencePieceLeadingSpaceIsKept) {
  const Tokenizer t = Tokenizer::load(tok_test::write_tokenizer("sp", tok_test::sp_json()));
  const auto ids = t.encode("abc abc \xC3\xA9");
  StreamDecoder sd(t, true);
  std::string all;
  for (int32_t id : ids) all += sd.step(id);
  EXPECT_EQ(all, "abc abc \xC3\xA9");
}

// Streaming as Hugging Face's DecodeStream: a byte run is emitted as soon as it is valid
// UTF-8. A stray byte after it makes decode() show the whole run as U+FFFD; the stream
// cannot retract what it emitted, so it differs there (as DecodeStream does), but it never
// repeats text and stays valid UTF-8.
TEST(StreamDecoder, ByteRunThatTurnsInvalidLaterIsNotRepeated) {
  const Tokenizer t = Tokenizer::load(tok_test::write_tokenizer("sp2", tok_test::sp_json()));
  auto id = [&](const char* piece) {
    const auto v = t.token_to_id(piece);
    EXPECT_TRUE(v.has_value()) << piece;
    return v ? *v : 0;
  };
  const std::vector<int32_t> ids = {id("a"), id("<0xC3>"), id("<0xA9>"), id("<0xAC>"), id("b")};
  StreamDecoder sd(t, false);
  std::vector<std::string> pieces;
  for (int32_t i : ids) pieces.push_back(sd.step(i));
  pieces.push_back(sd.flush());
  EXPECT_EQ(pieces[2], "\xC3\xA9");  // the run is valid: emitted at once
  EXPECT_EQ(t.decode(ids, false), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  std::string all;
  for (const std::string& p : pieces) all += p;
  EXPECT_EQ(all, "a\xC3\xA9\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b");  // "a" not repeated
}

// token_bytes: a byte-level token gives its byte, a SentencePiece byte token "<0xC3>" its
// byte, a plain piece its text, an id outside the vocabulary nothing.
TEST(TokenBytes, RawBytesOfOneToken) {
  const std::string dir = tok_test::temp_dir("syn").string();
  write_synthetic_tokenizer(dir, 2000);
  const Tokenizer byte_level = Tokenizer::load(dir);
  EXPECT_EQ(byte_level.token_bytes(0xC3), "\xC3");
  EXPECT_EQ(byte_level.decode({0xC3}), "\xEF\xBF\xBD");
  EXPECT_EQ(byte_level.token_bytes(-1), "");
  const Tokenizer sp = Tokenizer::load(tok_test::write_tokenizer("sp3", tok_test::sp_json()));
  EXPECT_EQ(sp.token_bytes(*sp.token_to_id("<0xC3>")), "\xC3");
  EXPECT_EQ(sp.token_bytes(*sp.token_to_id("a")), "a");
  EXPECT_EQ(sp.token_bytes(1 << 30), "");
}

}  // namespace
}  // namespace moex
