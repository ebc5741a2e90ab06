// `moex inspect FILE.gguf`: header, metadata and tensor table of a GGUF model (io/gguf).
#include "tools/util_gguf_info.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "io/gguf/gguf_file.h"
#include "io/safetensors.h"

namespace moex::tools {

bool is_gguf_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // never opens a FIFO
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0) return true;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

int print_gguf_info(const std::string& path, bool summary) {
  const auto f = gguf::GgufFile::open(path);
  const gguf::ParsedGguf& first = f->parts()[0]->parsed;
  std::printf("gguf: %s (version %u, %zu part%s, %zu tensors, %zu metadata keys, alignment %llu)\n",
              path.c_str(), first.version, f->parts().size(), f->parts().size() == 1 ? "" : "s",
              f->tensors().size(), f->metadata().size(), (unsigned long long)first.alignment);
  const gguf::Value* arch = f->find("general.architecture");
  if (arch && arch->type == gguf::ValueType::kString)
    std::printf("architecture: %.*s\n", int(arch->str.size()), arch->str.data());
  else
    std::printf("architecture: (no general.architecture string)\n");
  std::printf("metadata:\n");
  for (const gguf::KeyValue& kv : f->metadata())
    std::printf("  %-44s %-16s %s\n", kv.key.c_str(), gguf::value_type_text(kv.value).c_str(),
                gguf::value_to_string(kv.value, 6).c_str());
  std::map<std::string, std::pair<size_t, uint64_t>> by_type;  // name -> tensors, bytes
  uint64_t total = 0;
  if (!summary) std::printf("tensors (shape row-major: [.., rows, row length]; ggml's ne is reversed):\n");
  for (const gguf::Tensor& t : f->tensors()) {
    auto& [n, bytes] = by_type[gguf::ggml_type_name(t.type)];
    ++n;
    bytes += t.nbytes;
    total += t.nbytes;
    if (summary) continue;
    std::printf("  %-56s %-7s %-22s %12llu bytes%s\n", t.name.c_str(), gguf::ggml_type_name(t.type),
                io::shape_to_string(t.shape()).c_str(), (unsigned long long)t.nbytes,
                f->parts().size() > 1 ? str_cat("  part ", t.part + 1).c_str() : "");
  }
  std::printf("bytes by type:\n");
  for (const auto& [name, v] : by_type)
    std::printf("  %-7s %6zu tensors %14llu bytes\n", name.c_str(), v.first, (unsigned long long)v.second);
  std::printf("  total   %6zu tensors %14llu bytes (%.2f GiB)\n", f->tensors().size(),
              (unsigned long long)total, double(total) / double(uint64_t{1} << 30));
  std::printf("note: loading a model from GGUF is not supported yet (docs/gguf.md); "
              "this is a listing only\n");
  return 0;
}

}  // namespace moex::tools
