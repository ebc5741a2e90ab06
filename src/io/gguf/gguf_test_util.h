// Test helpers for src/io/gguf: GGUF bytes built piece by piece (so a test can write any
// defect), and a whole valid file from key/value pairs and tensors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::gguf::testing {

// Little-endian pieces of a GGUF file.
class Bytes {
 public:
  Bytes& u8(uint8_t v) { return put(v, 1); }
  Bytes& u16(uint16_t v) { return put(v, 2); }
  Bytes& u32(uint32_t v) { return put(v, 4); }
  Bytes& u64(uint64_t v) { return put(v, 8); }
  Bytes& f32(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u32(u);
  }
  Bytes& str(std::string_view s) {  // uint64 length + bytes
    u64(s.size());
    out.append(s);
    return *this;
  }
  Bytes& raw(std::string_view s) {
    out.append(s);
    return *this;
  }
  Bytes& pad_to(uint64_t alignment) {
    while (out.size() % alignment) out.push_back('\0');
    return *this;
  }
  // "GGUF", version, tensor count, key/value count.
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  // A key/value pair with a uint32 value (value type 4), string value (8).
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  Bytes& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  // A tensor info: name, dims (ne[0] first), ggml type id, data offset.
  Bytes& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }

  std::string out;

 private:
  Bytes& put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
    return *this;
  }
};

}  // namespace moex::gguf::testing
