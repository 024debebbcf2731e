// A fixed set of worker threads that split loops into contiguous ranges. The calling thread
// takes part, so a pool of one thread runs everything inline. A loop is cut into a few ranges
// per thread that the threads claim one at a time, so a thread the OS has not scheduled (another
// program busy on its core) holds up at most the range it claimed, not a fixed share: the
// others take what it has not started.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hearth {

class ThreadPool {
 public:
  // threads <= 0: one per hardware thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) on disjoint ranges covering [0, n), in parallel, and waits. Ranges
  // hold at least `grain` items; which thread runs which range varies from call to call. If fn
  // throws, the first exception is rethrown here once every range has finished.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  // Claims and runs ranges of the job of generation `generation` until none is left.
  void run_ranges(uint64_t generation, const std::function<void(int64_t, int64_t)>& fn, int64_t n,
                  int64_t chunks);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunks_ = 0;
  // Atomic so that a thread can spin on them for a moment before it sleeps on a condition
  // variable: decode runs hundreds of short parallel loops per token, and a futex wake-up per
  // loop costs more than the loop. generation_ is written under mutex_ all the same.
  std::atomic<uint64_t> generation_ = 0;
  // The job's generation (low 32 bits) above the next unclaimed range: a thread still holding
  // an earlier job claims nothing from a later one.
  std::atomic<uint64_t> next_range_ = 0;
  std::atomic<int64_t> ranges_left_ = 0;  // claimed or not, not yet finished
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace hearth
