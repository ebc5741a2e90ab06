// Reading a GGUF file's `<arch>.*` hyper-parameters with the checks a model needs: every
// value in range before anything is sized from it, every error naming the file and the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "io/gguf/gguf_file.h"

namespace moex::model::gguf_keys {

class ArchKeys {
 public:
  // Reads general.architecture; `arch()` is its value.
  explicit ArchKeys(const gguf::GgufFile& f);

  const std::string& arch() const { return arch_; }
  const gguf::GgufFile& file() const { return f_; }
  // "<arch>.<suffix>".
  std::string key(std::string_view suffix) const;

  // An integer key in [lo, hi]; required, or `def` when absent.
  int64_t size(std::string_view suffix, int64_t lo, int64_t hi) const;
  int64_t size_or(std::string_view suffix, int64_t def, int64_t lo, int64_t hi) const;
  std::optional<int64_t> size_opt(std::string_view suffix, int64_t lo, int64_t hi) const;
  // A float key, finite and positive; required or `def`.
  double positive(std::string_view suffix) const;
  double positive_or(std::string_view suffix, double def) const;
  bool has(std::string_view suffix) const { return f_.find(key(suffix)) != nullptr; }

  // moex::Error "GGUF file 'F': key 'K' ...: <why>".
  [[noreturn]] void refuse(std::string_view suffix, const std::string& why) const;
  [[noreturn]] void refuse_key(const std::string& full_key, const std::string& why) const;

 private:
  const gguf::GgufFile& f_;
  std::string arch_;
};

}  // namespace moex::model::gguf_keys
