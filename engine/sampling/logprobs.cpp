#include "engine/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"

namespace hearth {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t top) {
  HEARTH_CHECK(!logits.empty() && token >= 0 && static_cast<size_t>(token) < logits.size(),
               "token_logprobs: token outside the logits");
  HEARTH_CHECK(top >= 0 && top <= kMaxTopLogprobs, "token_logprobs: top out of range");
  // log-sum-exp in double, shifted by the maximum.
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  const double lse = max + std::log(sum);
  auto logprob = [&](int32_t t) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(t)]) - lse);
  };

  TokenLogprobs out;
  out.token = token;
  out.logprob = logprob(token);
  const auto n = std::min<size_t>(static_cast<size_t>(top), logits.size());
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](int32_t a, int32_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  for (size_t i = 0; i < n; ++i) out.top.emplace_back(order[i], logprob(order[i]));
  return out;
}

}  // namespace hearth
