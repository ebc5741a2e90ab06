// Intake on socket pairs with deadlines of a fraction of a second: whole requests handed on
// (pipelined ones in order), a head that never ends answered 408, an idle connection closed,
// the oldest waiting connection closed past the cap, a refusal answered before the close.
#include "serve/http_intake.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moex::serve {
namespace {

using std::chrono::milliseconds;

IntakeLimits short_limits() {
  IntakeLimits l;
  l.idle_timeout = milliseconds(300);
  l.request_timeout = milliseconds(300);
  l.linger = milliseconds(100);
  l.max_connections = 2;
  return l;
}

// An Intake whose handed-on requests are collected; each test plays the handler.
struct Rig {
  explicit Rig(IntakeLimits limits = short_limits())
      : intake(
            limits,
            [this](IntakeRequest r) {
              std::lock_guard<std::mutex> lock(mu);
              got.push_back(std::move(r));
              cv.notify_all();
            },
            [](int status, const std::string& m) { return std::to_string(status) + " " + m; }) {}
  // A connected pair: the server's end goes to the intake; the client's end is returned.
  int connect() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    intake.add(fds[0]);
    return fds[1];
  }
  bool wait_for(size_t n, milliseconds t = milliseconds(2000)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, t, [&] { return got.size() >= n; });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<IntakeRequest> got;
  Intake intake;
};

void send_all(int fd, const std::string& s) {
  ASSERT_EQ(send(fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size()));
}

// What the client reads until the server closes (or 2 s pass).
std::string read_to_close(int fd) {
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, size_t(n));
  return out;
}

const std::string kGet = "GET /health HTTP/1.1\r\n\r\n";

TEST(Intake, HandsOnPipelinedRequestsInOrder) {
  Rig rig;
  const int c = rig.connect();
  send_all(c, kGet + "GET /v1/models HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(rig.wait_for(1));
  IntakeRequest first = std::move(rig.got[0]);
  EXPECT_EQ(first.request, "GET /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(first.rest, "GET /v1/models HTTP/1.1\r\n\r\n");
  rig.intake.finish(std::move(first), true);  // the handler answered; the rest is framed next
  ASSERT_TRUE(rig.wait_for(2));
  EXPECT_EQ(rig.got[1].request, "GET /v1/models HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(rig.got[1].served, 0u);
  rig.intake.finish(std::move(rig.got[1]), false);
  EXPECT_EQ(read_to_close(c), "");
  close(c);
}

TEST(Intake, AHeadThatNeverEndsIs408AndAnIdleConnectionIsClosed) {
  Rig rig;
  const int slow = rig.connect(), idle = rig.connect();
  send_all(slow, "GET /health HTTP/1.1\r\nX-Slow: 1\r\n");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string answer = read_to_close(slow);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos);
  EXPECT_EQ(read_to_close(idle), "");  // closed without a word
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1500));
  EXPECT_TRUE(rig.got.empty());
  close(slow);
  close(idle);
}

TEST(Intake, PastTheCapTheOldestWaitingConnectionIsClosed) {
  Rig rig;
  const int a = rig.connect();
  std::this_thread::sleep_for(milliseconds(20));
  const int b = rig.connect();
  std::this_thread::sleep_for(milliseconds(20));
  const int c = rig.connect();  // the third of 2: `a`, idle the longest, goes
  EXPECT_EQ(read_to_close(a), "");
  send_all(c, kGet);
  ASSERT_TRUE(rig.wait_for(1));
  EXPECT_LE(rig.intake.open_connections(), 2u);
  rig.intake.finish(std::move(rig.got[0]), false);
  for (int fd : {a, b, c}) close(fd);
}

TEST(Intake, BodiesWaitWhileHandlersHoldTheByteBudget) {
  IntakeLimits limits = short_limits();
  limits.max_buffered_bytes = 100;
  limits.request_timeout = milliseconds(2000);
  Rig rig(limits);
  const int a = rig.connect(), b = rig.connect();
  const std::string head = "POST / HTTP/1.1\r\nContent-Length: 80\r\n\r\n";
  send_all(a, head + std::string(80, 'x'));
  ASSERT_TRUE(rig.wait_for(1));  // 120 bytes in a handler: the budget is spent
  send_all(b, head);
  std::this_thread::sleep_for(milliseconds(50));
  send_all(b, std::string(80, 'x'));  // not read until the handler is done
  EXPECT_FALSE(rig.wait_for(2, milliseconds(200)));
  rig.intake.finish(std::move(rig.got[0]), false);
  ASSERT_TRUE(rig.wait_for(2));
  EXPECT_EQ(rig.got[1].request.substr(rig.got[1].request.size() - 80), std::string(80, 'x'));
  rig.intake.finish(std::move(rig.got[1]), false);
  close(a);
  close(b);
}

TEST(Intake, ARefusalIsAnsweredBeforeTheClose) {
  Rig rig;
  const int c = rig.connect();
  send_all(c, "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab");
  const std::string answer = read_to_close(c);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("400 conflicting Content-Length"), std::string::npos) << answer;
  close(c);
}

// With a key required, a head without it is answered 401 at once: the body is never waited
// for (before, the request was read whole and the handler refused it), nothing is handed on.
TEST(Intake, AMissingKeyIs401AsSoonAsTheHeadIsIn) {
  IntakeLimits limits = short_limits();
  limits.request_timeout = milliseconds(3000);  // a body waited for would take this long
  limits.authorization = "Bearer k";
  Rig rig(limits);
  const std::string heads[] = {
      "POST / HTTP/1.1\r\nContent-Length: 90\r\n\r\n",
      "POST / HTTP/1.1\r\nAuthorization: Bearer j\r\nContent-Length: 90\r\n\r\n",
      "POST / HTTP/1.1\r\nAuthorization: Bearer kk\r\nContent-Length: 90\r\n\r\n",
      "POST / HTTP/1.1\r\nAuthorization: Bearer j\r\nAuthorization: Bearer k\r\n"
      "Content-Length: 90\r\n\r\n",
      "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 90\r\n\r\n",
  };
  for (const std::string& head : heads) {
    const int c = rig.connect();
    const auto t0 = std::chrono::steady_clock::now();
    send_all(c, head);  // and no body
    const std::string answer = read_to_close(c);
    EXPECT_EQ(answer.rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0u) << head << answer;
    EXPECT_NE(answer.find("WWW-Authenticate: Bearer\r\n"), std::string::npos) << answer;
    EXPECT_NE(answer.find("Authorization: Bearer KEY"), std::string::npos) << answer;
    EXPECT_EQ(answer.find("100 Continue"), std::string::npos) << answer;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1500)) << head;
    close(c);
  }
  EXPECT_TRUE(rig.got.empty());
  const int c = rig.connect();  // the key: the body is read and the request handed on
  send_all(c, "POST / HTTP/1.1\r\nAuthorization: Bearer k\r\nContent-Length: 3\r\n\r\n");
  EXPECT_FALSE(rig.wait_for(1, milliseconds(100)));
  send_all(c, "abc");
  ASSERT_TRUE(rig.wait_for(1));
  EXPECT_NE(rig.got[0].request.find("Authorization: Bearer k\r\n"), std::string::npos);
  rig.intake.finish(std::move(rig.got[0]), false);
  close(c);
}

// GET /health (the load balancers' probe) is handed on without the key when the policy says
// so; anything else is still refused at the head.
TEST(Intake, ARequestTheKeyIsNotNeededForIsHandedOnWithoutIt) {
  IntakeLimits limits = short_limits();
  limits.authorization = "Bearer k";
  limits.open_without_key = [](std::string_view method, std::string_view path) {
    return method == "GET" && path == "/health";
  };
  Rig rig(limits);
  for (const std::string target : {"/health", "/health?full=1"}) {
    const int c = rig.connect();
    send_all(c, "GET " + target + " HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(rig.wait_for(1)) << target;
    EXPECT_EQ(rig.got[0].request.rfind("GET " + target + " ", 0), 0u) << rig.got[0].request;
    rig.intake.finish(std::move(rig.got[0]), false);
    rig.got.clear();
    close(c);
  }
  for (const std::string line : {"POST /health", "GET /healthz", "GET /v1/models"}) {
    const int c = rig.connect();
    send_all(c, line + " HTTP/1.1\r\n\r\n");
    const std::string answer = read_to_close(c);
    EXPECT_EQ(answer.rfind("HTTP/1.1 401 ", 0), 0u) << line << ": " << answer;
    close(c);
  }
  EXPECT_TRUE(rig.got.empty());
}

// A refusal carries the fields the policy gives for the request's Origin (CORS, so that a
// browser's page can read the 401).
TEST(Intake, ARefusalCarriesTheFieldsForItsOrigin) {
  IntakeLimits limits = short_limits();
  limits.authorization = "Bearer k";
  limits.refusal_fields = [](std::string_view origin) {
    return origin == "https://app.example" ? std::string("X-Origin-Ok: yes\r\n") : std::string();
  };
  Rig rig(limits);
  int c = rig.connect();
  send_all(c, "GET /v1/models HTTP/1.1\r\nOrigin: https://app.example\r\n\r\n");
  std::string answer = read_to_close(c);
  close(c);
  EXPECT_EQ(answer.rfind("HTTP/1.1 401 ", 0), 0u) << answer;
  const size_t blank = answer.find("\r\n\r\n");
  EXPECT_NE(answer.find("\r\nX-Origin-Ok: yes\r\n"), std::string::npos) << answer;
  EXPECT_LT(answer.find("X-Origin-Ok"), blank) << answer;  // a field of the head
  c = rig.connect();
  send_all(c, "GET /v1/models HTTP/1.1\r\nOrigin: https://other.example\r\n\r\n");
  answer = read_to_close(c);
  close(c);
  EXPECT_EQ(answer.find("X-Origin-Ok"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\r\n\r\n"), std::string::npos) << answer;
}

}  // namespace
}  // namespace moex::serve
