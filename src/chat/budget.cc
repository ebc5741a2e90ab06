// RenderBudget: one counter of work per render, cancellation polling, and the namespaces the
// render owns.
#include "chat/budget.h"

#include "chat/limits.h"
#include "chat/value.h"
#include "core/error.h"

namespace moex::chat {

namespace {
thread_local RenderBudget* active = nullptr;
}  // namespace

RenderBudget::RenderBudget(std::function<bool()> cancelled, int64_t max_work)
    : cancelled_(std::move(cancelled)),
      max_work_(max_work > 0 && max_work < kMaxRenderWork ? max_work : kMaxRenderWork),
      next_poll_(kCancelPollUnits) {}

RenderBudget::~RenderBudget() {
  // Values taken out first so that freeing them cannot reach a namespace being cleared.
  std::vector<std::pair<Value, Value>> dropped;
  for (const auto& ns : namespaces_) {
    for (auto& e : ns->entries) dropped.push_back(std::move(e));
    ns->entries.clear();
  }
  dropped.clear();
  namespaces_.clear();
}

void RenderBudget::charge(int64_t units) {
  spent_ += units;
  if (spent_ > max_work_)
    throw RenderError(str_cat("the render did more than ", max_work_,
                              " units of work (kMaxRenderWork or the caller's lower budget: "
                              "loop iterations, expressions, items touched, text scanned and "
                              "built)"));
  if (spent_ >= next_poll_) {
    next_poll_ = spent_ + kCancelPollUnits;
    if (cancelled_ && cancelled_()) throw RenderError("the render was cancelled");
  }
}

void RenderBudget::adopt_namespace(std::shared_ptr<DictObj> ns) {
  namespaces_.push_back(std::move(ns));
}

ActiveBudget::ActiveBudget(RenderBudget* budget) : saved_(active) { active = budget; }
ActiveBudget::~ActiveBudget() { active = saved_; }

void charge(int64_t units) {
  if (active != nullptr) active->charge(units);
}

void charge_bytes(size_t bytes) {
  if (active != nullptr && bytes >= size_t(kBytesPerWorkUnit))
    active->charge(int64_t(bytes / size_t(kBytesPerWorkUnit)));
}

void adopt_namespace(std::shared_ptr<DictObj> ns) {
  if (active != nullptr) active->adopt_namespace(std::move(ns));
}

void check_string_size(size_t n) {
  if (n > kMaxOutputBytes)
    throw RenderError(str_cat("a string of ", n, " bytes would pass ", kMaxOutputBytes,
                              " bytes (kMaxOutputBytes)"));
}

void check_list_size(size_t n) {
  if (n > kMaxListItems)
    throw RenderError(
        str_cat("a list of ", n, " items would pass ", kMaxListItems, " items (kMaxListItems)"));
}

}  // namespace moex::chat
