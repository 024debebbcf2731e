#include "engine/generate/stop_matcher.h"

#include <algorithm>

namespace hearth {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) {
  for (auto& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopMatcher::push(const std::string& text) {
  if (stopped_) return {};
  pending_ += text;
  // The earliest complete stop string ends generation.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Keep the longest tail that is a prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n) {
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace hearth
