// ThreadPool: every index once, exceptions reach the caller, a thread stuck in one range holds up
// only that range, thousands of back-to-back loops (the decode pattern, where threads spin
// between loops) and loops after the threads slept.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/core/thread_pool.h"

namespace hearth {
namespace {

TEST(ThreadPool, CoversEveryIndexOnceInContiguousRanges) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      for (int64_t grain : {1, 3, 100}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> calls = 0;
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          ASSERT_LT(b, e);
          ++calls;
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << n << " " << i;
        // At most two ranges per thread, and none shorter than the grain unless n is.
        EXPECT_LE(calls, 2 * threads);
        EXPECT_LE(calls, std::max<int64_t>(1, (n + grain - 1) / grain));
      }
    }
  }
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(4);
  for (int thrower = 0; thrower < 4; ++thrower) {
    EXPECT_THROW(pool.parallel_for(4, 1,
                                   [&](int64_t b, int64_t) {
                                     if (b == thrower) throw std::runtime_error("boom");
                                   }),
                 std::runtime_error);
  }
  // The pool still works afterwards.
  std::atomic<int64_t> sum = 0;
  pool.parallel_for(100, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum, 4950);
}

// A thread that does not get to run (here: stuck in its first range, as when another program
// holds its core) delays the loop by the range it claimed only, a quarter of a 2-thread loop
// (two ranges per thread): the caller takes the rest, where a fixed share would be half.
TEST(ThreadPool, OtherThreadsTakeOverTheRangesOfAStuckThread) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  int stuck_rounds = 0;
  for (int round = 0; round < 5; ++round) {
    std::mutex m;
    std::map<std::thread::id, int64_t> items;
    std::atomic<bool> stuck = false;
    pool.parallel_for(8, 1, [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() != caller && !stuck.exchange(true)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // time for the worker to claim
      }
      std::lock_guard lock(m);
      items[std::this_thread::get_id()] += e - b;
    });
    if (stuck) ++stuck_rounds;
    EXPECT_LE(8 - items[caller], 2) << "round " << round;
  }
  EXPECT_GT(stuck_rounds, 0);  // the worker did claim a range at least once
}

TEST(ThreadPool, ManyShortLoopsBackToBack) {
  ThreadPool pool(2);
  std::vector<int64_t> data(256);
  std::iota(data.begin(), data.end(), 0);
  int64_t expected = 0;
  for (int round = 0; round < 20000; ++round) {
    const int64_t n = 1 + round % 256;  // the chunk count varies too
    std::atomic<int64_t> sum = 0;
    pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += data[static_cast<size_t>(i)];
      sum += s;
    });
    ASSERT_EQ(sum, n * (n - 1) / 2) << "round " << round;
    expected += sum;
  }
  EXPECT_GT(expected, 0);
}

TEST(ThreadPool, WorksAfterTheThreadsSleptAndShutsDownIdle) {
  for (int repeat = 0; repeat < 3; ++repeat) {
    ThreadPool pool(3);
    std::atomic<int> count = 0;
    pool.parallel_for(3, 1, [&](int64_t b, int64_t e) { count += static_cast<int>(e - b); });
    // Well past the spinning time: the workers wait on the condition variable now.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.parallel_for(3, 1, [&](int64_t b, int64_t e) { count += static_cast<int>(e - b); });
    EXPECT_EQ(count, 6);
    if (repeat == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // destroyed while spinning (repeats 0, 2) and while asleep (repeat 1)
}

}  // namespace
}  // namespace hearth
