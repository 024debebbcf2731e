// Checking a proposed token against the model's own distribution (speculative sampling): the
// proposal is kept with probability min(1, p(x) / q(x)), and a rejected one is replaced by a draw
// from the residual max(0, p - q), renormalised. Whatever proposes (a draft model with its
// distribution q, or a lookup whose proposal is certain: q = 1 on it), the tokens that come out
// are distributed exactly as sampling from p, so speculation changes speed, never the output's
// distribution. Greedy requests keep the proposal exactly when it is p's argmax.
#pragma once

#include <cstdint>
#include <span>

#include "engine/sampling/sampling_params.h"

namespace hearth {

struct SpeculativeVerdict {
  bool accepted = false;
  int32_t token = 0;  // the proposal when accepted, else its replacement
};

// `logits` is the model's row for the proposal's position (modified in place, as by
// sample_token); `request` the same as sampling that position would use. `draft_probs`: the
// proposer's probability of every token (vocab entries), or empty for a certain proposal. The
// two draws use streams of the request's seed that sample_token does not use, indexed by the
// request's draw_index.
SpeculativeVerdict verify_proposal(std::span<float> logits, const SampleRequest& request,
                                   int32_t proposed, std::span<const float> draft_probs = {});

// The token a row of logits gives: sample_token's, or, when `request` carries a proposal,
// verify_proposal's verdict (the proposal exactly when it is kept: a replacement never equals
// it). What every backend's sample() computes.
int32_t sample_or_verify(std::span<float> logits, const SampleRequest& request);

// The two uniform draws verify_proposal makes for a request (the GPU sampler makes the same).
struct SpeculativeUniforms {
  float accept = 0;    // the proposal is kept when accept × q(proposal) < p(proposal)
  float residual = 0;  // scaled by the residual's mass, picks the replacement
};
SpeculativeUniforms speculative_uniforms(uint64_t seed, uint64_t draw_index);

}  // namespace hearth
