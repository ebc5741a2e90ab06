// Fuzz target: model.safetensors.index.json through Checkpoint::open, in a scratch directory
// that also holds two small shards (kShards) for the index to point at, or not.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/checkpoint.h"

namespace {

// Two shards of F32 tensors, the names the starting indexes use; headers padded to 8 bytes.
struct Shard {
  const char* file;
  const char* header;
  size_t data_bytes;
};
constexpr Shard kShards[] = {
    {"model-00001-of-00002.safetensors",
     R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[4,2],"data_offsets":[0,32]},)"
     R"("model.norm.weight":{"dtype":"F32","shape":[2],"data_offsets":[32,40]}})",
     40},
    {"model-00002-of-00002.safetensors",
     R"({"__metadata__":{"format":"mlx"},)"
     R"("lm_head.weight":{"dtype":"F32","shape":[4,2],"data_offsets":[0,32]}})",
     32},
};

std::string shard_bytes(const Shard& s) {
  std::string header = s.header;
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(s.data_bytes, '\1');
}

const std::string& checkpoint_dir() {
  static const std::string dir = [] {
    const std::string& d = moex::fuzz::scratch_dir();
    for (const Shard& s : kShards) moex::fuzz::write_file(d + "/" + s.file, shard_bytes(s));
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = checkpoint_dir();
  moex::fuzz::write_file(dir + "/model.safetensors.index.json",
                         std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const moex::io::Checkpoint ck = moex::io::Checkpoint::open(dir);
    uint64_t total = 0;
    for (const std::string& n : ck.names()) {
      const moex::io::TensorInfo* t = ck.find(n);
      if (!t || t->name != n)
        moex::fuzz::invariant_failed("checkpoint_index", "names() and find() disagree on " + n);
      total += t->nbytes;
    }
    if (total != ck.total_bytes())
      moex::fuzz::invariant_failed("checkpoint_index",
                                   "total_bytes() is not the sum of the tensors");
  } catch (const moex::Error&) {
  }
  return 0;
}
