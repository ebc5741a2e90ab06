// The work budget of one render (kMaxRenderWork) and the namespaces it owns. The active
// render's budget is reachable from every builtin through charge(), so each operation pays
// where its cost arises (items compared, bytes scanned) instead of being threaded through
// every signature; outside a render the charges are free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace moex::chat {

struct DictObj;

class RenderBudget {
 public:
  // `cancelled` (may be empty) is polled every kCancelPollUnits; when it returns true the
  // render ends in an error. `max_work` outside (0, kMaxRenderWork] means kMaxRenderWork.
  explicit RenderBudget(std::function<bool()> cancelled = {}, int64_t max_work = 0);
  // Empties every namespace the render created, so references among them (a namespace stored
  // in itself, a chain of them) are freed without recursion and without leaking.
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // Throws RenderError when the render passes its budget or was cancelled.
  void charge(int64_t units);
  int64_t spent() const { return spent_; }
  void adopt_namespace(std::shared_ptr<DictObj> ns);

 private:
  std::function<bool()> cancelled_;
  int64_t max_work_;
  int64_t spent_ = 0;
  int64_t next_poll_ = 0;
  std::vector<std::shared_ptr<DictObj>> namespaces_;
};

// Makes `budget` the one charge() pays into on this thread for the guard's lifetime.
class ActiveBudget {
 public:
  explicit ActiveBudget(RenderBudget* budget);
  ~ActiveBudget();
  ActiveBudget(const ActiveBudget&) = delete;
  ActiveBudget& operator=(const ActiveBudget&) = delete;

 private:
  RenderBudget* saved_;
};

// Charge the active render: `units` of work, or `bytes` of text scanned or built (one unit
// per kBytesPerWorkUnit; short texts are paid for by the expression that handles them).
void charge(int64_t units);
void charge_bytes(size_t bytes);
// A namespace() just made, held until the render ends (see ~RenderBudget).
void adopt_namespace(std::shared_ptr<DictObj> ns);

// Throws RenderError when a string or list about to be built would pass kMaxOutputBytes or
// kMaxListItems; call before allocating.
void check_string_size(size_t n);
void check_list_size(size_t n);

}  // namespace moex::chat
