// io_reference_tool write OUT_DIR: writes OUT_DIR/{single,other_dtypes}/model.safetensors (every
// dtype between them) and a sharded checkpoint OUT_DIR/sharded/ with values from a formula that mlx_load_check.py
// recomputes independently, plus OUT_DIR/manifest.json listing file, name, dtype, shape, seed.
// io_reference_tool read FILE: prints {name: {dtype, shape, fnv1a64 of the bytes}} as JSON, so
// the script can check our reader on files written by mx.save_safetensors.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"

namespace moex::io {
namespace {

// splitmix64-style hash of (element, tensor seed); mirrored in mlx_load_check.py.
uint64_t mix(uint64_t i, uint64_t seed) {
  uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return x;
}

// Float values exactly representable in the dtype; elements 0..3 are inf, -inf, -0, NaN.
double float_value(uint64_t i, uint64_t seed, DType t) {
  if (i < 4) {
    const double special[4] = {INFINITY, -INFINITY, -0.0, NAN};
    return special[i];
  }
  const uint64_t x = mix(i, seed);
  if (t == DType::BF16) return double(int64_t((x >> 40) % 255) - 127) / 4.0;
  return double(int64_t((x >> 40) % 4001) - 2000) / 16.0;
}

std::vector<uint8_t> tensor_bytes(const TensorSpec& s, uint64_t seed) {
  const uint64_t bytes = tensor_spec_bytes(s);
  const size_t w = dtype_size(s.dtype);
  const uint64_t n = bytes / w;
  std::vector<uint8_t> out(bytes);
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t* p = out.data() + i * w;
    const uint64_t x = mix(i, seed);
    switch (s.dtype) {
      case DType::F64: {
        const double v = float_value(i, seed, s.dtype);
        std::memcpy(p, &v, 8);
        break;
      }
      case DType::F32:
      case DType::F16:
      case DType::BF16: store_from_f32(p, s.dtype, 0, float(float_value(i, seed, s.dtype))); break;
      case DType::BOOL: p[0] = uint8_t(x & 1); break;
      default: std::memcpy(p, &x, w); break;  // integer and F8 bit patterns: the low bytes
    }
  }
  return out;
}

struct Planned {
  TensorSpec spec;
  uint64_t seed;
};

void write_checkpoint(const std::string& dir, const std::vector<Planned>& plan, uint64_t shard_limit,
                      nlohmann::json& manifest) {
  ShardedCheckpointWriter w(dir, shard_limit);
  w.set_metadata("format", "mlx");
  w.set_metadata("writer", "moex io_reference_tool");
  for (const Planned& p : plan) w.declare(p.spec);
  for (const Planned& p : plan) {
    const auto bytes = tensor_bytes(p.spec, p.seed);
    // Chunks of 7 bytes, deliberately not aligned to elements.
    for (uint64_t off = 0; off < bytes.size(); off += 7)
      w.write_chunk(p.spec.name, bytes.data() + off, std::min<uint64_t>(7, bytes.size() - off));
    manifest["tensors"].push_back({{"dir", dir}, {"name", p.spec.name}, {"dtype", dtype_name(p.spec.dtype)},
                                   {"shape", p.spec.shape}, {"seed", p.seed}});
  }
  w.finish();
  for (const auto& f : w.shard_files()) manifest["files"][dir].push_back(f);
}

int run(const std::string& out) {
  nlohmann::json manifest = {{"tensors", nlohmann::json::array()}, {"files", nlohmann::json::object()}};
  // mx.load rejects a whole file holding F64 or F8_E5M2, so those two get a file of their own.
  std::vector<Planned> mlx_dtypes, other_dtypes;
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {2, 3, 7}, {257}, {}, {0, 4}, {1, 1, 1, 9}};
  uint64_t seed = 1;
  for (int d = 0; d <= int(DType::F8_E5M2); ++d) {
    const DType t = DType(d);
    auto& dst = (t == DType::F64 || t == DType::F8_E5M2) ? other_dtypes : mlx_dtypes;
    const auto& shape = shapes[d % shapes.size()];
    dst.push_back({{std::string("model.t") + std::to_string(d) + "." + dtype_name(t), t, shape}, seed++});
    dst.push_back({{std::string("model.big.") + dtype_name(t), t, {4, 33}}, seed++});
  }
  write_checkpoint(out + "/single", mlx_dtypes, kDefaultMaxShardBytes, manifest);
  write_checkpoint(out + "/other_dtypes", other_dtypes, kDefaultMaxShardBytes, manifest);

  // Quantized-module layout (U32 weights, BF16 scales/biases) over several 2 KB shards.
  std::vector<Planned> sharded;
  for (int l = 0; l < 4; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.switch_mlp.gate_proj.";
    sharded.push_back({{p + "weight", DType::U32, {4, 16, 8}}, seed++});
    sharded.push_back({{p + "scales", DType::BF16, {4, 16, 1}}, seed++});
    sharded.push_back({{p + "biases", DType::BF16, {4, 16, 1}}, seed++});
  }
  sharded.push_back({{"model.norm.weight", DType::F32, {64}}, seed++});
  write_checkpoint(out + "/sharded", sharded, 2048, manifest);

  std::ofstream m(out + "/manifest.json");
  m << manifest.dump(1) << "\n";
  return m ? 0 : 1;
}

int read(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  nlohmann::json out = nlohmann::json::object();
  for (const TensorInfo& t : f->tensors()) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
    for (uint64_t i = 0; i < t.nbytes; ++i) h = (h ^ t.data[i]) * 0x100000001b3ull;
    out[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"fnv1a64", h}};
  }
  out["__metadata__"] = f->metadata();
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace moex::io

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "write" && mode != "read") {
    std::fprintf(stderr, "usage: io_reference_tool write OUT_DIR | read FILE\n");
    return 2;
  }
  try {
    return mode == "write" ? moex::io::run(argv[2]) : moex::io::read(argv[2]);
  } catch (const moex::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
