#include "engine/sampling/speculative_sampling.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/sampling/sampler.h"

namespace hearth {

namespace {
// Seeds of the acceptance and residual draws: apart from the seed of ordinary sampling, so a
// position's acceptance test is independent of the draw that would have sampled it.
constexpr uint64_t kAcceptStream = 0x5bd1e9955bd1e995ull;
constexpr uint64_t kResidualStream = 0xc2b2ae3d27d4eb4full;
}  // namespace

SpeculativeUniforms speculative_uniforms(uint64_t seed, uint64_t draw_index) {
  return {sampling_uniform(seed ^ kAcceptStream, draw_index),
          sampling_uniform(seed ^ kResidualStream, draw_index)};
}

int32_t sample_or_verify(std::span<float> logits, const SampleRequest& request) {
  if (request.proposed < 0) return sample_token(logits, request);
  return verify_proposal(logits, request, request.proposed, request.draft_probs).token;
}

SpeculativeVerdict verify_proposal(std::span<float> logits, const SampleRequest& request,
                                   int32_t proposed, std::span<const float> draft_probs) {
  HEARTH_CHECK(proposed >= 0 && static_cast<size_t>(proposed) < logits.size(),
               "proposed token outside the vocabulary");
  HEARTH_CHECK(draft_probs.empty() || draft_probs.size() == logits.size(),
               "draft probabilities do not cover the vocabulary");
  const TokenDistribution p = sampling_distribution(logits, request);
  if (p.tokens.size() == 1) return {p.tokens[0] == proposed, p.tokens[0]};

  const SpeculativeUniforms draws = speculative_uniforms(request.params->seed, request.draw_index);
  const double q_proposed = draft_probs.empty() ? 1.0 : draft_probs[static_cast<size_t>(proposed)];
  const double p_proposed = p.prob_of(proposed);
  // Kept with probability min(1, p/q): u < p/q, written without dividing (q may be tiny).
  const double u = draws.accept;
  if (p_proposed > 0 && u * q_proposed < p_proposed) return {true, proposed};

  // The residual max(0, p - q) over p's candidates (q is 0 elsewhere only where p is too, since
  // only p's candidates can be drawn). With a certain proposal it is p without the proposal.
  std::vector<double> residual(p.tokens.size());
  double mass = 0;
  for (size_t i = 0; i < p.tokens.size(); ++i) {
    const double q = draft_probs.empty()
                         ? (p.tokens[i] == proposed ? 1.0 : 0.0)
                         : static_cast<double>(draft_probs[static_cast<size_t>(p.tokens[i])]);
    residual[i] = std::max(0.0, p.probs[i] - q);
    mass += residual[i];
  }
  if (mass <= 0) {
    // Only when p <= q everywhere, i.e. p == q up to rounding: the proposal was a draw from p.
    return {true, proposed};
  }
  const double r = static_cast<double>(draws.residual) * mass;
  double cum = 0;
  for (size_t i = 0; i < p.tokens.size(); ++i) {
    cum += residual[i];
    if (r < cum && residual[i] > 0) return {false, p.tokens[i]};
  }
  for (size_t i = p.tokens.size(); i-- > 0;) {
    if (residual[i] > 0) return {false, p.tokens[i]};
  }
  return {false, p.tokens.back()};
}

}  // namespace hearth
