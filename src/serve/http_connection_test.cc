// ConnectionWatch on a real loopback TCP connection: the server side's socket is found by its
// address pair, reads as open while the client is there (also with unread data waiting) and
// as closed once the client has gone; an address pair of no connection finds nothing.
#include "serve/http_connection.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace moex::serve {
namespace {

int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (peer)
    getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
  else
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

struct Loopback {
  Loopback() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    server = accept(listener, nullptr, nullptr);
  }
  ~Loopback() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
  ConnectionWatch watch() const {
    return ConnectionWatch("127.0.0.1", port_of(server, false), "127.0.0.1", port_of(server, true));
  }
  int listener = -1, client = -1, server = -1;
};

bool becomes_closed(const ConnectionWatch& w) {
  for (int i = 0; i < 200; ++i) {  // the FIN is seen at once on loopback; 2 s at most
    if (w.closed()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(ConnectionWatch, FindsTheSocketAndSeesTheClientGo) {
  Loopback l;
  ASSERT_GE(l.server, 0);
  const ConnectionWatch w = l.watch();
  ASSERT_TRUE(w.found());
  EXPECT_FALSE(w.closed());
  ASSERT_EQ(write(l.client, "GET", 3), 3);  // a pipelined request is not a close
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(w.closed());
  close(l.client);
  l.client = -1;
  EXPECT_TRUE(becomes_closed(w));
}

TEST(ConnectionWatch, AnAddressPairOfNoConnectionFindsNothing) {
  Loopback l;
  const ConnectionWatch w("127.0.0.1", port_of(l.server, false), "127.0.0.1", 1);
  EXPECT_FALSE(w.found());
  EXPECT_FALSE(w.closed());
  EXPECT_FALSE(ConnectionWatch().found());
}

}  // namespace
}  // namespace moex::serve
