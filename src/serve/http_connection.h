// Whether an HTTP client is still there while its request waits for tokens. cpp-httplib
// 0.11 gives a handler no handle on its connection, so the socket is found by the address
// pair httplib reports (the process's descriptors searched with getsockname/getpeername) and
// polled: the peer's close (EOF, hang-up, error) means the client has gone.
#pragma once

#include <string>

namespace moex::serve {

// The numeric host and port of a socket's peer (`peer`) or own end, as httplib reports them.
bool socket_address(int fd, bool peer, std::string& host, int& port);

class ConnectionWatch {
 public:
  ConnectionWatch() = default;
  // The connected socket whose local and peer addresses are these (numeric host, port).
  ConnectionWatch(const std::string& local_addr, int local_port, const std::string& remote_addr,
                  int remote_port);
  bool found() const { return fd_ >= 0; }
  // True once the peer has closed the connection; false while it is open, and when the
  // socket was not found (nothing is known then).
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace moex::serve
