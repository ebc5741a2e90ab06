// Validation of a safetensors JSON header: entry types, dtypes, shapes, byte ranges,
// overlaps and duplicate names, each with an error naming the file and tensor.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "io/json_config.h"
#include "io/safetensors.h"

namespace moex::io {

using nlohmann::json;

namespace {

// Names in messages are clipped so a hostile 1 MB name does not become a 1 MB message.
std::string clip(std::string_view s) {
  return s.size() <= 200 ? std::string(s) : str_cat(s.substr(0, 200), "...");
}

std::string all_dtype_names() {
  std::string s;
  for (int i = 0; i <= int(DType::F8_E5M2); ++i) s += (i ? ", " : "") + std::string(dtype_name(DType(i)));
  return s;
}

struct Entry {
  TensorInfo info;
  uint64_t begin = 0;
  uint64_t end = 0;
};

const json& entry_field(const json& v, const char* field, const std::string& what) {
  auto it = v.find(field);
  if (it == v.end()) fail(what, ": missing field '", field, "'; expected dtype, shape and data_offsets");
  return *it;
}

Entry parse_entry(const std::string& name, const json& v, uint64_t data_size, const std::string& where) {
  const std::string what = str_cat(where, ": tensor '", clip(name), "'");
  if (!v.is_object())
    fail(what, ": entry is ", json_kind(v), "; expected an object with dtype, shape and data_offsets");
  Entry e;
  e.info.name = name;

  const json& dt = entry_field(v, "dtype", what);
  if (!dt.is_string()) fail(what, ": field 'dtype' is ", json_kind(dt), "; expected a string");
  const auto dtype = dtype_from_name(dt.get_ref<const std::string&>());
  if (!dtype)
    fail(what, ": unknown dtype '", clip(dt.get_ref<const std::string&>()), "'; expected one of ",
         all_dtype_names());
  e.info.dtype = *dtype;

  const json& shape = entry_field(v, "shape", what);
  if (!shape.is_array()) fail(what, ": field 'shape' is ", json_kind(shape), "; expected an array of integers");
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = json_to_int(shape[i], str_cat(what, ": shape[", i, "]"));
    if (d < 0) fail(what, ": shape[", i, "] = ", d, " is negative; expected a dimension >= 0");
    e.info.shape.push_back(d);
    overflow |= __builtin_mul_overflow(numel, uint64_t(d), &numel);
  }
  if (overflow || numel > uint64_t(std::numeric_limits<int64_t>::max()) ||
      __builtin_mul_overflow(numel, uint64_t(dtype_size(e.info.dtype)), &e.info.nbytes))
    fail(what, ": shape ", shape_to_string(e.info.shape), " overflows 64-bit element/byte counts; expected a size",
         " that fits in the file");

  const json& off = entry_field(v, "data_offsets", what);
  if (!off.is_array() || off.size() != 2)
    fail(what, ": field 'data_offsets' is ", off.is_array() ? str_cat("an array of ", off.size()) : json_kind(off),
         "; expected [begin, end]");
  for (int i = 0; i < 2; ++i) {
    if (!off[i].is_number_unsigned() && !(off[i].is_number_integer() && off[i].get<int64_t>() >= 0))
      fail(what, ": data_offsets[", i, "] is ", off[i].is_number_integer() ? "negative" : json_kind(off[i]),
           " (", clip(off[i].dump()), "); expected a byte offset >= 0");
  }
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.begin > e.end)
    fail(what, ": data_offsets [", e.begin, ", ", e.end, "] has begin > end; expected begin <= end");
  if (e.end - e.begin != e.info.nbytes)
    fail(what, ": shape ", shape_to_string(e.info.shape), " x ", dtype_name(e.info.dtype), " (", dtype_size(e.info.dtype),
         " bytes) needs ", e.info.nbytes, " bytes but data_offsets [", e.begin, ", ", e.end, "] span ",
         e.end - e.begin);
  if (e.end > data_size)
    fail(what, ": data_offsets [", e.begin, ", ", e.end, "] lie outside the data area of ", data_size,
         " bytes; expected end <= ", data_size);
  return e;
}

}  // namespace

ParsedSafetensorsHeader parse_safetensors_header(std::string_view header, uint64_t data_size,
                                                 const std::string& file) {
  const std::string where = str_cat("safetensors file '", file, "'");
  // Duplicate tensor names are duplicate JSON keys: parse_json_text rejects them.
  const json h = parse_json_text(header, where + " header");
  if (!h.is_object()) fail(where, ": header is ", json_kind(h), "; expected a JSON object");

  ParsedSafetensorsHeader out;
  std::vector<Entry> entries;
  entries.reserve(h.size());
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") {
      // null is no metadata, as the safetensors library reads it (mx.save_safetensors writes
      // it when given none).
      if (it->is_null()) continue;
      if (!it->is_object())
        fail(where, ": __metadata__ is ", json_kind(*it), "; expected an object of string values");
      for (auto m = it->begin(); m != it->end(); ++m)
        if (!m->is_string())
          fail(where, ": __metadata__ field '", clip(m.key()), "' is ", json_kind(*m), "; expected a string");
      out.metadata = *it;
      continue;
    }
    entries.push_back(parse_entry(it.key(), *it, data_size, where));
  }

  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The format requires the tensors to index the data area entirely, without holes. Checking
  // it catches a header length a few bytes short: the JSON still parses (the lost bytes were
  // its padding) but every tensor would be read shifted.
  const Entry* prev = nullptr;  // the non-empty range reaching furthest so far
  for (const Entry& e : entries) {
    if (e.begin == e.end) continue;
    if (prev && e.begin < prev->end)
      fail(where, ": tensor '", clip(e.info.name), "' bytes [", e.begin, ", ", e.end, ") overlap tensor '",
           clip(prev->info.name), "' bytes [", prev->begin, ", ", prev->end, "); expected disjoint ranges");
    const uint64_t covered = prev ? prev->end : 0;
    if (e.begin > covered)
      fail(where, ": data bytes [", covered, ", ", e.begin, ") before tensor '", clip(e.info.name),
           "' belong to no tensor; expected the tensors to cover the data area without holes");
    if (!prev || e.end > prev->end) prev = &e;
  }
  const uint64_t covered = prev ? prev->end : 0;
  if (covered != data_size)
    fail(where, ": the tensors cover ", covered, " of the ", data_size, " data bytes after the header",
         "; expected them to cover it exactly (a wrong header length, or trailing bytes)");

  out.tensors.reserve(entries.size());
  out.offsets.reserve(entries.size());
  for (Entry& e : entries) {
    e.info.file = file;
    out.offsets.push_back(e.begin);
    out.tensors.push_back(std::move(e.info));
  }
  return out;
}

}  // namespace moex::io
