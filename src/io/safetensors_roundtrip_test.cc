// Writer -> reader round trips: every dtype, chunked writes, empty and scalar tensors,
// metadata, and sharded checkpoints with a tiny shard limit read back through Checkpoint.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"
#include "core/huge_pages.h"
#include "io/checkpoint.h"
#include "io/json_config.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "io/test_util.h"

namespace moex::io {
namespace {

using testing::TempDir;

constexpr DType kAllDTypes[] = {DType::F64, DType::F32,  DType::F16, DType::BF16, DType::I64,
                                DType::I32, DType::I16,  DType::I8,  DType::U64,  DType::U32,
                                DType::U16, DType::U8,   DType::BOOL, DType::F8_E4M3, DType::F8_E5M2};

std::vector<uint8_t> random_bytes(uint64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

TEST(SafetensorsRoundTrip, EveryDTypeBytesShapesAndMetadata) {
  TempDir tmp;
  const std::string path = tmp.file("all.safetensors");
  std::vector<TensorSpec> specs;
  std::vector<std::vector<uint8_t>> payloads;
  int k = 0;
  for (DType t : kAllDTypes) {
    // Odd shapes so consecutive tensors start at unaligned offsets.
    TensorSpec s{std::string("t.") + dtype_name(t), t, {3, k + 1, 5}};
    payloads.push_back(random_bytes(tensor_spec_bytes(s), 100 + k));
    specs.push_back(s);
    ++k;
  }
  {
    SafetensorsWriter w(path);
    w.set_metadata("format", "mlx");
    w.set_metadata("note", "round trip");
    for (const auto& s : specs) w.declare(s);
    for (size_t i = 0; i < specs.size(); ++i) w.write(specs[i].name, payloads[i].data(), payloads[i].size());
    w.finish();
  }
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f->tensors().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo* t = f->find(specs[i].name);
    ASSERT_NE(t, nullptr) << specs[i].name;
    EXPECT_EQ(t->dtype, specs[i].dtype);
    EXPECT_EQ(t->shape, specs[i].shape);
    EXPECT_EQ(t->numel(), 3 * int64_t(i + 1) * 5);
    EXPECT_EQ(t->file, path);
    ASSERT_EQ(t->nbytes, payloads[i].size());
    EXPECT_EQ(std::memcmp(t->data, payloads[i].data(), t->nbytes), 0) << specs[i].name;
  }
  // File order is declaration order (offsets ascend as declared).
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(f->tensors()[i].name, specs[i].name);
  EXPECT_EQ(f->metadata().at("format"), "mlx");
  EXPECT_EQ(f->metadata().at("note"), "round trip");
  EXPECT_EQ(f->find("absent"), nullptr);
  // Header is padded so the data area starts 8-byte aligned.
  uint64_t header_len = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&header_len), 8);
  EXPECT_EQ(header_len % 8, 0u);
}

// --weights copy: the file read into anonymous memory gives every tensor the bytes the
// mapping gives, 2 MB aligned, and says how it holds them; the setting is process-wide.
TEST(SafetensorsRoundTrip, CopiedWeightsEqualMappedOnes) {
  TempDir tmp;
  const std::string path = tmp.file("copy.safetensors");
  std::vector<TensorSpec> specs;
  std::vector<std::vector<uint8_t>> payloads;
  for (int k = 0; k < 5; ++k) {
    // Sizes around a 2 MB page, so the copy's rounding and the read steps are crossed.
    TensorSpec s{"t" + std::to_string(k), DType::U8, {int64_t(kHugePageBytes / 3) * (k + 1) + 7}};
    payloads.push_back(random_bytes(tensor_spec_bytes(s), 300 + uint32_t(k)));
    specs.push_back(s);
  }
  {
    SafetensorsWriter w(path);
    for (const auto& s : specs) w.declare(s);
    for (size_t i = 0; i < specs.size(); ++i)
      w.write(specs[i].name, payloads[i].data(), payloads[i].size());
    w.finish();
  }
  const WeightResidency saved = weight_residency();
  set_weight_residency(WeightResidency::kMap);
  auto mapped = SafetensorsFile::open(path);
  set_weight_residency(WeightResidency::kCopy);
  auto copied = SafetensorsFile::open(path);
  set_weight_residency(saved);
  EXPECT_EQ(mapped->residency(), WeightResidency::kMap);
  EXPECT_EQ(copied->residency(), WeightResidency::kCopy);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copied->mapping()) % kHugePageBytes, 0u);
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo* a = mapped->find(specs[i].name);
    const TensorInfo* b = copied->find(specs[i].name);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->nbytes, b->nbytes);
    EXPECT_EQ(0, std::memcmp(b->data, payloads[i].data(), payloads[i].size())) << specs[i].name;
    EXPECT_EQ(a->data - mapped->mapping(), b->data - copied->mapping());
  }
  for (const char* bad : {"", "Copy", "mmap", "copy "}) {
    try {
      parse_weight_residency(bad, "--weights");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--weights"), std::string::npos);
    }
  }
}

TEST(SafetensorsRoundTrip, ChunkedEmptyAndScalarTensors) {
  TempDir tmp;
  const std::string path = tmp.file("chunks.safetensors");
  const TensorSpec big{"big", DType::F32, {1000, 7}};
  const auto payload = random_bytes(tensor_spec_bytes(big), 7);
  {
    SafetensorsWriter w(path);
    w.declare({"empty0", DType::BF16, {0, 4}});
    w.declare(big);
    w.declare({"empty1", DType::U32, {4, 0}});
    w.declare({"scalar", DType::I64, {}});
    const int64_t scalar = -123456789012345;
    // Uneven chunk sizes, including a zero-length chunk.
    uint64_t off = 0;
    for (uint64_t step : {1ull, 0ull, 4095ull, 10000ull}) {
      w.write_chunk("big", payload.data() + off, step);
      off += step;
    }
    w.write_chunk("big", payload.data() + off, payload.size() - off);
    w.write("empty1", nullptr, 0);  // accepted, though not required
    w.write("scalar", &scalar, 8);
    w.finish();
  }
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(std::memcmp(f->find("big")->data, payload.data(), payload.size()), 0);
  EXPECT_EQ(f->find("empty0")->nbytes, 0u);
  EXPECT_EQ(f->find("empty0")->numel(), 0);
  EXPECT_EQ(f->find("empty1")->shape, (std::vector<int64_t>{4, 0}));
  const TensorInfo* s = f->find("scalar");
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  int64_t v = 0;
  std::memcpy(&v, s->data, 8);
  EXPECT_EQ(v, -123456789012345);
  EXPECT_TRUE(f->metadata().is_object() && f->metadata().empty());
}

// Declares n tensors with sizes cycling through `sizes` (bytes, U8 1-D) and writes them.
struct ShardCase {
  std::vector<TensorSpec> specs;
  std::vector<std::vector<uint8_t>> payloads;
};

ShardCase write_sharded(const std::string& dir, const std::vector<int64_t>& sizes, uint64_t limit) {
  ShardCase c;
  ShardedCheckpointWriter w(dir, limit);
  w.set_metadata("format", "mlx");
  for (size_t i = 0; i < sizes.size(); ++i) {
    // Alternate dtypes so byte counts and element counts differ.
    const DType t = i % 2 ? DType::BF16 : DType::U8;
    const int64_t n = sizes[i] / int64_t(dtype_size(t));
    c.specs.push_back({"layer." + std::to_string(i) + ".w", t, {n}});
    c.payloads.push_back(random_bytes(tensor_spec_bytes(c.specs.back()), uint32_t(i)));
    w.declare(c.specs.back());
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    // Half the tensors in two chunks.
    const auto& p = c.payloads[i];
    if (i % 2 && p.size() > 2) {
      w.write_chunk(c.specs[i].name, p.data(), 2);
      w.write_chunk(c.specs[i].name, p.data() + 2, p.size() - 2);
    } else {
      w.write(c.specs[i].name, p.data(), p.size());
    }
  }
  w.finish();
  return c;
}

TEST(ShardedWriter, TinyLimitSplitsInOrderAndReadsBack) {
  TempDir tmp;
  const std::string dir = tmp.file("ck");
  // Limit 100: [40, 40] | [60, 0] | [250 (over the limit, alone)] | [20, 80] | [10]
  const std::vector<int64_t> sizes = {40, 40, 60, 0, 250, 20, 80, 10};
  const ShardCase c = write_sharded(dir, sizes, 100);
  namespace fs = std::filesystem;
  for (const char* f : {"model-00001-of-00005.safetensors", "model-00002-of-00005.safetensors",
                        "model-00003-of-00005.safetensors", "model-00004-of-00005.safetensors",
                        "model-00005-of-00005.safetensors", "model.safetensors.index.json"})
    EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "model.safetensors"));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".partial"), std::string::npos) << e.path();

  const auto index = read_json_file(dir + "/model.safetensors.index.json");
  EXPECT_EQ(index["metadata"]["total_size"], 500);
  EXPECT_EQ(index["weight_map"]["layer.4.w"], "model-00003-of-00005.safetensors");
  EXPECT_EQ(index["weight_map"]["layer.3.w"], "model-00002-of-00005.safetensors");
  EXPECT_EQ(index["weight_map"]["layer.7.w"], "model-00005-of-00005.safetensors");
  EXPECT_EQ(index["weight_map"].size(), sizes.size());

  const Checkpoint ck = Checkpoint::open(dir);
  EXPECT_EQ(ck.files().size(), 5u);
  EXPECT_EQ(ck.total_bytes(), 500u);
  for (size_t i = 0; i < c.specs.size(); ++i) {
    const TensorInfo& t = ck.require(c.specs[i].name, c.specs[i].dtype, c.specs[i].shape);
    ASSERT_EQ(t.nbytes, c.payloads[i].size());
    if (t.nbytes) {
      EXPECT_EQ(std::memcmp(t.data, c.payloads[i].data(), t.nbytes), 0) << t.name;
    }
    EXPECT_EQ(t.file, dir + "/" + index["weight_map"][t.name].get<std::string>());
  }
  for (const auto& f : ck.files()) EXPECT_EQ(f->metadata().at("format"), "mlx");
}

TEST(ShardedWriter, SingleShardIsModelSafetensorsAndRemovesStaleIndex) {
  TempDir tmp;
  const std::string dir = tmp.file("ck");
  write_sharded(dir, {30, 30, 30}, 20);  // three shards + index
  ASSERT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  const ShardCase c = write_sharded(dir, {30, 30, 30}, kDefaultMaxShardBytes);
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  const Checkpoint ck = Checkpoint::open(dir);
  EXPECT_EQ(ck.files().size(), 1u);
  EXPECT_EQ(std::memcmp(ck.require("layer.2.w").data, c.payloads[2].data(), 30), 0);
}

TEST(ShardedWriter, NoTensorsGivesAnEmptyValidFile) {
  TempDir tmp;
  ShardedCheckpointWriter w(tmp.path());
  w.finish();
  const Checkpoint ck = Checkpoint::open(tmp.path());
  EXPECT_EQ(ck.size(), 0u);
  EXPECT_EQ(ck.total_bytes(), 0u);
}

}  // namespace
}  // namespace moex::io
