// StopStrings (see stop_strings.h): every match starts in the held text, since all text
// before it was released only when no stop string could begin there.
#include "generate/stop_strings.h"

#include <algorithm>

namespace moex::generate {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return "";
  held_ += text;
  size_t first = std::string::npos;  // the earliest match of any stop string
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the longest suffix that is a proper prefix of a stop string. A stop string starts
  // with a whole character, so the suffix starts on a character boundary of held_.
  size_t keep = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
      if (std::string_view(held_).substr(held_.size() - n) == std::string_view(s).substr(0, n)) {
        keep = n;
        break;
      }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::flush() {
  std::string out = stopped_ ? std::string() : std::move(held_);
  held_.clear();
  return out;
}

}  // namespace moex::generate
