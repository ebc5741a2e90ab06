// Reference-test helper for gguf_reference_test.py:
//   gguf_ref_tool dequant TYPE_ID N IN OUT   N elements of ggml type TYPE_ID from the raw
//                                            bytes in IN, written to OUT as little-endian f32
//   gguf_ref_tool dump FILE                  a GGUF model (all split parts) as JSON on stdout:
//                                            every key with its type and value, every tensor
//                                            with type, ne, shape, part and bytes (hex)
// Strings are given as hex (a GGUF string need not be UTF-8), floats as their bit patterns.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf/ggml_dequantize.h"
#include "io/gguf/gguf_file.h"

namespace {

using moex::gguf::Value;
using moex::gguf::ValueType;
using nlohmann::json;

std::string hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<const unsigned char*>(p)[i];
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

json scalar_json(const Value& v) {
  switch (v.type) {
    case ValueType::kF32:
    case ValueType::kF64:
    case ValueType::kU64: return v.bits;  // floats as bits, exactly
    case ValueType::kBool: return v.bits != 0;
    default: return *v.as_int();
  }
}

json value_json(const Value& v) {
  if (v.type == ValueType::kString) return hex(v.str.data(), v.str.size());
  if (v.type != ValueType::kArray) return scalar_json(v);
  json a = json::array();
  for (uint64_t i = 0; i < v.count; ++i) {
    if (v.elem_type == ValueType::kString)
      a.push_back(hex(v.strings[i].data(), v.strings[i].size()));
    else if (v.elem_type == ValueType::kArray)
      a.push_back(value_json(v.arrays[i]));
    else
      a.push_back(scalar_json(v.scalar_element(i)));
  }
  return a;
}

int dump(const std::string& path) {
  const auto f = moex::gguf::GgufFile::open(path);
  json out;
  out["parts"] = json::array();
  for (const auto& p : f->parts())
    out["parts"].push_back({{"path", p->path}, {"version", p->parsed.version},
                            {"alignment", p->parsed.alignment}, {"data_offset", p->parsed.data_offset},
                            {"tensors", p->parsed.tensors.size()}});
  out["metadata"] = json::array();
  for (const auto& kv : f->metadata())
    out["metadata"].push_back({{"key", kv.key}, {"type", moex::gguf::value_type_text(kv.value)},
                               {"value", value_json(kv.value)}});
  out["tensors"] = json::array();
  for (const auto& t : f->tensors())
    out["tensors"].push_back({{"name", t.name}, {"type", moex::gguf::ggml_type_name(t.type)},
                              {"ne", std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                              {"shape", t.shape()}, {"part", t.part}, {"offset", t.offset},
                              {"nbytes", t.nbytes}, {"hex", hex(t.data, t.nbytes)}});
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int dequant(uint32_t id, int64_t n, const std::string& in, const std::string& out) {
  const auto info = moex::gguf::ggml_type_info(id);
  if (!info) moex::fail("unknown ggml type id ", id);
  std::ifstream is(in, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
  std::vector<float> y(static_cast<size_t>(n));
  moex::gguf::dequantize(info->type, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                         y.data(), n);
  std::ofstream os(out, std::ios::binary | std::ios::trunc);
  os.write(reinterpret_cast<const char*>(y.data()), std::streamsize(y.size() * 4));
  return os ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() == 2 && a[0] == "dump") return dump(a[1]);
    if (a.size() == 5 && a[0] == "dequant") return dequant(uint32_t(std::stoul(a[1])), std::stoll(a[2]), a[3], a[4]);
    std::fprintf(stderr, "usage: gguf_ref_tool dequant TYPE_ID N IN OUT | dump FILE\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_ref_tool: error: %s\n", e.what());
    return 2;
  }
}
