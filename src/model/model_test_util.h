// Helpers for the src/model tests: a temporary directory removed at scope exit, and
// "throws moex::Error whose message contains all of these" checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>

#include "core/error.h"
#include "core/testing/temp_dir.h"

namespace moex::model::testing {

// A temporary directory named moex_model_*.
class TempDir : public moex::testing::TempDir {
 public:
  TempDir() : moex::testing::TempDir("moex_model") {}
};

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Runs fn; expects a moex::Error whose message contains every string in `parts`.
template <typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected moex::Error, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected moex::Error, nothing was thrown";
}

}  // namespace moex::model::testing
