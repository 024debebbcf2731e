// A flag one thread raises to stop work running on another; the work polls it at safe points
// and ends with Error(kCancelled).
#pragma once

#include <atomic>
#include <memory>

namespace hearth {

class CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const { flag_->store(true, std::memory_order_relaxed); }
  void reset() const { flag_->store(false, std::memory_order_relaxed); }
  bool cancelled() const { return flag_->load(std::memory_order_relaxed); }
  void throw_if_cancelled() const;  // Error(kCancelled)

 private:
  std::shared_ptr<std::atomic<bool>> flag_;  // copies share the flag
};

}  // namespace hearth
