// Hostile safetensors files: one crafted file per class of defect, each must be rejected
// with a moex::Error naming the file, the tensor (where there is one) and the problem.
// Then truncations and byte flips of a valid file: open either succeeds or throws Error.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/testing/fifo_probe.h"
#include "io/safetensors.h"
#include "io/test_util.h"

namespace moex::io {
namespace {

using testing::safetensors_bytes;
using testing::TempDir;
using testing::throws_error_with;
using testing::write_file;

struct HostileCase {
  const char* id;
  std::string bytes;
  std::vector<std::string> expect;  // substrings besides the file name
};

std::string hdr(const std::string& json, size_t data_bytes) {
  return safetensors_bytes(json, std::string(data_bytes, '\x01'));
}

std::string raw_len(uint64_t len, const std::string& rest) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((len >> (8 * i)) & 0xff);
  return out + rest;
}

std::vector<HostileCase> hostile_cases() {
  const std::string ok_a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  return {
      {"empty_file", "", {"0 bytes", "at least 8"}},
      {"short_file", "abcde", {"5 bytes", "at least 8"}},
      {"header_past_end", raw_len(1000, "{}"), {"header length 1000", "past the end"}},
      {"header_over_limit", raw_len(200'000'000, "{}"), {"header length 200000000", "100 MB"}},
      {"header_len_max", raw_len(~uint64_t(0), "{}"), {"header length", "limit"}},
      {"invalid_json", hdr("{\"a\": ", 0), {"invalid JSON"}},
      {"trailing_garbage", hdr("{}x", 0), {"invalid JSON"}},
      {"invalid_utf8", hdr("{\"a\xff\": 1}", 0), {"invalid JSON"}},
      {"not_object", hdr("[1, 2]", 0), {"header is an array", "expected a JSON object"}},
      {"deep_nesting", hdr(std::string(5000, '[') + std::string(5000, ']'), 0), {"nesting deeper"}},
      {"entry_not_object", hdr(R"({"w":5})", 0), {"tensor 'w'", "an integer", "expected an object"}},
      {"missing_dtype", hdr(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), {"tensor 'w'", "missing field 'dtype'"}},
      {"missing_shape", hdr(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8), {"tensor 'w'", "missing field 'shape'"}},
      {"missing_offsets", hdr(R"({"w":{"dtype":"F32","shape":[2]}})", 8), {"tensor 'w'", "missing field 'data_offsets'"}},
      {"dtype_not_string", hdr(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "'dtype' is an integer", "expected a string"}},
      {"unknown_dtype", hdr(R"({"w":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "unknown dtype 'F7'", "BF16"}},
      {"lowercase_dtype", hdr(R"({"w":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "unknown dtype 'f32'"}},
      {"shape_not_array", hdr(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "'shape' is an integer", "expected an array"}},
      {"shape_float", hdr(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "shape[0]", "floating-point", "expected an integer"}},
      {"shape_bool", hdr(R"({"w":{"dtype":"F32","shape":[true],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "shape[0]", "boolean"}},
      {"shape_string", hdr(R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "shape[0]", "string"}},
      {"shape_negative", hdr(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "shape[1] = -1", "negative"}},
      {"shape_beyond_int64", hdr(R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "shape[0]", "out of range"}},
      {"shape_overflow", hdr(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "overflows"}},
      {"bytes_overflow", hdr(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8),
       {"tensor 'w'", "overflows"}},
      {"size_mismatch", hdr(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24),
       {"tensor 'w'", "[2, 3] x F32", "needs 24 bytes", "span 20"}},
      {"offsets_not_array", hdr(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":8}})", 8),
       {"tensor 'w'", "'data_offsets' is an integer", "[begin, end]"}},
      {"offsets_one", hdr(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", 8),
       {"tensor 'w'", "an array of 1", "[begin, end]"}},
      {"offsets_three", hdr(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,16]}})", 16),
       {"tensor 'w'", "an array of 3", "[begin, end]"}},
      {"offsets_negative", hdr(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8),
       {"tensor 'w'", "data_offsets[0] is negative"}},
      {"offsets_float", hdr(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}})", 8),
       {"tensor 'w'", "data_offsets[1] is a floating-point"}},
      {"offsets_reversed", hdr(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8),
       {"tensor 'w'", "begin > end"}},
      {"outside_data", hdr(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
       {"tensor 'w'", "outside the data area of 8 bytes"}},
      {"outside_data_huge", hdr(R"({"w":{"dtype":"U8","shape":[8],"data_offsets":[18446744073709551600,18446744073709551608]}})", 8),
       {"tensor 'w'", "outside the data area"}},
      {"overlap", hdr("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       {"'b'", "overlap tensor 'a'", "disjoint"}},
      {"contained", hdr(R"({"big":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},"in":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", 16),
       {"overlap", "'big'", "'in'"}},
      {"duplicate_name", hdr("{" + ok_a + "," + ok_a + "}", 8), {"duplicate JSON key 'a'"}},
      {"duplicate_field", hdr(R"({"w":{"dtype":"F32","dtype":"U8","shape":[2],"data_offsets":[0,8]}})", 8),
       {"duplicate JSON key 'dtype'"}},
      {"gap", hdr("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})", 16),
       {"bytes [8, 12) before tensor 'b'", "without holes"}},
      {"leading_gap", hdr(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
       {"bytes [0, 4) before tensor 'w'"}},
      {"trailing_bytes", hdr("{" + ok_a + "}", 12), {"cover 8 of the 12 data bytes"}},
      {"data_without_tensors", hdr("{}", 4), {"cover 0 of the 4 data bytes"}},
      {"metadata_not_object", hdr(R"({"__metadata__":[1]})", 0), {"__metadata__ is an array", "object of string"}},
      {"metadata_value_number", hdr(R"({"__metadata__":{"format":"mlx","n":3}})", 0),
       {"__metadata__ field 'n' is an integer", "expected a string"}},
  };
}

TEST(SafetensorsHostile, EveryClassRejectedWithFileAndProblem) {
  TempDir tmp;
  for (const HostileCase& c : hostile_cases()) {
    const std::string path = tmp.file(std::string(c.id) + ".safetensors");
    write_file(path, c.bytes);
    try {
      SafetensorsFile::open(path);
      ADD_FAILURE() << c.id << ": accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << c.id << ": " << msg;
      for (const std::string& s : c.expect) EXPECT_NE(msg.find(s), std::string::npos) << c.id << " lacks '" << s << "': " << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.id << ": non-moex exception " << e.what();
    }
  }
}

// A header length 1-5 bytes short still parses (the bytes lost were the header's padding
// spaces) but would shift every tensor by that many bytes: the coverage check refuses it.
TEST(SafetensorsHostile, HeaderLengthAFewBytesShortIsRejected) {
  TempDir tmp;
  const std::string good = hdr(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})" "      ", 8);
  write_file(tmp.file("good.safetensors"), good);
  ASSERT_NO_THROW(SafetensorsFile::open(tmp.file("good.safetensors")));
  uint64_t len = 0;
  std::memcpy(&len, good.data(), 8);
  for (uint64_t k = 1; k <= 5; ++k) {
    const std::string path = tmp.file("short" + std::to_string(k) + ".safetensors");
    write_file(path, raw_len(len - k, good.substr(8)));
    EXPECT_TRUE(throws_error_with([&] { SafetensorsFile::open(path); },
                                  {path, "cover 8 of the " + std::to_string(8 + k) + " data bytes"}))
        << "header length short by " << k;
  }
}

TEST(SafetensorsHostile, MissingFileDirectoryAndFifo) {
  TempDir tmp;
  EXPECT_TRUE(throws_error_with([&] { SafetensorsFile::open(tmp.file("nope.safetensors")); },
                                {"nope.safetensors", "cannot open"}));
  EXPECT_TRUE(throws_error_with([&] { SafetensorsFile::open(tmp.path()); },
                                {tmp.path(), "a directory; expected a regular file"}));
  // A FIFO nobody writes to: refused at once, not waited on.
  const auto fifo = moex::testing::probe_fifo(
      tmp.file("fifo.safetensors"), [](const std::string& p) { SafetensorsFile::open(p); });
  EXPECT_TRUE(fifo.returned) << "blocked waiting for a writer";
  EXPECT_NE(fifo.message.find("a FIFO (named pipe); expected a regular file"), std::string::npos)
      << fifo.message;
}

TEST(SafetensorsHostile, LenientFormsAccepted) {
  TempDir tmp;
  const std::string path = tmp.file("ok.safetensors");
  // Padding spaces, an unknown extra field, tensors listed out of offset order, empty
  // tensors at any offset (also inside another tensor's range), and an empty header object.
  write_file(path, hdr(R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1},)"
                       R"("e":{"dtype":"BF16","shape":[3,0],"data_offsets":[4,4]}})" "     ",
                       12));
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "a");
  EXPECT_EQ(f->tensors()[1].name, "e");
  EXPECT_EQ(f->tensors()[2].name, "b");
  EXPECT_EQ(f->find("b")->data - f->find("a")->data, 8);
  write_file(path, hdr("{}", 0));
  EXPECT_TRUE(SafetensorsFile::open(path)->tensors().empty());
}

// A null __metadata__ (what mx.save_safetensors writes without metadata) is no metadata.
TEST(SafetensorsHostile, NullMetadataIsNone) {
  TempDir tmp;
  const std::string path = tmp.file("m.safetensors");
  write_file(path, hdr(R"({"__metadata__":null,"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(f->tensors()[0].name, "a");
}

// Truncation at every length and random byte flips never crash or throw anything but Error;
// whatever opens can be read in full (run under ASan to check the bounds strictly).
TEST(SafetensorsHostile, TruncationsAndFlipsNeverCrash) {
  TempDir tmp;
  const std::string path = tmp.file("m.safetensors");
  const std::string good = hdr(R"({"__metadata__":{"format":"mlx"},"a":{"dtype":"F32","shape":[2,2],)"
                               R"("data_offsets":[0,16]},"b":{"dtype":"U32","shape":[3],"data_offsets":[16,28]}})",
                               28);
  auto check = [&](const std::string& bytes, const std::string& what) {
    write_file(path, bytes);
    try {
      auto f = SafetensorsFile::open(path);
      uint64_t total = 0;
      for (const TensorInfo& t : f->tensors()) {
        for (uint64_t i = 0; i < t.nbytes; ++i) total += t.data[i];  // touches every byte
        EXPECT_LE(t.nbytes, f->file_size()) << what;
      }
      EXPECT_LE(total, 255 * f->file_size()) << what;
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": non-moex exception " << e.what();
    }
  };
  for (size_t n = 0; n < good.size(); ++n) check(good.substr(0, n), "truncated to " + std::to_string(n));
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    std::string b = good;
    const int flips = 1 + int(rng() % 3);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = char(rng());
    check(b, "flip round " + std::to_string(i));
  }
}

}  // namespace
}  // namespace moex::io
