// atomic_write: whole files and directories appear complete or not at all; a failed write
// (a full disk, simulated with RLIMIT_FSIZE) leaves the old content and no temporary behind.
#include "core/atomic_write.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/testing/temp_dir.h"

namespace moex {
namespace {
namespace fs = std::filesystem;

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int entries(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.exists();
  return n;
}

// A pid that is not running: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  ::waitpid(p, nullptr, 0);
  return p;
}

TEST(AtomicWrite, WritesAndReplacesWithoutLeavingTemporaries) {
  testing::TempDir d;
  const std::string p = d.file("a.json");
  write_file_atomic(p, "first\n", "test file");
  EXPECT_EQ(slurp(p), "first\n");
  write_file_atomic(p, "second, longer\n", "test file");
  EXPECT_EQ(slurp(p), "second, longer\n");
  write_file_atomic(p, "", "test file");
  EXPECT_EQ(slurp(p), "");
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicWrite, PermissionsFollowTheUmaskNotTheTemporary) {
  testing::TempDir d;
  const mode_t old = ::umask(022);
  write_file_atomic(d.file("f"), "x", "test file");
  const std::string tmp = make_temp_sibling_dir(d.file("dir"), "test directory");
  ::umask(old);
  EXPECT_EQ(fs::status(d.file("f")).permissions(), fs::perms(0644));
  EXPECT_EQ(fs::status(tmp).permissions(), fs::perms(0755));
}

TEST(AtomicWrite, FullDiskKeepsTheOldFileAndRemovesTheTemporary) {
  testing::TempDir d;
  const std::string p = d.file("cal.json");
  write_file_atomic(p, "old", "calibration file");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* prev = ::signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    write_file_atomic(p, std::string(100000, 'x'), "calibration file");
  } catch (const Error& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, prev);
  EXPECT_NE(msg.find("calibration file " + p), std::string::npos) << msg;
  EXPECT_EQ(slurp(p), "old");
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicWrite, ErrorsNameTheFile) {
  testing::TempDir d;
  const std::string missing = d.file("no/such/dir/x.json");
  try {
    write_file_atomic(missing, "x", "summary file");
    FAIL() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("summary file " + missing), std::string::npos) << e.what();
  }
  fs::create_directory(d.file("dir"));
  EXPECT_THROW(write_file_atomic(d.file("dir"), "x", "file"), Error);  // cannot replace a directory
  EXPECT_TRUE(fs::is_directory(d.file("dir")));
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicFileWriter, PiecesAppearOnlyAtCommit) {
  testing::TempDir d;
  const std::string p = d.file("logits.bin");
  write_file_atomic(p, "old", "logits file");
  {
    AtomicFileWriter w(p, "logits file");
    w.write("abc", 3);
    w.write("defgh", 5);
    EXPECT_EQ(w.bytes_written(), 8u);
    EXPECT_EQ(slurp(p), "old");  // readers still see the old file
    EXPECT_EQ(entries(d.path()), 2);
    w.commit();
    EXPECT_THROW(w.write("x", 1), Error);
  }
  EXPECT_EQ(slurp(p), "abcdefgh");
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicFileWriter, UncommittedWriterLeavesTheOldFileAndNoTemporary) {
  testing::TempDir d;
  const std::string p = d.file("logits.bin");
  write_file_atomic(p, "old", "logits file");
  {
    AtomicFileWriter w(p, "logits file");
    w.write("partial", 7);
  }
  EXPECT_EQ(slurp(p), "old");
  EXPECT_EQ(entries(d.path()), 1);
  try {
    AtomicFileWriter w(d.file("no/such/dir/x.bin"), "logits file");
    FAIL() << "created a file in a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logits file " + d.file("no/such/dir/x.bin")),
              std::string::npos) << e.what();
  }
}

TEST(AtomicFileWriter, FullDiskNamesTheFileAndKeepsTheOldOne) {
  testing::TempDir d;
  const std::string p = d.file("logits.bin");
  write_file_atomic(p, "old", "logits file");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* prev = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg;
  try {
    AtomicFileWriter w(p, "logits file");
    const std::string block(3000, 'x');
    w.write(block.data(), block.size());
    w.write(block.data(), block.size());
    w.commit();
  } catch (const Error& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, prev);
  EXPECT_NE(msg.find("logits file " + p), std::string::npos) << msg;
  EXPECT_EQ(slurp(p), "old");
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicWrite, TempSiblingDirIsBesideThePathAndStaleOnesAreRemoved) {
  testing::TempDir d;
  const std::string out = d.file("sub/model");
  const std::string stale = str_cat(out, ".tmp-", dead_pid(), "-abcdef");
  const std::string live = str_cat(out, ".tmp-", ::getpid(), "-ghijkl");
  fs::create_directories(stale);
  fs::create_directories(live);
  std::ofstream(stale + "/config.json") << "{";
  const std::string tmp = make_temp_sibling_dir(out, "model directory");
  EXPECT_EQ(fs::path(tmp).parent_path(), fs::path(out).parent_path());
  EXPECT_EQ(fs::path(tmp).filename().string().rfind("model.tmp-", 0), 0u) << tmp;
  EXPECT_TRUE(fs::is_directory(tmp));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));  // its process (this one) still runs
  EXPECT_FALSE(fs::exists(out));
}

// Only PATH.tmp-<pid>-* of a process that no longer runs goes: not a live process's, not a
// malformed or foreign name, not another path's temporaries.
TEST(AtomicWrite, RemoveStaleTempSiblingsTouchesOnlyDeadWritersTemporaries) {
  testing::TempDir d;
  const std::string out = d.file("model");
  const pid_t dead = dead_pid();
  const std::string gone[] = {str_cat(out, ".tmp-", dead, "-abcdef"),
                              str_cat(out, ".tmp-", dead, "-")};
  const std::string kept[] = {
      str_cat(out, ".tmp-", ::getpid(), "-ghijkl"),  // this process runs
      str_cat(out, ".tmp-1-init00"),                 // pid 1 runs (EPERM or not: alive)
      str_cat(out, ".tmp-", dead),                   // no dash after the pid
      str_cat(out, ".tmp--", dead, "-x"),            // no pid
      str_cat(out, ".tmp-0-x"),                      // pid 0: the process group, not a pid
      str_cat(out, ".tmp-x", dead, "-x"),
      str_cat(out, ".tmp-999999999999-x"),  // no such pid can exist: not ours
      str_cat(out, "2.tmp-", dead, "-x"),   // another path's
      str_cat(out, ".tmp", dead, "-x"),
      out,
  };
  for (const std::string& p : gone) fs::create_directories(p + "/sub");
  std::ofstream(str_cat(out, ".tmp-", dead, "-file")) << "a temporary file";
  for (const std::string& p : kept) fs::create_directories(p);
  EXPECT_EQ(remove_stale_temp_siblings(out), 3);
  for (const std::string& p : gone) EXPECT_FALSE(fs::exists(p)) << p;
  EXPECT_FALSE(fs::exists(str_cat(out, ".tmp-", dead, "-file")));
  for (const std::string& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_EQ(remove_stale_temp_siblings(out), 0);
  EXPECT_EQ(remove_stale_temp_siblings(d.file("missing/model")), 0);  // no parent: nothing
}

TEST(AtomicWrite, WriteFileAtomicRemovesAKilledWritersTemporary) {
  testing::TempDir d;
  const std::string p = d.file("cal.json");
  const std::string stale = str_cat(p, ".tmp-", dead_pid(), "-Xy12Zq");
  std::ofstream(stale) << "half a file";
  write_file_atomic(p, "whole\n", "test file");
  EXPECT_EQ(slurp(p), "whole\n");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicWrite, CommitDirectoryCreatesAndReplaces) {
  testing::TempDir d;
  const std::string out = d.file("model");
  std::string tmp = make_temp_sibling_dir(out, "model directory");
  std::ofstream(tmp + "/config.json") << "one";
  commit_directory(tmp, out, "model directory");
  EXPECT_EQ(slurp(out + "/config.json"), "one");
  EXPECT_FALSE(fs::exists(tmp));

  std::ofstream(out + "/stale.safetensors") << "old shard";
  tmp = make_temp_sibling_dir(out, "model directory");
  std::ofstream(tmp + "/config.json") << "two";
  commit_directory(tmp, out, "model directory");
  EXPECT_EQ(slurp(out + "/config.json"), "two");
  EXPECT_FALSE(fs::exists(out + "/stale.safetensors"));  // the old directory is gone whole
  EXPECT_EQ(entries(d.path()), 1);
}

TEST(AtomicWrite, CommitDirectoryRefusesToReplaceAFile) {
  testing::TempDir d;
  const std::string out = d.file("model");
  std::ofstream(out) << "a file";
  const std::string tmp = make_temp_sibling_dir(out, "model directory");
  try {
    commit_directory(tmp, out, "model directory");
    FAIL() << "replaced a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(out), "a file");
}

// A full disk (/dev/full: every write fails with ENOSPC) is named with the system's reason.
TEST(AtomicWrite, WriteFilePlainSaysWhyOnAFullDisk) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  testing::TempDir d;
  const std::string p = d.file("tokenizer.json");
  fs::create_symlink("/dev/full", p);
  try {
    write_file_plain(p, std::string(100000, 'x'), "synthetic tokenizer");
    FAIL() << "wrote to /dev/full";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("synthetic tokenizer " + p), std::string::npos) << m;
    EXPECT_NE(m.find(std::strerror(ENOSPC)), std::string::npos) << m;
  }
  write_file_plain(d.file("ok.json"), "{}\n", "test file");
  EXPECT_EQ(slurp(d.file("ok.json")), "{}\n");
  write_file_plain(d.file("ok.json"), "1", "test file");  // truncates
  EXPECT_EQ(slurp(d.file("ok.json")), "1");
  try {
    write_file_plain(d.file("no/dir/f"), "x", "test file");
    FAIL() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moex
