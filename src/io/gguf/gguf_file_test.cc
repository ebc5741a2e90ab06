// GgufFile on hand-made files: typed metadata lookups and their errors, tensor shapes and
// byte spans (ne[0] fastest, shape() row-major), split parts joined, and split defects refused.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/testing/fifo_probe.h"
#include "core/testing/temp_dir.h"
#include "io/gguf/gguf_file.h"
#include "io/gguf/gguf_test_util.h"

namespace moex::gguf {
namespace {

using testing::Bytes;

void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(bool(out)) << path;
}

template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Every scalar type, a string, arrays of numbers and strings, and two tensors.
std::string sample_file() {
  Bytes b;
  b.header(2, 14)
      .kv_str("general.architecture", "qwen3moe")
      .str("u8").u32(0).u8(200)
      .str("i8").u32(1).u8(0xfe)
      .str("u16").u32(2).u16(60000)
      .str("i16").u32(3).u16(0x8000)
      .kv_u32("u32", 4000000000u)
      .str("i32").u32(5).u32(0xffffffffu)
      .str("f32").u32(6).f32(0.25f)
      .str("bool").u32(7).u8(1)
      .str("u64").u32(10).u64(~uint64_t(0))
      .str("i64").u32(11).u64(uint64_t(-5))
      .str("f64").u32(12).u64(0x400921fb54442d18ull)  // pi
      .str("ints").u32(9).u32(5).u64(3).u32(1).u32(uint32_t(-2)).u32(3)
      .str("names").u32(9).u32(8).u64(2).str("alpha").str("")
      .tensor("m", {8, 3}, 0, 0)   // F32, 3 rows of 8
      .tensor("v", {5}, 30, 96)    // BF16
      .pad_to(32);
  for (int i = 0; i < 24; ++i) b.f32(float(i));
  for (int i = 0; i < 5; ++i) b.u16(uint16_t(0x3f80 + i));
  return b.out;
}

TEST(GgufFile, TypedLookups) {
  moex::testing::TempDir tmp("moex_gguf");
  const std::string path = tmp.file("s.gguf");
  write(path, sample_file());
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(f->get_int("u8"), 200);
  EXPECT_EQ(f->get_int("i8"), -2);
  EXPECT_EQ(f->get_int("u16"), 60000);
  EXPECT_EQ(f->get_int("i16"), -32768);
  EXPECT_EQ(f->get_int("u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("i32"), -1);
  EXPECT_EQ(f->get_float("f32"), 0.25);
  EXPECT_TRUE(f->get_bool("bool"));
  EXPECT_EQ(f->get_int("i64"), -5);
  EXPECT_EQ(f->get_float("f64"), 3.141592653589793);
  const Value& ints = f->get_array("ints");
  ASSERT_EQ(ints.count, 3u);
  EXPECT_EQ(ints.elem_type, ValueType::kI32);
  EXPECT_EQ(ints.scalar_element(1).as_int(), -2);
  const Value& names = f->get_array("names");
  ASSERT_EQ(names.strings.size(), 2u);
  EXPECT_EQ(names.strings[0], "alpha");
  EXPECT_EQ(names.strings[1], "");
  EXPECT_EQ(value_to_string(ints), "[1, -2, 3]");
  EXPECT_EQ(value_type_text(names), "array<string>");
  EXPECT_EQ(f->metadata().size(), 14u);
  EXPECT_EQ(f->find("nope"), nullptr);

  // Wrong types and absent keys name the file, the key, what it is and what was expected.
  EXPECT_NE(error_of([&] { f->get_string("u32"); }).find("key 'u32' is uint32; expected a string"), std::string::npos);
  EXPECT_NE(error_of([&] { f->get_int("f32"); }).find("key 'f32' is float32; expected an integer"), std::string::npos);
  EXPECT_NE(error_of([&] { f->get_int("u64"); }).find("key 'u64' is uint64 18446744073709551615, above 2^63 - 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f->get_float("i64"); }).find("expected float32 or float64"), std::string::npos);
  EXPECT_NE(error_of([&] { f->get_bool("u8"); }).find("key 'u8' is uint8; expected a bool"), std::string::npos);
  EXPECT_EQ(error_of([&] { f->get_array("names"); }), "(no error)");
  EXPECT_NE(error_of([&] { f->get_array("general.architecture"); }).find("is string; expected an array"),
            std::string::npos);
  const std::string missing = error_of([&] { f->get_int("llama.block_count"); });
  EXPECT_NE(missing.find(path), std::string::npos) << missing;
  EXPECT_NE(missing.find("no metadata key 'llama.block_count'"), std::string::npos) << missing;
}

TEST(GgufFile, TensorShapesAndBytes) {
  moex::testing::TempDir tmp("moex_gguf");
  const std::string path = tmp.file("s.gguf");
  write(path, sample_file());
  auto f = GgufFile::open(path);
  ASSERT_EQ(f->tensors().size(), 2u);
  const Tensor* m = f->find_tensor("m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->type, GgmlType::kF32);
  EXPECT_EQ(m->n_dims, 2);
  EXPECT_EQ(m->ne[0], 8);  // the row length (fastest dimension)
  EXPECT_EQ(m->ne[1], 3);
  EXPECT_EQ(m->shape(), (std::vector<int64_t>{3, 8}));  // row-major: 3 rows of 8
  EXPECT_EQ(m->nbytes, 96u);
  float row2[8];
  std::memcpy(row2, m->data + 2 * 8 * 4, sizeof row2);  // row 2 = elements 16..23
  EXPECT_EQ(row2[0], 16.f);
  EXPECT_EQ(row2[7], 23.f);
  const Tensor* v = f->find_tensor("v");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, GgmlType::kBF16);
  EXPECT_EQ(v->shape(), (std::vector<int64_t>{5}));
  EXPECT_EQ(v->data - m->data, 96);
  EXPECT_EQ(v->data[0], 0x80);
  EXPECT_EQ(f->parts().size(), 1u);
  EXPECT_EQ(f->parts()[0]->parsed.data_offset % 32, 0u);
}

// A part of a split model: split.no, split.count, (first part) split.tensors.count, one tensor.
std::string split_part(int no, int count, int total, const std::string& tensor) {
  Bytes b;
  b.header(1, no == 0 ? 4 : 2);
  if (no == 0) b.kv_str("general.architecture", "llama");
  b.str("split.no").u32(2).u16(uint16_t(no)).str("split.count").u32(2).u16(uint16_t(count));
  if (no == 0) b.str("split.tensors.count").u32(5).u32(uint32_t(total));
  b.tensor(tensor, {4}, 0, 0).pad_to(32);
  for (int i = 0; i < 4; ++i) b.f32(float(10 * no + i));
  return b.out;
}

TEST(GgufFile, SplitPartsJoin) {
  moex::testing::TempDir tmp("moex_gguf");
  const std::string p1 = tmp.file("m-00001-of-00002.gguf"), p2 = tmp.file("m-00002-of-00002.gguf");
  write(p1, split_part(0, 2, 2, "a"));
  write(p2, split_part(1, 2, 2, "b"));
  for (const std::string& given : {p1, p2}) {
    auto f = GgufFile::open(given);
    ASSERT_EQ(f->parts().size(), 2u) << given;
    EXPECT_EQ(f->parts()[0]->path, p1);
    ASSERT_EQ(f->tensors().size(), 2u);
    EXPECT_EQ(f->tensors()[0].name, "a");
    EXPECT_EQ(f->tensors()[1].name, "b");
    EXPECT_EQ(f->tensors()[1].part, 1);
    float x;
    std::memcpy(&x, f->find_tensor("b")->data + 4, 4);
    EXPECT_EQ(x, 11.f);
    EXPECT_EQ(f->get_string("general.architecture"), "llama");  // the first part's metadata
  }
}

TEST(GgufFile, SplitDefectsRefused) {
  moex::testing::TempDir tmp("moex_gguf");
  const std::string p1 = tmp.file("m-00001-of-00002.gguf"), p2 = tmp.file("m-00002-of-00002.gguf");
  write(p1, split_part(0, 2, 2, "a"));
  std::string e = error_of([&] { GgufFile::open(p1); });
  EXPECT_NE(e.find("m-00002-of-00002.gguf: cannot open GGUF file (part 2 of 2"), std::string::npos)
      << e;

  write(p2, split_part(0, 2, 2, "b"));  // claims to be part 1
  e = error_of([&] { GgufFile::open(p1); });
  EXPECT_NE(e.find("expected part 2 of 2"), std::string::npos) << e;
  EXPECT_NE(e.find("its metadata says split.no 0"), std::string::npos) << e;

  write(p2, split_part(1, 2, 2, "a"));  // the same tensor in both parts
  e = error_of([&] { GgufFile::open(p1); });
  EXPECT_NE(e.find("tensor 'a' is also in part 1"), std::string::npos) << e;

  write(p2, split_part(1, 2, 2, "b"));
  write(p1, split_part(0, 2, 3, "a"));  // split.tensors.count wrong
  e = error_of([&] { GgufFile::open(p1); });
  EXPECT_NE(e.find("split.tensors.count is 3 but the 2 parts hold 2 tensors"), std::string::npos) << e;

  const std::string odd = tmp.file("model.gguf");  // a part whose name does not say which
  write(odd, split_part(0, 2, 2, "a"));
  e = error_of([&] { GgufFile::open(odd); });
  EXPECT_NE(e.find("part 1 of 2 of a split model"), std::string::npos) << e;
  EXPECT_NE(e.find("-00001-of-00002.gguf"), std::string::npos) << e;
}

TEST(GgufFile, SplitNames) {
  const auto s = parse_split_name("/x/Qwen3-30B-A3B-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->prefix, "/x/Qwen3-30B-A3B-Q4_K_M");
  EXPECT_EQ(s->no, 2);
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(split_part_path(s->prefix, 1, 3), "/x/Qwen3-30B-A3B-Q4_K_M-00001-of-00003.gguf");
  EXPECT_FALSE(parse_split_name("model.gguf").has_value());
  EXPECT_FALSE(parse_split_name("m-0001-of-00003.gguf").has_value());
  EXPECT_FALSE(parse_split_name("m-00001-of-00003.safetensors").has_value());
  EXPECT_FALSE(parse_split_name("m-0000a-of-00003.gguf").has_value());
}

TEST(GgufFile, MissingAndNonRegularFiles) {
  moex::testing::TempDir tmp("moex_gguf");
  EXPECT_NE(error_of([&] { GgufFile::open(tmp.file("nope.gguf")); }).find("cannot open"), std::string::npos);
  EXPECT_NE(error_of([&] { GgufFile::open(tmp.path()); }).find("a directory; expected a regular file"),
            std::string::npos);
  const auto fifo = moex::testing::probe_fifo(tmp.file("fifo.gguf"),
                                              [](const std::string& p) { GgufFile::open(p); });
  EXPECT_TRUE(fifo.returned) << "blocked waiting for a writer";
  EXPECT_NE(fifo.message.find("GGUF file is a FIFO (named pipe); expected a regular file"),
            std::string::npos)
      << fifo.message;
  write(tmp.file("empty.gguf"), "");
  EXPECT_NE(error_of([&] { GgufFile::open(tmp.file("empty.gguf")); }).find("file is 0 bytes"), std::string::npos);
}

}  // namespace
}  // namespace moex::gguf
