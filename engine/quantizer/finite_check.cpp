#include "engine/quantizer/finite_check.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "engine/core/thread_pool.h"

namespace hearth::quantizer {

bool all_finite(const std::vector<float>& values, ThreadPool& pool) {
  constexpr int64_t kChunk = 1 << 16;
  const auto n = static_cast<int64_t>(values.size());
  std::atomic<bool> finite{true};
  pool.parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t c0, int64_t c1) {
    bool ok = true;
    for (int64_t i = c0 * kChunk; i < std::min(n, c1 * kChunk); ++i) {
      ok = ok && std::isfinite(values[static_cast<size_t>(i)]);
    }
    if (!ok) finite = false;
  });
  return finite;
}

}  // namespace hearth::quantizer
