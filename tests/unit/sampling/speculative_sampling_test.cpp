// The acceptance test of speculative sampling: whatever the proposer, the tokens that come out
// are distributed as the target distribution (chi-square over many draw indices).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/sampling/sampler.h"
#include "engine/sampling/speculative_sampling.h"

namespace hearth {
namespace {

const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -3.0f};

std::vector<double> target(const SamplingParams& params) {
  std::vector<float> l = kLogits;
  SampleRequest r;
  r.params = &params;
  const TokenDistribution d = sampling_distribution(l, r);
  std::vector<double> p(kLogits.size(), 0.0);
  for (size_t i = 0; i < d.tokens.size(); ++i) p[static_cast<size_t>(d.tokens[i])] = d.probs[i];
  return p;
}

// Chi-square statistic of counts against probabilities (cells expected >= 5 only).
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * n;
    if (e >= 5) chi2 += (counts[i] - e) * (counts[i] - e) / e;
    if (e == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " is outside the distribution";
    }
  }
  return chi2;
}

struct Draws {
  std::vector<int> counts = std::vector<int>(kLogits.size(), 0);
  int accepted = 0;
};

Draws draw(const SamplingParams& params, int32_t proposed, const std::vector<float>& draft, int n) {
  Draws d;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = kLogits;
    SampleRequest r;
    r.params = &params;
    r.draw_index = static_cast<uint64_t>(i);
    // A draft model's proposal is a draw from its own distribution.
    int32_t x = proposed;
    if (!draft.empty()) {
      const double u = sampling_uniform(params.seed + 99, static_cast<uint64_t>(i));
      double cum = 0;
      for (x = 0; x < static_cast<int32_t>(draft.size()) - 1; ++x) {
        cum += draft[static_cast<size_t>(x)];
        if (u < cum) break;
      }
    }
    const SpeculativeVerdict v = verify_proposal(l, r, x, draft);
    ++d.counts[static_cast<size_t>(v.token)];
    d.accepted += v.accepted;
    if (v.accepted) {
      EXPECT_EQ(v.token, x);
    }
  }
  return d;
}

constexpr int kDraws = 20000;
constexpr double kCritical5 = 20.5;  // chi-square, 5 degrees of freedom, 0.1 % level

TEST(SpeculativeSampling, CertainProposalsKeepTheTargetDistribution) {
  SamplingParams params;
  params.temperature = 1.0f;
  params.seed = 5;
  const std::vector<double> p = target(params);
  for (int32_t proposed : {0, 2, 5}) {
    SCOPED_TRACE("proposal " + std::to_string(proposed));
    const Draws d = draw(params, proposed, {}, kDraws);
    EXPECT_LT(chi_square(d.counts, p, kDraws), kCritical5);
    // A certain proposal is kept with probability p(proposal).
    EXPECT_NEAR(d.accepted / double(kDraws), p[static_cast<size_t>(proposed)], 0.015);
  }
}

TEST(SpeculativeSampling, DraftDistributionsKeepTheTargetDistribution) {
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_p = 0.95f;
  params.seed = 11;
  const std::vector<double> p = target(params);
  const std::vector<float> close = {0.4f, 0.3f, 0.1f, 0.1f, 0.05f, 0.05f};
  const std::vector<float> far = {0.05f, 0.05f, 0.1f, 0.2f, 0.3f, 0.3f};
  for (const auto& q : {close, far}) {
    const Draws d = draw(params, 0, q, kDraws);
    EXPECT_LT(chi_square(d.counts, p, kDraws), kCritical5);
    // Acceptance is sum over x of min(p(x), q(x)).
    double overlap = 0;
    for (size_t i = 0; i < p.size(); ++i) overlap += std::min(p[i], static_cast<double>(q[i]));
    EXPECT_NEAR(d.accepted / double(kDraws), overlap, 0.015);
  }
}

TEST(SpeculativeSampling, GreedyKeepsExactlyTheArgmax) {
  SamplingParams greedy;
  std::vector<float> l = kLogits;
  SampleRequest r;
  r.params = &greedy;
  EXPECT_TRUE(verify_proposal(l, r, 0).accepted);
  l = kLogits;
  const SpeculativeVerdict v = verify_proposal(l, r, 3);
  EXPECT_FALSE(v.accepted);
  EXPECT_EQ(v.token, 0);
}

// What backends compute per row: the sample without a proposal, the verdict with one, and the
// verdict's token tells whether the proposal was kept (a replacement never equals it).
TEST(SpeculativeSampling, SampleOrVerifyGivesTheVerdictsToken) {
  SamplingParams params;
  params.temperature = 0.9f;
  params.top_k = 4;
  params.seed = 3;
  const std::vector<float> q = {0.1f, 0.5f, 0.1f, 0.1f, 0.1f, 0.1f};
  int kept = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    SampleRequest r;
    r.params = &params;
    r.draw_index = i;
    std::vector<float> a = kLogits, b = kLogits;
    EXPECT_EQ(sample_or_verify(a, r), sample_token(b, r));
    for (const bool with_draft : {false, true}) {
      r.proposed = static_cast<int32_t>(i % 6);
      r.draft_probs = with_draft ? std::span<const float>(q) : std::span<const float>();
      a = kLogits;
      b = kLogits;
      const SpeculativeVerdict v = verify_proposal(b, r, r.proposed, r.draft_probs);
      const int32_t token = sample_or_verify(a, r);
      EXPECT_EQ(token, v.token);
      EXPECT_EQ(token == r.proposed, v.accepted) << "draw " << i;
      kept += v.accepted;
      r.draft_probs = {};
    }
    r.proposed = -1;
  }
  EXPECT_GT(kept, 0);
}

}  // namespace
}  // namespace hearth
