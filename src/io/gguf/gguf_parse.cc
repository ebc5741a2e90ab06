// GGUF parsing: a bounds-checked cursor over the file's bytes, metadata values (nested arrays
// to a bounded depth), tensor infos, the alignment and the data section's layout.
#include "io/gguf/gguf_parse.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/error.h"

namespace moex::gguf {

std::vector<int64_t> TensorInfo::shape() const {
  std::vector<int64_t> s;
  for (int i = n_dims - 1; i >= 0; --i) s.push_back(ne[size_t(i)]);
  return s;
}

bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    unsigned cp = 0;
    if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
    else return false;  // a continuation byte first, an overlong lead (c0, c1) or > f4
    if (n - i < size_t(len)) return false;
    for (int k = 1; k < len; ++k) {
      if ((p[i + size_t(k)] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + size_t(k)] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return false;
    if (cp >= 0xd800 && cp <= 0xdfff) return false;
    i += size_t(len);
  }
  return true;
}

namespace {

// Fewest bytes a key/value pair and a tensor info can take: used to bound the counts
// against the bytes that remain before anything is reserved.
constexpr uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;      // key length, key, type, uint8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // name length, name, dims, type, offset
// Nested arrays (arrays of arrays) are allowed but no published file uses them (ggml's own
// reader refuses them): all of them together may hold this many elements.
constexpr uint64_t kMaxNestedElements = uint64_t{1} << 16;

// Names in messages: clipped to 200 bytes, control bytes and non-ASCII escaped as \xNN when
// the name is not valid UTF-8.
std::string printable(std::string_view s) {
  const bool utf8 = is_valid_utf8(s);
  std::string out;
  const size_t n = std::min<size_t>(s.size(), 200);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || (!utf8 && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (n < s.size()) out += str_cat("... (", s.size(), " bytes)");
  return out;
}

class Cursor {
 public:
  Cursor(const uint8_t* bytes, uint64_t size, std::string where)
      : p_(bytes), size_(size), where_(std::move(where)) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const std::string& where() const { return where_; }
  // What is being read, for messages: "key 'general.name'", "tensor 'blk.0.attn_q.weight'".
  void set_context(std::string c) { context_ = std::move(c); }

  template <typename... Args>
  [[noreturn]] void error(const Args&... args) const {
    fail(where_, context_.empty() ? "" : ": ", context_, ": ", args...);
  }
  void need(uint64_t n, const char* what) const {
    if (n > left())
      error(what, " at byte ", pos_, " needs ", n, " bytes but the file ends at byte ", size_,
            " (", left(), " bytes left); the file is truncated or a length is wrong");
  }
  const uint8_t* take(uint64_t n, const char* what) {
    need(n, what);
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  uint32_t u32(const char* what) {
    uint32_t v;
    std::memcpy(&v, take(4, what), 4);
    return v;
  }
  uint64_t u64(const char* what) {
    uint64_t v;
    std::memcpy(&v, take(8, what), 8);
    return v;
  }
  // A string: uint64 length then that many bytes, the length at most max_len.
  std::string_view string(const char* what, uint64_t max_len) {
    const uint64_t at = pos_;
    const uint64_t len = u64(what);
    if (len > max_len)
      error(what, " at byte ", at, " has length ", len, ", over the limit of ", max_len, " bytes");
    if (len > left())
      error(what, " at byte ", at, " has length ", len, " but only ", left(),
            " bytes remain in the file (", size_, " bytes)");
    return {reinterpret_cast<const char*>(take(len, what)), size_t(len)};
  }

 private:
  const uint8_t* p_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string where_;
  std::string context_;
};

ValueType read_type(Cursor& c, const char* what) {
  const uint64_t at = c.pos();
  const uint32_t id = c.u32(what);
  const auto t = value_type_from_id(id);
  if (!t) c.error(what, " at byte ", at, " is ", id, "; expected a GGUF value type id 0..12");
  return *t;
}

void check_bool(Cursor& c, uint8_t b, uint64_t at) {
  if (b > 1) c.error("bool at byte ", at, " is ", int(b), "; expected 0 or 1");
}

Value read_value(Cursor& c, ValueType t, int depth, uint64_t* nested);

void read_array(Cursor& c, Value& v, int depth, uint64_t* nested) {
  if (depth > kMaxArrayDepth)
    c.error("array at byte ", c.pos(), " is nested ", depth, " levels deep; the limit is ",
            kMaxArrayDepth);
  v.elem_type = read_type(c, "array element type");
  const uint64_t at = c.pos();
  v.count = c.u64("array length");
  const int size = value_type_size(v.elem_type);
  const uint64_t min_bytes = size > 0 ? uint64_t(size) : v.elem_type == ValueType::kString ? 8 : 12;
  if (v.count > c.left() / min_bytes)
    c.error("array length ", v.count, " at byte ", at, " (", value_type_name(v.elem_type),
            " elements of at least ", min_bytes, " bytes each) exceeds the ", c.left(),
            " bytes left in the file");
  if (size > 0) {
    v.elems = c.take(v.count * uint64_t(size), "array elements");
    if (v.elem_type == ValueType::kBool)
      for (uint64_t i = 0; i < v.count; ++i) check_bool(c, v.elems[i], c.pos() - v.count + i);
    return;
  }
  if (v.elem_type == ValueType::kString) {
    v.strings.reserve(size_t(v.count));
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(c.string("string element", kMaxStringBytes));
    return;
  }
  *nested += v.count;
  if (*nested > kMaxNestedElements)
    c.error("nested arrays hold more than ", kMaxNestedElements, " elements in all (at byte ", at,
            "); the limit keeps a small file from building a large tree");
  v.arrays.reserve(size_t(v.count));
  for (uint64_t i = 0; i < v.count; ++i)
    v.arrays.push_back(read_value(c, ValueType::kArray, depth + 1, nested));
}

Value read_value(Cursor& c, ValueType t, int depth, uint64_t* nested) {
  Value v;
  v.type = t;
  if (t == ValueType::kString) {
    v.str = c.string("string value", kMaxStringBytes);
  } else if (t == ValueType::kArray) {
    read_array(c, v, depth, nested);
  } else {
    const uint64_t at = c.pos();
    const int size = value_type_size(t);
    std::memcpy(&v.bits, c.take(uint64_t(size), "value"), size_t(size));
    if (t == ValueType::kBool) check_bool(c, uint8_t(v.bits), at);
  }
  return v;
}

// A key or tensor name: non-empty, within kMaxNameBytes, valid UTF-8.
std::string read_name(Cursor& c, const char* what) {
  const uint64_t at = c.pos();
  const std::string_view s = c.string(what, kMaxNameBytes);
  if (s.empty()) c.error(what, " at byte ", at, " is empty");
  if (!is_valid_utf8(s)) c.error(what, " '", printable(s), "' at byte ", at, " is not valid UTF-8");
  return std::string(s);
}

void read_header(Cursor& c, ParsedGguf& out, uint64_t* n_tensors, uint64_t* n_kv) {
  if (c.left() < 24)
    c.error("file is ", c.left(), " bytes; a GGUF header (magic, version, two counts) needs 24");
  const uint8_t* magic = c.take(4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0)
    c.error("does not start with the GGUF magic: first bytes are '",
            printable({reinterpret_cast<const char*>(magic), 4}), "'; expected 'GGUF'");
  out.version = c.u32("version");
  if (out.version == 1)
    c.error("GGUF version 1 (32-bit counts, before August 2023) is not supported; expected version 2 or 3");
  if (out.version != 2 && out.version != 3) {
    const bool swapped = (out.version & 0xffff) == 0;
    c.error("GGUF version ", out.version, " is not supported; expected 2 or 3",
            swapped ? " (the version looks byte-swapped: a big-endian file, which moex does not read)" : "");
  }
  *n_tensors = c.u64("tensor count");
  *n_kv = c.u64("metadata key/value count");
  if (*n_tensors > kMaxTensors)
    c.error("tensor count ", *n_tensors, " (byte 8) exceeds the limit of ", kMaxTensors);
  if (*n_kv > kMaxKeyValues)
    c.error("metadata key/value count ", *n_kv, " (byte 16) exceeds the limit of ", kMaxKeyValues);
  const uint64_t min_bytes = *n_tensors * kMinTensorInfoBytes + *n_kv * kMinKeyValueBytes;
  if (min_bytes > c.left())
    c.error(*n_tensors, " tensors and ", *n_kv, " metadata pairs need at least ", min_bytes,
            " bytes but the file has ", c.left(), " bytes after its 24-byte header");
}

void read_metadata(Cursor& c, uint64_t n_kv, ParsedGguf& out) {
  std::unordered_map<std::string_view, uint64_t> seen;  // key -> its byte offset
  out.metadata.reserve(size_t(n_kv));
  uint64_t nested = 0;
  for (uint64_t i = 0; i < n_kv; ++i) {
    c.set_context(str_cat("metadata pair #", i));
    KeyValue kv;
    kv.offset = c.pos();
    kv.key = read_name(c, "key");
    c.set_context(str_cat("key '", printable(kv.key), "'"));
    const ValueType t = read_type(c, "value type");
    kv.value = read_value(c, t, 1, &nested);
    out.metadata.push_back(std::move(kv));
    const auto [it, fresh] = seen.emplace(out.metadata.back().key, out.metadata.back().offset);
    if (!fresh)
      c.error("appears twice (at bytes ", it->second, " and ", out.metadata.back().offset,
              "); expected unique keys");
  }
  c.set_context("");
  for (const KeyValue& kv : out.metadata) {
    if (kv.key != "general.alignment") continue;
    c.set_context("key 'general.alignment'");
    if (kv.value.type != ValueType::kU32)
      c.error("is ", value_type_text(kv.value), " (at byte ", kv.offset, "); expected uint32");
    const uint64_t a = kv.value.bits;
    if (a == 0 || (a & (a - 1)) != 0 || a > kMaxAlignment)
      c.error("is ", a, "; expected a power of two from 1 to ", kMaxAlignment);
    out.alignment = a;
    c.set_context("");
  }
}

TensorInfo read_tensor_info(Cursor& c, uint64_t index, uint64_t alignment) {
  TensorInfo t;
  t.info_offset = c.pos();
  c.set_context(str_cat("tensor info #", index));
  t.name = read_name(c, "tensor name");
  c.set_context(str_cat("tensor '", printable(t.name), "'"));
  const uint64_t dims_at = c.pos();
  const uint32_t n_dims = c.u32("dimension count");
  if (n_dims > uint32_t(kMaxDims))
    c.error("dimension count ", n_dims, " at byte ", dims_at, "; expected at most ", kMaxDims);
  t.n_dims = int(n_dims);
  int64_t numel = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t at = c.pos();
    const uint64_t ne = c.u64("dimension");
    if (ne > uint64_t(INT64_MAX)) c.error("ne[", d, "] = ", ne, " at byte ", at, " exceeds 2^63 - 1");
    t.ne[d] = int64_t(ne);
    overflow |= __builtin_mul_overflow(numel, t.ne[d], &numel);
  }
  if (overflow)
    c.error("dimensions (ne ", t.ne[0], ", ", t.ne[1], ", ", t.ne[2], ", ", t.ne[3],
            ") overflow a 64-bit element count");
  const uint64_t type_at = c.pos();
  const uint32_t id = c.u32("ggml type");
  const auto info = ggml_type_info(id);
  if (!info)
    c.error("ggml type id ", id, " at byte ", type_at, " is not a type moex knows (",
            ggml_type_names(), ")");
  t.type = info->type;
  const auto nbytes = ggml_nbytes(t.type, uint64_t(t.ne[0]), uint64_t(numel));
  if (!nbytes) {
    if (t.ne[0] % info->block_elems != 0)
      c.error("ne[0] = ", t.ne[0], " is not a multiple of ", info->name, "'s block of ",
              info->block_elems, " elements");
    c.error(numel, " elements of ", info->name, " overflow a 64-bit byte count");
  }
  t.nbytes = *nbytes;
  const uint64_t off_at = c.pos();
  t.offset = c.u64("data offset");
  if (t.offset % alignment != 0)
    c.error("data offset ", t.offset, " (at byte ", off_at, ") is not a multiple of the alignment ",
            alignment);
  return t;
}

void check_data_section(const Cursor& c, ParsedGguf& out) {
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(out.tensors.size());
  for (const TensorInfo& t : out.tensors) {
    uint64_t end = 0;
    if (__builtin_add_overflow(t.offset, t.nbytes, &end) || end > out.data_size)
      fail(c.where(), ": tensor '", printable(t.name), "' (", ggml_type_name(t.type), ", ", t.nbytes,
           " bytes at data offset ", t.offset, ") runs past the end of the file: the data section has ",
           out.data_size, " bytes, from byte ", out.data_offset, " to the end at byte ",
           out.data_offset + out.data_size);
    if (t.nbytes > 0) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& a = *by_offset[i - 1];
    const TensorInfo& b = *by_offset[i];
    if (b.offset < a.offset + a.nbytes)
      fail(c.where(), ": tensor '", printable(b.name), "' bytes [", b.offset, ", ", b.offset + b.nbytes,
           ") of the data section overlap tensor '", printable(a.name), "' bytes [", a.offset, ", ",
           a.offset + a.nbytes, "); expected disjoint ranges");
  }
}

}  // namespace

ParsedGguf parse_gguf(const uint8_t* bytes, uint64_t size, const std::string& file) {
  Cursor c(bytes, size, str_cat("GGUF file '", file, "'"));
  ParsedGguf out;
  uint64_t n_tensors = 0, n_kv = 0;
  read_header(c, out, &n_tensors, &n_kv);
  read_metadata(c, n_kv, out);

  std::unordered_map<std::string_view, uint64_t> seen;  // name -> its info's byte offset
  out.tensors.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    out.tensors.push_back(read_tensor_info(c, i, out.alignment));
    const TensorInfo& t = out.tensors.back();
    const auto [it, fresh] = seen.emplace(t.name, t.info_offset);
    if (!fresh)
      c.error("name appears twice (tensor infos at bytes ", it->second, " and ", t.info_offset,
              "); expected unique tensor names");
  }
  c.set_context("");

  out.data_offset = (c.pos() + out.alignment - 1) / out.alignment * out.alignment;
  if (out.data_offset > size && !out.tensors.empty())
    c.error("the data section would start at byte ", out.data_offset, " (the tensor infos end at byte ",
            c.pos(), ", aligned to ", out.alignment, ") but the file ends at byte ", size);
  out.data_size = out.data_offset <= size ? size - out.data_offset : 0;
  check_data_section(c, out);
  return out;
}

}  // namespace moex::gguf
