// FrontServer and ReplayStream (see http_front.h).
#include "serve/http_front.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "serve/http_connection.h"

namespace moex::serve {

bool ReplayStream::is_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  if (poll(&p, 1, int(write_timeout_.count())) <= 0 || (p.revents & (POLLHUP | POLLERR)))
    return false;
  pollfd r{fd_, POLLIN, 0};  // readable: data (a pipelined request) or the peer's close
  if (poll(&r, 1, 0) <= 0) return true;
  char c;
  return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
}

ssize_t ReplayStream::read(char* ptr, size_t size) {
  const size_t n = std::min(size, request_.size() - pos_);
  std::memcpy(ptr, request_.data() + pos_, n);
  pos_ += n;
  return ssize_t(n);
}

ssize_t ReplayStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  return send(fd_, ptr, size, MSG_NOSIGNAL);
}

void ReplayStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  socket_address(fd_, true, ip, port);
}

void ReplayStream::get_local_ip_and_port(std::string& ip, int& port) const {
  socket_address(fd_, false, ip, port);
}

void FrontServer::raise_backlog(int backlog) {
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, backlog);
}

bool FrontServer::answer(const IntakeRequest& r, bool close,
                         std::chrono::milliseconds write_timeout) {
  ReplayStream strm(r.fd, r.request, write_timeout);
  bool closed = false;
  const bool ok = process_request(strm, close, closed, nullptr);
  return ok && !closed && !close;
}

bool FrontServer::process_and_close_socket(socket_t sock) {
  intake_->add(sock);
  return true;
}

}  // namespace moex::serve
