// Writer misuse: declaration errors, out-of-order and overrunning writes, incomplete
// finish; an unfinished file never appears under its final name.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "io/test_util.h"

namespace moex::io {
namespace {

using testing::TempDir;
using testing::throws_error_with;
namespace fs = std::filesystem;

TEST(SafetensorsWriter, DeclarationErrorsNameTheTensor) {
  TempDir tmp;
  SafetensorsWriter w(tmp.file("x.safetensors"));
  w.declare({"a", DType::F32, {2}});
  EXPECT_TRUE(throws_error_with([&] { w.declare({"a", DType::F32, {2}}); }, {"x.safetensors", "'a'", "twice"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"neg", DType::F32, {2, -1}}); }, {"'neg'", "negative"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"huge", DType::F64, {int64_t(1) << 62, 8}}); },
                                {"'huge'", "overflow"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"", DType::F32, {1}}); }, {"invalid tensor name"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"__metadata__", DType::F32, {1}}); }, {"__metadata__"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"bad\xff", DType::F32, {1}}); }, {"UTF-8"}));
  const float v[2] = {1, 2};
  w.write("a", v, sizeof v);
  EXPECT_TRUE(throws_error_with([&] { w.declare({"late", DType::F32, {1}}); }, {"'late'", "after writing began"}));
  EXPECT_TRUE(throws_error_with([&] { w.set_metadata("k", "v"); }, {"'k'", "after writing began"}));
  w.finish();
  EXPECT_EQ(SafetensorsFile::open(tmp.file("x.safetensors"))->tensors().size(), 1u);
}

TEST(SafetensorsWriter, OrderOverrunAndIncompleteAreErrors) {
  TempDir tmp;
  const std::string path = tmp.file("y.safetensors");
  std::vector<uint8_t> buf(64, 1);
  {
    SafetensorsWriter w(path);
    w.declare({"first", DType::U8, {16}});
    w.declare({"second", DType::U16, {8}});
    EXPECT_TRUE(throws_error_with([&] { w.write("second", buf.data(), 16); },
                                  {"y.safetensors", "'second' out of order", "expected tensor 'first'"}));
    EXPECT_TRUE(throws_error_with([&] { w.write("nope", buf.data(), 16); }, {"'nope'", "never declared"}));
    EXPECT_TRUE(throws_error_with([&] { w.write("first", buf.data(), 15); }, {"'first'", "expected the whole tensor"}));
    w.write_chunk("first", buf.data(), 10);
    EXPECT_TRUE(throws_error_with([&] { w.write_chunk("first", buf.data(), 7); }, {"'first'", "overrun", "16"}));
    EXPECT_TRUE(throws_error_with([&] { w.write("first", buf.data(), 16); }, {"'first'", "10 already written"}));
    w.write_chunk("first", buf.data(), 6);
    EXPECT_TRUE(throws_error_with([&] { w.write("first", buf.data(), 16); }, {"'first' out of order"}));
    w.write_chunk("second", buf.data(), 4);
    EXPECT_TRUE(throws_error_with([&] { w.finish(); }, {"'second' incomplete", "4 of 16 bytes"}));
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::exists(path + ".partial"));
  }
  // The abandoned writer removed its partial file.
  EXPECT_FALSE(fs::exists(path + ".partial"));
  EXPECT_FALSE(fs::exists(path));
}

TEST(ShardedWriter, MisuseIsReported) {
  TempDir tmp;
  std::vector<uint8_t> buf(64, 3);
  EXPECT_TRUE(throws_error_with([&] { ShardedCheckpointWriter(tmp.path(), 0); }, {"shard limit 0"}));
  ShardedCheckpointWriter w(tmp.file("ck"), 10);
  w.declare({"a", DType::U8, {8}});
  w.declare({"b", DType::U8, {8}});
  w.declare({"c", DType::U8, {8}});
  EXPECT_TRUE(throws_error_with([&] { w.declare({"a", DType::U8, {1}}); }, {"'a'", "twice"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"n\xc3", DType::U8, {1}}); }, {"ck'", "UTF-8"}));
  EXPECT_TRUE(throws_error_with([&] { w.declare({"neg", DType::U8, {-2}}); }, {"ck'", "'neg'", "negative"}));
  EXPECT_TRUE(throws_error_with([&] { w.set_metadata("k", "\xff"); }, {"ck'", "metadata value of 'k'"}));
  // 'c' lives in a later shard than 'a': writing it first is out of order.
  EXPECT_TRUE(throws_error_with([&] { w.write("c", buf.data(), 8); }, {"'c' out of order", "expected tensor 'a'"}));
  w.write("a", buf.data(), 8);
  w.write("b", buf.data(), 8);
  EXPECT_TRUE(throws_error_with([&] { w.write("a", buf.data(), 8); }, {"'a'", "already written"}));
  EXPECT_TRUE(throws_error_with([&] { w.finish(); }, {"'c' incomplete"}));
  EXPECT_EQ(w.shard_files().size(), 3u);
  // Shards 1 and 2 were completed and renamed; shard 3 and the index never appeared.
  EXPECT_TRUE(fs::exists(tmp.file("ck/model-00002-of-00003.safetensors")));
  EXPECT_FALSE(fs::exists(tmp.file("ck/model-00003-of-00003.safetensors")));
  EXPECT_FALSE(fs::exists(tmp.file("ck/model.safetensors.index.json")));
}

// A full disk (/dev/full under the name a file is written at: ENOSPC) is named with the
// system's reason, for a shard and for the index.
TEST(ShardedWriter, AFullDiskSaysWhy) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const std::string enospc = std::strerror(ENOSPC);
  std::vector<uint8_t> buf(64, 3);
  {
    TempDir tmp;
    fs::create_symlink("/dev/full", tmp.file("x.safetensors.partial"));
    SafetensorsWriter w(tmp.file("x.safetensors"));
    w.declare({"a", DType::U8, {64}});
    EXPECT_TRUE(throws_error_with(
        [&] {
          w.write("a", buf.data(), buf.size());
          w.finish();
        },
        {"x.safetensors", enospc}));
  }
  TempDir tmp;
  fs::create_directories(tmp.file("ck"));
  fs::create_symlink("/dev/full", tmp.file("ck/model.safetensors.index.json.partial"));
  ShardedCheckpointWriter w(tmp.file("ck"), 10);
  w.declare({"a", DType::U8, {8}});
  w.declare({"b", DType::U8, {8}});
  w.write("a", buf.data(), 8);
  w.write("b", buf.data(), 8);
  EXPECT_TRUE(throws_error_with([&] { w.finish(); }, {"model.safetensors.index.json", enospc}));
}

}  // namespace
}  // namespace moex::io
