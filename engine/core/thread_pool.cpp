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
// Ranges per thread of a loop: enough that the others can take over from a thread that is not
// running, few enough that claiming them costs nothing next to the loop.
constexpr int64_t kRangesPerThread = 2;
// next_range_ holds a job's generation in its high 32 bits and a range index in its low 32.
constexpr uint64_t kGenerationMask = 0xffffffffu;

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
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
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
  const int64_t chunks = std::min<int64_t>(size() * kRangesPerThread, (n + grain - 1) / grain);
  if (chunks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    ranges_left_ = chunks;
    generation = ++generation_;
    next_range_ = (generation & kGenerationMask) << 32;
  }
  start_cv_.notify_all();
  run_ranges(generation, fn, n, chunks);
  spin_until([this] { return ranges_left_.load(std::memory_order_acquire) == 0; });
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return ranges_left_ == 0; });
  job_ = nullptr;
  std::exception_ptr error = error_;
  error_ = nullptr;
  if (error) std::rethrow_exception(error);
}

void ThreadPool::run_ranges(uint64_t generation, const std::function<void(int64_t, int64_t)>& fn,
                            int64_t n, int64_t chunks) {
  const uint64_t tag = (generation & kGenerationMask) << 32;
  for (;;) {
    uint64_t next = next_range_.load(std::memory_order_relaxed);
    do {
      if ((next & ~kGenerationMask) != tag ||
          static_cast<int64_t>(next & kGenerationMask) >= chunks)
        return;
    } while (!next_range_.compare_exchange_weak(next, next + 1, std::memory_order_acq_rel));
    int64_t b, e;
    chunk_range(n, chunks, static_cast<int64_t>(next & kGenerationMask), &b, &e);
    try {
      fn(b, e);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    if (ranges_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);  // the waiter checks under the lock: no lost wake-up
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
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
    // A job may be over already (its caller ran every range): then nothing is claimed and
    // `job` is not called.
    if (job) run_ranges(seen, *job, n, chunks);
  }
}

}  // namespace hearth
