// Checkpoint directories: which files are chosen, index validation, duplicates across
// files, and require() with dtype/shape checks whose errors state expected vs found.
#include "io/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "io/safetensors_writer.h"
#include "io/test_util.h"

namespace moex::io {
namespace {

using testing::TempDir;
using testing::throws_error_with;
using testing::write_file;

// Writes a file holding U8 tensors of 4 bytes each, filled with `fill`.
void write_u8_file(const std::string& path, const std::vector<std::string>& names, uint8_t fill) {
  SafetensorsWriter w(path);
  for (const auto& n : names) w.declare({n, DType::U8, {4}});
  const uint8_t buf[4] = {fill, fill, fill, fill};
  for (const auto& n : names) w.write(n, buf, 4);
  w.finish();
}

void write_index(const std::string& dir, const std::string& weight_map_json) {
  write_file(dir + "/model.safetensors.index.json",
             R"({"metadata":{"total_size":0},"weight_map":)" + weight_map_json + "}");
}

TEST(Checkpoint, SingleFileRequireAndNames) {
  TempDir tmp;
  {
    SafetensorsWriter w(tmp.file("model.safetensors"));
    w.declare({"z.weight", DType::U32, {4, 2}});
    w.declare({"a.scales", DType::BF16, {4, 1}});
    std::vector<uint8_t> buf(32, 9);
    w.write("z.weight", buf.data(), 32);
    w.write("a.scales", buf.data(), 8);
    w.finish();
  }
  write_u8_file(tmp.file("other.safetensors"), {"ignored"}, 1);  // model.safetensors wins
  const Checkpoint ck = Checkpoint::open(tmp.path());
  EXPECT_EQ(ck.dir(), tmp.path());
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"a.scales", "z.weight"}));
  EXPECT_EQ(ck.total_bytes(), 40u);
  EXPECT_EQ(ck.find("ignored"), nullptr);
  EXPECT_EQ(ck.require("z.weight", DType::U32, {4, 2}).nbytes, 32u);
  EXPECT_EQ(ck.require("z.weight", {-1, 2}).shape[0], 4);
  EXPECT_EQ(ck.require("a.scales", DType::BF16).numel(), 4);

  EXPECT_TRUE(throws_error_with([&] { ck.require("missing.weight"); },
                                {"'missing.weight'", "missing", tmp.path()}));
  EXPECT_TRUE(throws_error_with([&] { ck.require("z.weight", DType::F16); },
                                {"'z.weight'", "has dtype U32", "expected F16", tmp.path()}));
  EXPECT_TRUE(throws_error_with([&] { ck.require("z.weight", {4, 3}); },
                                {"'z.weight'", "has shape [4, 2]", "expected [4, 3]"}));
  EXPECT_TRUE(throws_error_with([&] { ck.require("z.weight", {4}); }, {"has shape [4, 2]", "expected [4]"}));
  EXPECT_TRUE(throws_error_with([&] { ck.require("z.weight", DType::U32, {-1, 1}); }, {"expected [-1, 1]"}));
  EXPECT_TRUE(throws_error_with([&] { ck.require("z.weight", DType::U8, {4, 2}); }, {"expected U8"}));
}

TEST(Checkpoint, GlobOfSafetensorsFiles) {
  TempDir tmp;
  write_u8_file(tmp.file("b.safetensors"), {"b1", "b2"}, 2);
  write_u8_file(tmp.file("a.safetensors"), {"a1"}, 1);
  write_file(tmp.file("notes.txt"), "not a tensor file");
  const Checkpoint ck = Checkpoint::open(tmp.path());
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"a1", "b1", "b2"}));
  EXPECT_EQ(ck.files().size(), 2u);
  EXPECT_EQ(ck.require("b2").data[0], 2);
  EXPECT_EQ(ck.require("a1").file, tmp.file("a.safetensors"));

  write_u8_file(tmp.file("c.safetensors"), {"b2"}, 3);
  EXPECT_TRUE(throws_error_with([&] { Checkpoint::open(tmp.path()); },
                                {"'b2'", "two files", "b.safetensors", "c.safetensors"}));
}

TEST(Checkpoint, EmptyOrMissingDirectory) {
  TempDir tmp;
  EXPECT_TRUE(throws_error_with([&] { Checkpoint::open(tmp.path()); }, {tmp.path(), "no model.safetensors"}));
  EXPECT_TRUE(throws_error_with([&] { Checkpoint::open(tmp.file("nope")); }, {"nope", "not a directory"}));
  write_file(tmp.file("model.safetensors"), "xyz");
  EXPECT_TRUE(throws_error_with([&] { Checkpoint::open(tmp.path()); }, {"model.safetensors", "at least 8"}));
}

TEST(Checkpoint, IndexChoosesListedShards) {
  TempDir tmp;
  write_u8_file(tmp.file("s1.safetensors"), {"x", "y"}, 1);
  write_u8_file(tmp.file("s2.safetensors"), {"z"}, 2);
  write_u8_file(tmp.file("model.safetensors"), {"stale"}, 7);  // the index takes precedence
  write_index(tmp.path(), R"({"x":"s1.safetensors","y":"s1.safetensors","z":"s2.safetensors"})");
  const Checkpoint ck = Checkpoint::open(tmp.path());
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(ck.require("z").data[3], 2);
  EXPECT_EQ(ck.total_bytes(), 12u);
}

struct IndexCase {
  const char* id;
  std::string index;  // whole file
  std::vector<std::string> expect;
};

TEST(Checkpoint, HostileIndexRejected) {
  TempDir tmp;
  write_u8_file(tmp.file("s1.safetensors"), {"x", "y"}, 1);
  write_u8_file(tmp.file("s2.safetensors"), {"y", "z"}, 2);
  auto wm = [](const std::string& m) { return R"({"metadata":{},"weight_map":)" + m + "}"; };
  const std::vector<IndexCase> cases = {
      {"missing_shard", wm(R"({"x":"s1.safetensors","q":"gone.safetensors"})"), {"'gone.safetensors'", "'q'", "does not exist"}},
      {"tensor_not_in_file", wm(R"({"x":"s1.safetensors","z":"s1.safetensors"})"), {"'z'", "'s1.safetensors'", "no such tensor"}},
      {"tensor_in_two_shards", wm(R"({"x":"s1.safetensors","z":"s2.safetensors"})"), {"'y'", "two files"}},
      {"value_not_string", wm(R"({"x":1})"), {"weight_map['x']", "an integer", "shard file name"}},
      {"path_escape", wm(R"({"x":"../s1.safetensors"})"), {"'../s1.safetensors'", "plain file name"}},
      {"absolute_path", wm(R"({"x":"/etc/passwd"})"), {"plain file name"}},
      {"empty_name", wm(R"({"x":""})"), {"plain file name"}},
      {"weight_map_missing", R"({"metadata":{}})", {"'weight_map'", "missing"}},
      {"weight_map_array", wm("[]"), {"'weight_map'", "an array", "expected an object"}},
      {"duplicate_key", wm(R"({"x":"s1.safetensors","x":"s2.safetensors"})"), {"duplicate JSON key 'x'"}},
      {"invalid_json", "{\"weight_map\": {", {"invalid JSON"}},
      {"not_object", "[]", {"top level is an array"}},
  };
  for (const IndexCase& c : cases) {
    write_file(tmp.file("model.safetensors.index.json"), c.index);
    std::vector<std::string> parts = c.expect;
    parts.push_back("model.safetensors.index.json");
    try {
      Checkpoint::open(tmp.path());
      ADD_FAILURE() << c.id << ": accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << c.id << " lacks '" << p << "': " << msg;
    }
  }
}

TEST(Checkpoint, MovedCheckpointKeepsValidViews) {
  TempDir tmp;
  write_u8_file(tmp.file("model.safetensors"), {"w"}, 5);
  Checkpoint a = Checkpoint::open(tmp.path());
  const TensorInfo* before = a.find("w");
  Checkpoint b = std::move(a);
  EXPECT_EQ(b.find("w"), before);
  EXPECT_EQ(b.require("w").data[0], 5);
}

// A renamed tensor answers to its new name only, with the same bytes; renaming a missing
// tensor, or onto a name the checkpoint already holds, is an error naming both.
TEST(Checkpoint, RenameKeepsTheBytesUnderTheNewName) {
  TempDir tmp;
  write_u8_file(tmp.file("model.safetensors"), {"mlp.gate.weight", "other"}, 7);
  Checkpoint ck = Checkpoint::open(tmp.path());
  const uint8_t* data = ck.find("mlp.gate.weight")->data;
  ck.rename("mlp.gate.weight", "mlp.gate.gate_proj.weight");
  EXPECT_EQ(ck.find("mlp.gate.weight"), nullptr);
  const TensorInfo& t = ck.require("mlp.gate.gate_proj.weight", DType::U8, {4});
  EXPECT_EQ(t.data, data);
  EXPECT_EQ(t.name, "mlp.gate.gate_proj.weight");
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"mlp.gate.gate_proj.weight", "other"}));
  EXPECT_TRUE(throws_error_with([&] { ck.rename("absent", "x"); }, {"'absent'", "no such tensor"}));
  EXPECT_TRUE(throws_error_with([&] { ck.rename("other", "mlp.gate.gate_proj.weight"); },
                                {"'other'", "'mlp.gate.gate_proj.weight'", "both"}));
  Checkpoint moved = std::move(ck);
  EXPECT_EQ(moved.require("mlp.gate.gate_proj.weight").data[0], 7);
}

}  // namespace
}  // namespace moex::io
