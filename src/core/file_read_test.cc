// read_small_file: exact bytes of a regular file; FIFOs, directories, devices, sockets,
// symlink loops, missing paths and oversize files (by size or by what a read yields) refused.
#include "core/file_read.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "core/testing/fifo_probe.h"
#include "core/testing/temp_dir.h"

namespace moex {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// The message of the Error read_small_file throws, or "" (with a test failure) if it reads.
std::string read_error(const std::string& path, int64_t max_bytes = kMiB) {
  try {
    read_small_file(path, max_bytes, "test file");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << path << ": read without error";
  return "";
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "\"" << msg << "\" lacks \"" << part << "\"";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(FileRead, RegularFileReadExactly) {
  moex::testing::TempDir tmp("moex_file_read");
  std::string bytes = "{\"a\": 1}\r\n";
  bytes += std::string("\0\xff\x01", 3);
  for (int i = 0; i < 10000; ++i) bytes += char('a' + i % 26);  // past one read's first guess
  write_bytes(tmp.file("f.json"), bytes);
  EXPECT_EQ(read_small_file(tmp.file("f.json"), kMiB, "test file"), bytes);
  write_bytes(tmp.file("empty"), "");
  EXPECT_EQ(read_small_file(tmp.file("empty"), kMiB, "test file"), "");
  // Symlinks are followed.
  ASSERT_EQ(::symlink(tmp.file("f.json").c_str(), tmp.file("link").c_str()), 0);
  EXPECT_EQ(read_small_file(tmp.file("link"), kMiB, "test file"), bytes);
}

TEST(FileRead, OversizeRefusedAtTheCapAndNotBelow) {
  moex::testing::TempDir tmp("moex_file_read");
  write_bytes(tmp.file("f"), std::string(100, 'x'));
  EXPECT_EQ(read_small_file(tmp.file("f"), 100, "test file").size(), 100u);
  const std::string msg = read_error(tmp.file("f"), 99);
  expect_has(msg, tmp.file("f"));
  expect_has(msg, "100 bytes");
  expect_has(msg, "at most 99 bytes");
}

TEST(FileRead, ReadIsBoundedWhenTheReportedSizeLies) {
  // procfs reports size 0 for files that read back hundreds of bytes.
  const std::string status = read_small_file("/proc/self/status", kMiB, "test file");
  expect_has(status, "Name:");
  const std::string msg = read_error("/proc/self/status", 16);
  expect_has(msg, "/proc/self/status");
  expect_has(msg, "more than 16 bytes");
}

TEST(FileRead, FifoRefusedWithoutWaitingForAWriter) {
  moex::testing::TempDir tmp("moex_file_read");
  const auto p = moex::testing::probe_fifo(tmp.file("fifo"), [](const std::string& path) {
    read_small_file(path, kMiB, "test file");
  });
  EXPECT_TRUE(p.returned) << "blocked waiting for a writer";
  ASSERT_TRUE(p.threw_error);
  expect_has(p.message, tmp.file("fifo"));
  expect_has(p.message, "a FIFO");
  expect_has(p.message, "expected a regular file");
}

TEST(FileRead, DirectoryDevicesAndSocketsRefused) {
  moex::testing::TempDir tmp("moex_file_read");
  std::string msg = read_error(tmp.path());
  expect_has(msg, tmp.path());
  expect_has(msg, "a directory; expected a regular file");
  msg = read_error("/dev/zero");
  expect_has(msg, "/dev/zero: test file is a character device; expected a regular file");
  msg = read_error("/dev/null");
  expect_has(msg, "a character device");

  const std::string sock_path = tmp.file("sock");
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock_path.size(), sizeof(addr.sun_path));
  sock_path.copy(addr.sun_path, sock_path.size());
  ASSERT_EQ(::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  msg = read_error(sock_path);
  ::close(s);
  expect_has(msg, sock_path);
  expect_has(msg, "a socket; expected a regular file");
}

TEST(FileRead, SymlinkLoopAndMissingPathsNamed) {
  moex::testing::TempDir tmp("moex_file_read");
  ASSERT_EQ(::symlink(tmp.file("b").c_str(), tmp.file("a").c_str()), 0);
  ASSERT_EQ(::symlink(tmp.file("a").c_str(), tmp.file("b").c_str()), 0);
  std::string msg = read_error(tmp.file("a"));
  expect_has(msg, tmp.file("a"));
  expect_has(msg, "symbolic links");
  // A loop in a directory component is reported the same way.
  msg = read_error(tmp.file("a") + "/config.json");
  expect_has(msg, "symbolic links");

  msg = read_error(tmp.file("absent.json"));
  expect_has(msg, tmp.file("absent.json") + ": cannot open test file: no such file");
  msg = read_error(tmp.file("no_dir") + "/config.json");
  expect_has(msg, "the directory " + tmp.file("no_dir") + " does not exist");
}

}  // namespace
}  // namespace moex
