// Holds back generated text while it could still turn into a stop string, so that no part of
// a stop string is ever shown.
#pragma once

#include <string>
#include <vector>

namespace hearth {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stop_strings);

  // Adds text; returns what is now safe to emit. Once a stop string appears, returns the text
  // before it and stopped() becomes true (later calls return nothing).
  std::string push(const std::string& text);
  // The text still held back (emit it when generation ends for another reason).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace hearth
