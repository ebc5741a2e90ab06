// RequestStream: the hand-over of one request's tokens from the scheduler thread to the
// thread that answers the client.
#include <utility>

#include "serve/scheduler.h"

namespace moex::serve {

const char* finish_name(Finish f) {
  switch (f) {
    case Finish::kNone: return "none";
    case Finish::kStop: return "stop";
    case Finish::kLength: return "length";
    case Finish::kContext: return "length";
    case Finish::kCancelled: return "cancelled";
    case Finish::kError: return "error";
  }
  return "unknown";
}

bool RequestStream::next(Event& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !pending_.empty() || finish_ != Finish::kNone; });
  if (pending_.empty() && finish_ == Finish::kNone) return false;
  out.tokens = std::move(pending_);
  pending_.clear();
  out.finish = finish_;
  out.error = error_;
  out.prompt_tokens = prompt_tokens_;
  out.cached_tokens = cached_tokens_;
  return true;
}

void RequestStream::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
}

bool RequestStream::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void RequestStream::push(GeneratedToken t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_ != Finish::kNone) return;
    t.at = std::chrono::steady_clock::now();
    pending_.push_back(std::move(t));
  }
  cv_.notify_all();
}

void RequestStream::set_prompt(int64_t prompt_tokens, int64_t cached_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ = prompt_tokens;
  cached_tokens_ = cached_tokens;
}

void RequestStream::finish(Finish f, std::string error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_ != Finish::kNone) return;
    finish_ = f;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

}  // namespace moex::serve
