// The reference sampler: picks the next token from one row of logits following
// SamplingParams (penalties, temperature, top-k, top-p, min-p, then one uniform draw).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling/sampling_params.h"

namespace hearth {

// `logits` is modified (penalties and filtering are applied in place).
int32_t sample_token(std::span<float> logits, const SampleRequest& request);

// The distribution sample_token draws from: the tokens that survive top-k, top-p and min-p, with
// their probabilities renormalised to sum to 1 (most likely first; in id order when nothing is
// cut, which spares sorting the vocabulary). Greedy requests (temperature 0 or top_k 1) give the
// argmax alone. `logits` is modified as by sample_token.
struct TokenDistribution {
  std::vector<int32_t> tokens;
  std::vector<double> probs;
  double prob_of(int32_t token) const;  // 0 for a token that was filtered out
};
TokenDistribution sampling_distribution(std::span<float> logits, const SampleRequest& request);
bool is_greedy(const SamplingParams& params);

// What the penalties and the logit bias do to one token's logit: first the repetition penalty
// (logit / repetition when positive, logit * repetition otherwise; 1 is none), then
// logit -= subtract.
struct LogitAdjustment {
  int32_t token = 0;
  float repetition = 1.0f;
  float subtract = 0.0f;
};

// The adjustments `request` makes to a row of `vocab` logits, one per token, in ascending token
// order. Every backend applies exactly these, so penalties and bias give the same bits everywhere.
std::vector<LogitAdjustment> logit_adjustments(const SampleRequest& request, int64_t vocab);

// Applies logit_adjustments(request, logits.size()) to `logits` in place.
void apply_logit_adjustments(std::span<float> logits, const SampleRequest& request);

}  // namespace hearth
