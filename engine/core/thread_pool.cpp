#include "engine/core/thread_pool.h"

#include <algorithm>
#include <chrono>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hearth {

namespace {
// Range `chunk` of `chunks` equal parts of [0, n).
void chunk_range(int64_t n, int64_t chunks, int64_t chunk, int64_t* begin, int64_t* end) {
  *begin = n * chunk / chunks;
  *end = n * (chunk + 1) / chunks;
}
// How long a thread polls for its next event before it sleeps: longer than the gap between the
// parallel loops of one decode step, short enough to cost nothing when the pool is idle.
constexpr auto kSpin = std::chrono::microseconds(100);

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Polls `done` for up to kSpin; true when it became true.
template <class Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::min<int64_t>(size(), (n + grain - 1) / grain);
  if (chunks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = static_cast<int>(chunks) - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  int64_t b, e;
  chunk_range(n, chunks, 0, &b, &e);
  std::exception_ptr mine;
  try {
    fn(b, e);
  } catch (...) {
    mine = std::current_exception();
  }
  spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
  std::exception_ptr error = mine ? mine : error_;
  error_ = nullptr;
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n, chunks;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (index < chunks) {
      int64_t b, e;
      chunk_range(n, chunks, index, &b, &e);
      std::exception_ptr error;
      try {
        (*job)(b, e);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      if (error && !error_) error_ = error;
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
}

}  // namespace hearth
