// Hostile GGUF files: one crafted file per class of defect, each refused with a moex::Error
// naming the file and the problem, quickly and without a large allocation (this binary's
// operator new records the largest request while a case parses). Then truncations and byte
// flips of a valid file: parsing either succeeds with in-bounds tensors or throws Error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <random>

#include "core/error.h"
#include "core/largest_allocation_test_util.h"
#include "io/gguf/gguf_parse.h"
#include "io/gguf/gguf_test_util.h"


namespace moex::gguf {
namespace {

using testing::Bytes;

struct HostileCase {
  const char* id;
  std::string bytes;
  std::vector<std::string> expect;  // substrings besides the file name
};

constexpr uint32_t kF32 = 0, kQ4_0 = 2;

// A valid file with one tensor of ne = {n} at data offset 0 and no metadata.
std::string one_tensor(uint64_t n) {
  Bytes b;
  b.header(1, 0).tensor("w", {n}, kF32, 0).pad_to(32);
  b.out.append(size_t(n) * 4, '\x01');
  return b.out;
}

std::vector<HostileCase> hostile_cases() {
  const uint64_t huge = uint64_t{1} << 60;
  std::vector<HostileCase> c;
  c.push_back({"empty_file", "", {"file is 0 bytes", "needs 24"}});
  c.push_back({"truncated_header", std::string("GGUF\x03\0\0\0\x01\0", 10), {"file is 10 bytes", "needs 24"}});
  c.push_back({"wrong_magic", Bytes().raw("GGML").u32(3).u64(0).u64(0).out, {"GGUF magic", "'GGML'"}});
  c.push_back({"version_1", Bytes().header(0, 0, 1).out, {"version 1", "not supported"}});
  c.push_back({"version_4", Bytes().header(0, 0, 4).out, {"GGUF version 4", "expected 2 or 3"}});
  c.push_back({"version_big_endian", Bytes().header(0, 0, 0x03000000).out, {"byte-swapped", "big-endian"}});
  c.push_back({"huge_tensor_count", Bytes().header(huge, 0).out, {"tensor count 1152921504606846976", "limit of 1048576"}});
  c.push_back({"huge_kv_count", Bytes().header(0, huge).out, {"key/value count 1152921504606846976", "limit"}});
  c.push_back({"counts_past_file", Bytes().header(1000, 1000).out, {"1000 tensors and 1000 metadata pairs need at least"}});
  c.push_back({"truncated_value", Bytes().header(0, 1).str("a.b").u32(4).raw("\x01\x02").out,
               {"key 'a.b'", "value at byte", "truncated"}});
  c.push_back({"huge_key_length", Bytes().header(0, 1).u64(huge).raw(std::string(40, 'k')).out,
               {"key at byte 24 has length 1152921504606846976", "over the limit of 4096"}});
  c.push_back({"huge_string_length", Bytes().header(0, 1).str("s").u32(8).u64(huge).raw("xyz").out,
               {"key 's'", "string value at byte", "over the limit"}});
  c.push_back({"string_past_end", Bytes().header(0, 1).str("s").u32(8).u64(1000).raw("xyz").out,
               {"key 's'", "has length 1000 but only 3 bytes remain"}});
  c.push_back({"huge_array_length", Bytes().header(0, 1).str("arr").u32(9).u32(0).u64(huge).raw("abcd").out,
               {"key 'arr'", "array length 1152921504606846976", "uint8 elements", "exceeds the 4 bytes left"}});
  c.push_back({"huge_string_array", Bytes().header(0, 1).str("arr").u32(9).u32(8).u64(1u << 30).raw("abcdefgh").out,
               {"key 'arr'", "array length 1073741824", "string elements of at least 8 bytes"}});
  {
    Bytes b;
    b.header(0, 1).str("deep").u32(9);
    for (int i = 0; i < 9; ++i) b.u32(9).u64(1);
    b.u32(0).u64(0);
    c.push_back({"deep_array_nesting", b.out, {"key 'deep'", "nested 9 levels deep", "limit is 8"}});
  }
  {
    Bytes b;  // 70000 empty nested arrays: each 12 bytes in the file but a node in memory
    b.header(0, 1).str("wide").u32(9).u32(9).u64(70000);
    for (int i = 0; i < 70000; ++i) b.u32(0).u64(0);
    c.push_back({"nested_array_elements", b.out, {"key 'wide'", "nested arrays hold more than 65536"}});
  }
  c.push_back({"bad_value_type", Bytes().header(0, 1).str("t").u32(13).u32(0).out,
               {"key 't'", "value type at byte", "is 13", "0..12"}});
  c.push_back({"bad_array_type", Bytes().header(0, 1).str("t").u32(9).u32(77).u64(0).out,
               {"key 't'", "array element type", "is 77"}});
  c.push_back({"bad_bool", Bytes().header(0, 1).str("flag").u32(7).u8(2).out, {"key 'flag'", "bool at byte", "is 2"}});
  c.push_back({"bad_bool_in_array", Bytes().header(0, 1).str("flags").u32(9).u32(7).u64(3).u8(1).u8(0).u8(7).out,
               {"key 'flags'", "bool at byte 55 is 7"}});
  c.push_back({"empty_key", Bytes().header(0, 1).str("").u32(4).u32(1).out, {"metadata pair #0", "key at byte 24 is empty"}});
  c.push_back({"invalid_utf8_key", Bytes().header(0, 1).str("bad\xc0\xafkey").u32(4).u32(1).out,
               {"metadata pair #0", "key 'bad\\xc0\\xafkey'", "not valid UTF-8"}});
  c.push_back({"duplicate_key", Bytes().header(0, 2).kv_u32("general.x", 1).kv_u32("general.x", 2).out,
               {"key 'general.x'", "appears twice", "bytes 24 and 49"}});
  c.push_back({"alignment_not_power_of_two", Bytes().header(0, 1).kv_u32("general.alignment", 48).out,
               {"key 'general.alignment'", "is 48", "power of two"}});
  c.push_back({"alignment_zero", Bytes().header(0, 1).kv_u32("general.alignment", 0).out,
               {"general.alignment", "is 0", "power of two"}});
  c.push_back({"alignment_huge", Bytes().header(0, 1).kv_u32("general.alignment", 1u << 24).out,
               {"general.alignment", "is 16777216", "from 1 to 65536"}});
  c.push_back({"alignment_wrong_type", Bytes().header(0, 1).str("general.alignment").u32(10).u64(32).out,
               {"general.alignment", "is uint64", "expected uint32"}});
  c.push_back({"empty_tensor_name", Bytes().header(1, 0).tensor("", {4}, kF32, 0).pad_to(32).raw(std::string(16, 0)).out,
               {"tensor info #0", "tensor name at byte 24 is empty"}});
  c.push_back({"duplicate_tensor",
               Bytes().header(2, 0).tensor("w", {4}, kF32, 0).tensor("w", {4}, kF32, 32).pad_to(32).raw(std::string(48, 0)).out,
               {"tensor 'w'", "name appears twice"}});
  c.push_back({"too_many_dims", Bytes().header(1, 0).tensor("w", {1, 1, 1, 1, 1}, kF32, 0).pad_to(32).raw(std::string(4, 0)).out,
               {"tensor 'w'", "dimension count 5", "at most 4"}});
  c.push_back({"dims_overflow",
               Bytes().header(1, 0).tensor("w", {uint64_t(1) << 32, uint64_t(1) << 32}, kF32, 0).pad_to(32).out,
               {"tensor 'w'", "overflow a 64-bit element count"}});
  c.push_back({"dim_negative", Bytes().header(1, 0).tensor("w", {~uint64_t(0)}, kF32, 0).pad_to(32).out,
               {"tensor 'w'", "ne[0] = 18446744073709551615", "exceeds 2^63 - 1"}});
  c.push_back({"bytes_overflow", Bytes().header(1, 0).tensor("w", {uint64_t(1) << 62}, kF32, 0).pad_to(32).out,
               {"tensor 'w'", "elements of F32 overflow a 64-bit byte count"}});
  c.push_back({"unknown_type", Bytes().header(1, 0).tensor("w", {4}, 4, 0).pad_to(32).raw(std::string(16, 0)).out,
               {"tensor 'w'", "ggml type id 4", "not a type moex knows", "Q4_K"}});
  c.push_back({"unknown_type_large", Bytes().header(1, 0).tensor("w", {4}, 1000, 0).pad_to(32).out,
               {"tensor 'w'", "ggml type id 1000"}});
  c.push_back({"row_not_whole_blocks", Bytes().header(1, 0).tensor("w", {16, 2}, kQ4_0, 0).pad_to(32).raw(std::string(36, 0)).out,
               {"tensor 'w'", "ne[0] = 16", "Q4_0's block of 32"}});
  c.push_back({"unaligned_offset",
               Bytes().header(1, 0).tensor("w", {4}, kF32, 4).pad_to(32).raw(std::string(32, 0)).out,
               {"tensor 'w'", "data offset 4", "not a multiple of the alignment 32"}});
  {
    std::string ok = one_tensor(8);
    c.push_back({"tensor_past_end", ok.substr(0, ok.size() - 1),
                 {"tensor 'w'", "32 bytes at data offset 0", "runs past the end of the file", "31 bytes"}});
  }
  c.push_back({"data_section_past_end", Bytes().header(1, 0).tensor("w", {0}, kF32, 0).out,
               {"data section would start at byte 64", "file ends at byte"}});
  c.push_back({"overlapping_tensors",
               Bytes().header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad_to(32).raw(std::string(64, 0)).out,
               {"tensor 'b' bytes [32, 64)", "overlap tensor 'a' bytes [0, 64)"}});
  return c;
}

TEST(GgufHostile, EachDefectIsRefusedWithItsMessage) {
  // The instrument itself: a 1 MiB request while tracking is seen.
  {
    moex::testing::LargestAllocation probe_alloc;
    { std::vector<char> probe(1 << 20); }
    ASSERT_GE(probe_alloc.stop(), size_t{1} << 20) << "operator new is not the replaced one";
  }
  for (const HostileCase& hc : hostile_cases()) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string msg;
    moex::testing::LargestAllocation alloc;
    try {
      parse_gguf(reinterpret_cast<const uint8_t*>(hc.bytes.data()), hc.bytes.size(), "hostile.gguf");
    } catch (const Error& e) {
      msg = e.what();
    }
    const size_t largest = alloc.stop();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(msg.empty()) << hc.id << ": accepted";
    EXPECT_NE(msg.find("GGUF file 'hostile.gguf'"), std::string::npos) << hc.id << ": " << msg;
    for (const std::string& part : hc.expect)
      EXPECT_NE(msg.find(part), std::string::npos) << hc.id << ": message lacks '" << part << "': " << msg;
    // Nothing is allocated beyond a small multiple of the file's own size.
    EXPECT_LE(largest, 64 * hc.bytes.size() + 65536) << hc.id << ": allocated " << largest;
    EXPECT_LT(ms, 500.0) << hc.id;
  }
}

TEST(GgufHostile, EveryCaseIsAValidFileOnceFixed) {
  // The building blocks make valid files: a defect-free one of each shape parses.
  const std::string ok = one_tensor(8);
  const ParsedGguf p = parse_gguf(reinterpret_cast<const uint8_t*>(ok.data()), ok.size(), "ok.gguf");
  ASSERT_EQ(p.tensors.size(), 1u);
  EXPECT_EQ(p.tensors[0].nbytes, 32u);
  EXPECT_EQ(p.data_offset, 64u);
  EXPECT_EQ(p.data_size, 32u);
}

// Truncation at every length and random byte flips: parse either throws Error or returns
// tensors inside the data section.
TEST(GgufHostile, TruncationsAndFlipsNeverCrash) {
  Bytes b;
  b.header(3, 4)
      .kv_str("general.architecture", "llama")
      .kv_u32("general.alignment", 16)
      .str("tokens").u32(9).u32(8).u64(2).str("a").str("bc")
      .str("nested").u32(9).u32(9).u64(2).u32(5).u64(1).u32(7).u32(6).u64(1).f32(1.5f)
      .tensor("a", {4, 2}, kF32, 0)
      .tensor("b", {32}, kQ4_0, 32)
      .tensor("c", {3}, 30, 64)
      .pad_to(16);
  b.out.append(80, '\x05');
  const std::string good = b.out;
  ASSERT_NO_THROW(parse_gguf(reinterpret_cast<const uint8_t*>(good.data()), good.size(), "m.gguf"));
  auto check = [&](const std::string& bytes, const std::string& what) {
    try {
      const ParsedGguf p = parse_gguf(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "m.gguf");
      for (const TensorInfo& t : p.tensors) EXPECT_LE(p.data_offset + t.offset + t.nbytes, bytes.size()) << what;
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": non-moex exception " << e.what();
    }
  };
  for (size_t n = 0; n < good.size(); ++n) check(good.substr(0, n), "truncated to " + std::to_string(n));
  std::mt19937 rng(77);
  for (int i = 0; i < 5000; ++i) {
    std::string m = good;
    const int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) m[rng() % m.size()] = char(rng());
    check(m, "flip round " + std::to_string(i));
  }
}

}  // namespace
}  // namespace moex::gguf
