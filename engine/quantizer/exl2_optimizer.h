// Picks one measured setting per module (attention or MLP of each layer) so that the decoder's
// storage stays within a bit budget with the least total error Σ (1 − accuracy). exllamav2
// (docs/FORMATS.md §3.5) does this with simulated annealing over Σ err^norm, choosing the norm
// whose solution has the smallest worst-module error; here the multiple-choice knapsack is
// solved exactly by dynamic programming over a fine cost grid (costs rounded up, so the result
// always fits), then the rounding slack is spent greedily. The plain sum measured better on
// held-out text.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth::quantizer {

struct SlotOption {
  int64_t cost = 0;  // bits
  double error = 0;  // 1 − accuracy
};

struct OptimizerResult {
  std::vector<int> choice;  // option index per slot
  int64_t cost = 0;
  double max_error = 0;
  double sum_error = 0;
  double norm = 0;  // the error norm that won
};

// Error(kInvalidArgument) when even the cheapest option of every slot exceeds the budget (the
// message gives the smallest achievable cost).
OptimizerResult optimize_exl2(const std::vector<std::vector<SlotOption>>& slots, int64_t budget);

}  // namespace hearth::quantizer
