// moex::Error: the one exception type for bad input (files, configs, flags, environment).
// Loading and parsing code throws it with a message naming the file/tensor/field and what
// was expected; tools catch it at the top and exit with code 2. Kernels never throw.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace moex {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// str_cat("a", 1, 'b') -> "a1b"
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(str_cat(args...));
}

}  // namespace moex
