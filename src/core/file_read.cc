// read_small_file (see file_read.h): open with O_NONBLOCK so a FIFO cannot block, decide on
// the descriptor's fstat (no check-then-open race), then read at most max_bytes + 1 bytes.
#include "core/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "core/error.h"

namespace moex {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// "12345 bytes", with MiB added for large sizes.
std::string byte_count(int64_t n) {
  if (n < (int64_t{1} << 20)) return str_cat(n, " bytes");
  return str_cat(n, " bytes (", n >> 20, " MiB)");
}

// Why open(path) failed with `err`, naming the missing directory when the parent is absent.
std::string open_failure(const std::string& path, int err) {
  if (err == ELOOP) return "too many levels of symbolic links (a symlink loop?)";
  if (err != ENOENT) return errno_text(err);
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string parent = path.substr(0, slash);
    struct stat st;
    if (::stat(parent.c_str(), &st) != 0 && errno == ENOENT)
      return str_cat("the directory ", parent, " does not exist");
  }
  return "no such file";
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

int open_regular_file(const std::string& path, const std::string& what, uint64_t* size) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    struct stat st;
    // A socket cannot be opened at all (ENXIO); say what it is rather than the errno.
    if (err != ENOENT && err != ELOOP && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      fail(path, ": ", what, " is ", file_kind(st.st_mode), "; expected a regular file");
    fail(path, ": cannot open ", what, ": ", open_failure(path, err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, ": cannot stat ", what, ": ", errno_text(err));
  }
  if (!S_ISREG(st.st_mode) || st.st_size < 0) {
    ::close(fd);
    fail(path, ": ", what, " is ", file_kind(st.st_mode), "; expected a regular file");
  }
  *size = uint64_t(st.st_size);
  return fd;
}

std::string read_small_file(const std::string& path, int64_t max_bytes, const std::string& what) {
  const size_t cap = size_t(std::max<int64_t>(max_bytes, 0));
  uint64_t size = 0;
  const int fd = open_regular_file(path, what, &size);
  const FdCloser closer{fd};
  if (size > cap)
    fail(path, ": ", what, " is ", byte_count(int64_t(size)), "; expected at most ",
         byte_count(int64_t(cap)));

  // Start from the reported size and grow when the file yields more; one byte past the cap
  // is enough to know it is too long.
  std::string out(size_t(size) + 1, '\0');
  size_t got = 0;
  while (true) {
    if (got == out.size()) {
      if (out.size() > cap) break;
      out.resize(std::min(cap + 1, std::max<size_t>(out.size() * 2, 4096)));
    }
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, ": error while reading ", what, ": ", errno_text(errno));
    }
    if (n == 0) break;
    got += size_t(n);
  }
  if (got > cap)
    fail(path, ": ", what, " yields more than ", byte_count(int64_t(cap)),
         " when read (its reported size was ", size, "); expected at most ",
         byte_count(int64_t(cap)));
  out.resize(got);
  return out;
}

}  // namespace moex
