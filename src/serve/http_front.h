// The httplib server of `moex serve` with its connections read by an Intake: accepted
// sockets go to the intake instead of a thread each, and a handler thread answers one
// complete request at a time from memory (ReplayStream), writing to the socket.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

#include "serve/http_intake.h"

namespace moex::serve {

// A whole request read from memory; the response written to the connection's socket.
class ReplayStream : public httplib::Stream {
 public:
  ReplayStream(int fd, const std::string& request, std::chrono::milliseconds write_timeout)
      : fd_(fd), request_(request), write_timeout_(write_timeout) {}
  bool is_readable() const override { return pos_ < request_.size(); }
  // The socket takes more within the write timeout and the peer has not closed it.
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  const std::string& request_;
  size_t pos_ = 0;
  std::chrono::milliseconds write_timeout_;
};

class FrontServer : public httplib::Server {
 public:
  // Accepted connections go to `intake` from now on.
  void attach(Intake* intake) { intake_ = intake; }
  // Raises the listening socket's backlog (httplib's own is 5).
  void raise_backlog(int backlog);
  // Answers one request; `close` says Connection: close. True when the connection may stay.
  bool answer(const IntakeRequest& r, bool close, std::chrono::milliseconds write_timeout);

 private:
  bool process_and_close_socket(socket_t sock) override;
  Intake* intake_ = nullptr;
};

}  // namespace moex::serve
