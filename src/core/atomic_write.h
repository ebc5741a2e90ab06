// Whole-file and whole-directory writes that readers see complete or not at all: build under a
// temporary sibling name, fsync, rename into place. A crash, a full disk or Ctrl-C leaves the
// old content (or nothing) under the final name, never a truncated file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moex {

// Writes `data` to `path`: PATH.tmp-<pid>-XXXXXX in the same directory, fsync, rename over
// `path`, fsync of the directory. `what` says what the file is ("calibration file") and
// appears in errors with the path. On failure the temporary is removed and `path` is as before.
// Stale temporaries of `path` (remove_stale_temp_siblings) are removed first.
void write_file_atomic(const std::string& path, std::string_view data, const std::string& what);

// Removes the temporary siblings PATH.tmp-<pid>-* (files or directories) whose process no
// longer runs (kill(pid, 0) fails with ESRCH): what a killed or crashed writer left. Never one
// of a live process, nor any other name. Returns how many were removed.
int remove_stale_temp_siblings(const std::string& path);

// Writes `data` to `path` in place (created, or truncated if it exists), for a file inside a
// temporary directory that commit_directory then puts in place whole. Every failure (open,
// write, close) is a moex::Error naming `what`, the path and the system's reason ("No space
// left on device"); a partial file may remain, for the caller's cleanup of the directory.
void write_file_plain(const std::string& path, std::string_view data, const std::string& what);

// fsync of an existing file or directory; a moex::Error naming `what` and the path on failure.
void sync_path(const std::string& path, const std::string& what);

// Creates a fresh empty directory PATH.tmp-<pid>-XXXXXX beside `path` (same parent, so the
// final rename does not cross file systems) and returns its name. First removes the temporary
// siblings of `path` left by processes that no longer run (remove_stale_temp_siblings).
std::string make_temp_sibling_dir(const std::string& path, const std::string& what);

// Syncs every regular file directly in `tmp` and `tmp` itself, then puts it at `path`: a plain
// rename when `path` does not exist, an atomic exchange when it does (the old content is
// removed afterwards). The parent directory is synced last.
void commit_directory(const std::string& tmp, const std::string& path, const std::string& what);

// A file written in pieces (too large to hold in memory) that readers see complete or not at
// all: the pieces go to PATH.tmp-<pid>-XXXXXX in the same directory; commit() fsyncs it and
// renames it over `path`. Destroyed without commit() (an error, an exception unwinding), it
// removes the temporary and leaves `path` as it was. Failures are moex::Error naming `what`,
// the path and the system's reason.
class AtomicFileWriter {
 public:
  AtomicFileWriter(std::string path, std::string what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  void commit();
  uint64_t bytes_written() const { return written_; }

 private:
  std::string path_, what_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

}  // namespace moex
