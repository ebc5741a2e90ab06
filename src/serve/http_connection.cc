// ConnectionWatch (see http_connection.h).
#include "serve/http_connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace moex::serve {
namespace {

// The numeric host and port of `sa`, as httplib formats them (getnameinfo NI_NUMERICHOST).
bool address_of(const sockaddr_storage& sa, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&sa), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(p);
  return true;
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr,
             int remote_port) {
  std::string host;
  int port = 0;
  return socket_address(fd, true, host, port) && port == remote_port && host == remote_addr &&
         socket_address(fd, false, host, port) && port == local_port && host == local_addr;
}

}  // namespace

bool socket_address(int fd, bool peer, std::string& host, int& port) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return rc == 0 && address_of(sa, len, host, port);
}

ConnectionWatch::ConnectionWatch(const std::string& local_addr, int local_port,
                                 const std::string& remote_addr, int remote_port) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    char* rest = nullptr;
    const std::string name = it->path().filename().string();
    const long fd = std::strtol(name.c_str(), &rest, 10);
    if (rest == name.c_str() || *rest != '\0') continue;
    if (matches(int(fd), local_addr, local_port, remote_addr, remote_port)) {
      fd_ = int(fd);
      return;
    }
  }
}

bool ConnectionWatch::closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {  // data (a pipelined request) or the end of the stream
    char c;
    return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  return false;
}

}  // namespace moex::serve
