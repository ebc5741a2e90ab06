// Test helpers for src/io: a temporary directory removed at scope exit, raw file writing,
// hand-made safetensors bytes, and "throws moex::Error containing all of these" checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "core/error.h"
#include "core/testing/temp_dir.h"

namespace moex::io::testing {

// A temporary directory named moex_io_*.
class TempDir : public moex::testing::TempDir {
 public:
  TempDir() : moex::testing::TempDir("moex_io") {}
};

// Replaces the file (unlink first: rewriting through truncation makes ext4 flush to disk).
inline void write_file(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// An 8-byte little-endian length, the header text, then `data` bytes.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// Runs fn; passes if it throws moex::Error whose message contains every substring.
inline ::testing::AssertionResult throws_error_with(const std::function<void()>& fn,
                                                    std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const moex::Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << p << "': " << msg;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-moex exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace moex::io::testing
