// Test support: hands a FIFO that nobody writes to a file reader and reports whether the
// reader came back on its own (and with which moex::Error) or sat waiting for a writer.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace moex::testing {

struct FifoProbe {
  bool returned = false;     // the reader came back without a writer showing up
  bool threw_error = false;  // it threw moex::Error (`message` holds what())
  std::string message;
};

// Makes a FIFO at `fifo_path` and calls read(fifo_path) on another thread. The wait is only a
// hang guard (a correct reader returns at once): a reader still waiting after `guard` is
// released by opening and closing the FIFO for writing, and reported as returned = false.
inline FifoProbe probe_fifo(const std::string& fifo_path,
                            const std::function<void(const std::string&)>& read,
                            std::chrono::seconds guard = std::chrono::seconds(20)) {
  if (::mkfifo(fifo_path.c_str(), 0600) != 0)
    throw std::runtime_error("mkfifo failed for " + fifo_path);
  FifoProbe p;
  auto done = std::async(std::launch::async, [&] {
    try {
      read(fifo_path);
    } catch (const moex::Error& e) {
      p.threw_error = true;
      p.message = e.what();
    }
  });
  p.returned = done.wait_for(guard) == std::future_status::ready;
  while (done.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
    const int w = ::open(fifo_path.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  done.get();
  return p;
}

}  // namespace moex::testing
