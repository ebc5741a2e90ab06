// ArchKeys: typed, range-checked reads of a GGUF file's hyper-parameters.
#include "model/gguf/gguf_keys.h"

#include <cmath>

#include "core/error.h"
#include "io/gguf/gguf_value.h"

namespace moex::model::gguf_keys {

ArchKeys::ArchKeys(const gguf::GgufFile& f) : f_(f) {
  if (!f.find("general.architecture"))
    fail("GGUF file '", f.path(), "': key 'general.architecture' is missing; expected the "
         "model's architecture (e.g. qwen3moe)");
  arch_ = std::string(f.get_string("general.architecture"));
}

std::string ArchKeys::key(std::string_view suffix) const { return str_cat(arch_, ".", suffix); }

void ArchKeys::refuse_key(const std::string& full_key, const std::string& why) const {
  const gguf::Value* v = f_.find(full_key);
  fail("GGUF file '", f_.path(), "': key '", full_key, "'",
       v ? str_cat(" = ", gguf::value_to_string(*v)) : std::string(), ": ", why);
}

void ArchKeys::refuse(std::string_view suffix, const std::string& why) const {
  refuse_key(key(suffix), why);
}

std::optional<int64_t> ArchKeys::size_opt(std::string_view suffix, int64_t lo, int64_t hi) const {
  const std::string k = key(suffix);
  if (!f_.find(k)) return std::nullopt;
  const int64_t v = f_.get_int(k);  // a non-integer value is an Error naming the key
  if (v < lo || v > hi) refuse(suffix, str_cat("expected a value in [", lo, ", ", hi, "]"));
  return v;
}

int64_t ArchKeys::size(std::string_view suffix, int64_t lo, int64_t hi) const {
  const std::optional<int64_t> v = size_opt(suffix, lo, hi);
  if (!v)
    fail("GGUF file '", f_.path(), "': key '", key(suffix), "' is missing; the ", arch_,
         " architecture needs it");
  return *v;
}

int64_t ArchKeys::size_or(std::string_view suffix, int64_t def, int64_t lo, int64_t hi) const {
  return size_opt(suffix, lo, hi).value_or(def);
}

double ArchKeys::positive_or(std::string_view suffix, double def) const {
  const std::string k = key(suffix);
  if (!f_.find(k)) return def;
  const double v = f_.get_float(k);
  if (!std::isfinite(v) || !(v > 0)) refuse(suffix, "expected a finite positive number");
  return v;
}

double ArchKeys::positive(std::string_view suffix) const {
  if (!has(suffix))
    fail("GGUF file '", f_.path(), "': key '", key(suffix), "' is missing; the ", arch_,
         " architecture needs it");
  return positive_or(suffix, 0.0);
}

}  // namespace moex::model::gguf_keys
