// Temporary sibling + fsync + rename, for files and for whole directories (see atomic_write.h).
#include "core/atomic_write.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace moex {
namespace fs = std::filesystem;
namespace {

std::string parent_of(const std::string& path) {
  const fs::path p = fs::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

std::string temp_template(const std::string& path) {
  return str_cat(path, ".tmp-", ::getpid(), "-XXXXXX");
}

// A temporary sibling PATH.tmp-<pid>-XXXXXX whose process no longer exists.
bool is_stale_temp(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return false;
  const std::string rest = name.substr(prefix.size());
  const size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos) return false;
  long pid = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (rest[i] < '0' || rest[i] > '9' || pid > 100'000'000) return false;
    pid = pid * 10 + (rest[i] - '0');
  }
  return pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

// What open/mkdir would give under the process umask (mkstemp and mkdtemp give 0600/0700).
mode_t umasked(mode_t mode) {
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mode & ~mask;
}

void write_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(n < 0 ? errno : EIO, std::generic_category());
    off += size_t(n);
  }
}

}  // namespace

int remove_stale_temp_siblings(const std::string& path) {
  const std::string prefix = fs::path(path).filename().string() + ".tmp-";
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent_of(path), ec)) {
    if (!is_stale_temp(e.path().filename().string(), prefix)) continue;
    std::error_code rm;
    removed += fs::remove_all(e.path(), rm) > 0;
  }
  return removed;
}

void write_file_atomic(const std::string& path, std::string_view data, const std::string& what) {
  AtomicFileWriter out(path, what);
  out.write(data.data(), data.size());
  out.commit();
}

void write_file_plain(const std::string& path, std::string_view data, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(what, " ", path, ": cannot open for writing: ", std::strerror(errno));
  int err = 0;
  const char* step = "writing";
  try {
    write_all(fd, data);
  } catch (const std::system_error& e) {
    err = e.code().value();
  }
  if (::close(fd) != 0 && err == 0) {
    err = errno;
    step = "closing";
  }
  if (err != 0)
    fail(what, " ", path, ": ", step, " ", data.size(), " bytes failed: ", std::strerror(err));
}

void sync_path(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(what, " ", path, ": cannot open to fsync: ", std::strerror(errno));
  // EINVAL: the file system does not sync this kind of file (some do not sync directories).
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;
  const int err = errno;
  ::close(fd);
  if (!ok) fail(what, " ", path, ": fsync failed: ", std::strerror(err));
}

std::string make_temp_sibling_dir(const std::string& path, const std::string& what) {
  const std::string parent = parent_of(path);
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec)
    fail(what, " ", path, ": cannot create the parent directory ", parent, ": ", ec.message());
  remove_stale_temp_siblings(path);
  std::string tmp = temp_template(path);
  if (!::mkdtemp(tmp.data()))
    fail(what, " ", path, ": cannot create a temporary directory in ", parent, ": ",
         std::strerror(errno));
  ::chmod(tmp.c_str(), umasked(0777));
  return tmp;
}

void commit_directory(const std::string& tmp, const std::string& path, const std::string& what) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(tmp, ec))
    if (e.is_regular_file()) sync_path(e.path().string(), what);
  if (ec) fail(what, " ", tmp, ": cannot list: ", ec.message());
  sync_path(tmp, what);
  const fs::file_status st = fs::symlink_status(path, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    fail(what, " ", path, ": exists and is not a directory");
  if (!fs::exists(st)) {
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      fail(what, " ", path, ": cannot rename ", tmp, " into place: ", std::strerror(errno));
  } else if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(tmp, ec);  // now the old content
  } else if (errno == EINVAL || errno == ENOSYS) {
    // No atomic exchange on this file system: move the old directory aside first.
    std::string old = temp_template(path);
    if (!::mkdtemp(old.data()) || ::rename(path.c_str(), old.c_str()) != 0)
      fail(what, " ", path, ": cannot move the old directory aside: ", std::strerror(errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      ::rename(old.c_str(), path.c_str());
      fail(what, " ", path, ": cannot rename ", tmp, " into place: ", std::strerror(err));
    }
    fs::remove_all(old, ec);
  } else {
    fail(what, " ", path, ": cannot exchange it with ", tmp, ": ", std::strerror(errno));
  }
  sync_path(parent_of(path), what + " parent directory");
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  remove_stale_temp_siblings(path_);
  tmp_ = temp_template(path_);
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0)
    fail(what_, " ", path_, ": cannot create a temporary file in ", parent_of(path_), ": ",
         std::strerror(errno));
  ::fchmod(fd_, umasked(0666));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
  if (fd_ < 0) fail(what_, " ", path_, ": write after commit");
  try {
    write_all(fd_, std::string_view(static_cast<const char*>(data), bytes));
  } catch (const std::system_error& e) {
    fail(what_, " ", path_, ": writing ", tmp_, " failed after ", written_, " bytes: ",
         std::strerror(e.code().value()));
  }
  written_ += bytes;
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) fail(what_, " ", path_, ": committed twice");
  const char* step = "fsync";
  int err = ::fsync(fd_) == 0 ? 0 : errno;
  if (::close(fd_) != 0 && err == 0) {
    err = errno;
    step = "close";
  }
  fd_ = -1;
  if (err == 0 && ::rename(tmp_.c_str(), path_.c_str()) != 0) {
    err = errno;
    step = "rename into place of";
  }
  if (err != 0) {
    ::unlink(tmp_.c_str());
    fail(what_, " ", path_, ": ", step, " ", tmp_, " failed: ", std::strerror(err));
  }
  sync_path(parent_of(path_), what_ + " directory");
}

}  // namespace moex
