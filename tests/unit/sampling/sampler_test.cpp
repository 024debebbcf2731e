// The sampler against distributions computed here from the definitions of each filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"

namespace hearth {
namespace {

int32_t draw(std::vector<float> logits, const SamplingParams& p, uint64_t index,
             std::vector<int32_t> history = {}, int32_t generated = 0) {
  SampleRequest r;
  r.params = &p;
  r.history = history;
  r.generated_count = generated;
  r.draw_index = index;
  return sample_token(logits, r);
}

// Empirical frequencies over many draws.
std::map<int32_t, double> frequencies(const std::vector<float>& logits, const SamplingParams& p,
                                      int n = 40000) {
  std::map<int32_t, double> f;
  for (int i = 0; i < n; ++i) f[draw(logits, p, static_cast<uint64_t>(i))] += 1.0 / n;
  return f;
}

std::vector<double> softmax(const std::vector<float>& l, double t) {
  const double m = *std::max_element(l.begin(), l.end());
  std::vector<double> p(l.size());
  double s = 0;
  for (size_t i = 0; i < l.size(); ++i) s += (p[i] = std::exp((l[i] - m) / t));
  for (auto& x : p) x /= s;
  return p;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 2.5f, -1.0f, 0.0f, 2.9f, 0.5f};

TEST(Sampler, GreedyTakesTheFirstMaximum) {
  SamplingParams p;
  EXPECT_EQ(draw({0.f, 5.f, 5.f, 1.f}, p, 0), 1);
  EXPECT_EQ(draw(kLogits, p, 7), 1);
  p.temperature = 0.8f;
  p.top_k = 1;
  EXPECT_EQ(draw(kLogits, p, 3), 1);
}

TEST(Sampler, TemperatureMatchesSoftmax) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.seed = 11;
  const auto expected = softmax(kLogits, 0.7);
  const auto f = frequencies(kLogits, p);
  for (size_t i = 0; i < kLogits.size(); ++i) {
    const double got = f.count(static_cast<int32_t>(i)) ? f.at(static_cast<int32_t>(i)) : 0.0;
    EXPECT_NEAR(got, expected[i], 0.01) << "token " << i;
  }
}

TEST(Sampler, TopKTopPMinPKeepTheDefinedSets) {
  SamplingParams p;
  p.temperature = 1.0f;
  // top-k 3: tokens 1, 5, 2 renormalised.
  p.top_k = 3;
  auto f = frequencies(kLogits, p);
  EXPECT_EQ(f.size(), 3u);
  const double z = std::exp(3.0) + std::exp(2.9) + std::exp(2.5);
  EXPECT_NEAR(f[1], std::exp(3.0) / z, 0.01);
  EXPECT_NEAR(f[2], std::exp(2.5) / z, 0.01);
  // top-p: smallest prefix (by probability) whose mass reaches top_p.
  p.top_k = 0;
  const auto probs = softmax(kLogits, 1.0);
  std::vector<int> order(kLogits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
  p.top_p = static_cast<float>(probs[order[0]] + probs[order[1]] + 0.01);  // needs 3 tokens
  f = frequencies(kLogits, p);
  EXPECT_EQ(f.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(f.count(order[i]));
  // min-p 0.5: keep tokens with p >= 0.5 * p_max.
  p.top_p = 1.0f;
  p.min_p = 0.5f;
  f = frequencies(kLogits, p);
  for (size_t i = 0; i < kLogits.size(); ++i) {
    const bool allowed = probs[i] >= 0.5 * probs[order[0]];
    EXPECT_EQ(f.count(static_cast<int32_t>(i)) > 0, allowed) << "token " << i;
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentStream) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 1234;
  std::vector<int32_t> a, b, c;
  for (uint64_t i = 0; i < 64; ++i) {
    a.push_back(draw(kLogits, p, i));
    b.push_back(draw(kLogits, p, i));
  }
  p.seed = 99;
  for (uint64_t i = 0; i < 64; ++i) c.push_back(draw(kLogits, p, i));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// The draw walks the candidates in logit order but sorts them only as far as it goes (the first
// 64, then doubling). Against the definition with everything sorted: flat rows whose draws land
// hundreds of candidates deep, ties (the lower id first), top-k above and below the first sort,
// deep top-p cuts and min-p; and sampling_distribution's survivors in the same order.
TEST(Sampler, DrawsThatWalkDeepPickWhatAFullSortPicks) {
  std::mt19937 rng(5);
  for (const float spread : {0.05f, 1.0f, 6.0f}) {
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> logits(5000);
    for (float& l : logits) l = std::round(normal(rng) * 64.0f) / 64.0f;  // many ties
    std::vector<SamplingParams> params(5);
    params[0].temperature = 1.0f;
    params[1].temperature = 0.8f;
    params[1].top_k = 300;
    params[2].temperature = 1.3f;
    params[2].top_p = 0.97f;
    params[3].temperature = 0.9f;
    params[3].min_p = 0.01f;
    params[4].temperature = 1.0f;
    params[4].top_k = 50;
    params[4].top_p = 0.9f;
    for (const SamplingParams& p : params) {
      // The definition: every candidate sorted, softmax over the top-k, then top-p and min-p.
      std::vector<int32_t> order(logits.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
      if (p.top_k > 0) order.resize(static_cast<size_t>(p.top_k));
      std::vector<double> prob(order.size());
      double sum = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        prob[i] = std::exp((static_cast<double>(logits[order[i]]) - logits[order[0]]) /
                           static_cast<double>(p.temperature));
        sum += prob[i];
      }
      for (double& q : prob) q /= sum;
      size_t n = order.size();
      double cum = 0;
      for (size_t i = 0; p.top_p < 1.0f && i < n; ++i) {
        cum += prob[i];
        if (cum >= p.top_p) n = i + 1;
      }
      size_t m = 1;
      while (p.min_p > 0.0f && m < n && prob[m] >= p.min_p * prob[0]) ++m;
      if (p.min_p > 0.0f) n = m;
      double mass = 0;
      for (size_t i = 0; i < n; ++i) mass += prob[i];
      int deep = 0;
      for (uint64_t index = 0; index < 200; ++index) {
        const double u = sampling_uniform(p.seed, index) * mass;
        double c = 0;
        int32_t expected = order[n - 1];
        for (size_t i = 0; i < n; ++i) {
          c += prob[i];
          if (u < c) {
            expected = order[i];
            deep += i >= 64;
            break;
          }
        }
        ASSERT_EQ(draw(logits, p, index), expected) << "spread " << spread << " draw " << index;
      }
      if (spread < 0.1f && p.top_k == 0 && p.min_p == 0.0f) EXPECT_GT(deep, 100);
      std::vector<float> row = logits;
      SampleRequest r;
      r.params = &p;
      const TokenDistribution d = sampling_distribution(row, r);
      if (p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f) {
        ASSERT_EQ(d.tokens.size(), n);
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(d.tokens[i], order[i]) << i;
      }
    }
  }
}

TEST(Sampler, PenaltiesFollowHuggingFaceAndOpenAi) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f};
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  SampleRequest r;
  r.params = &p;
  std::vector<int32_t> hist = {0, 1, 1};
  r.history = hist;
  apply_logit_adjustments(l, r);
  EXPECT_FLOAT_EQ(l[0], 1.0f);   // positive: divided
  EXPECT_FLOAT_EQ(l[1], -4.0f);  // negative: multiplied, once although seen twice
  EXPECT_FLOAT_EQ(l[2], 1.0f);
  // OpenAI penalties count generated tokens only (the last two of the history here).
  l = {2.0f, -2.0f, 1.0f, 0.5f};
  p = SamplingParams{};
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  hist = {3, 2, 2, 0};
  r.history = hist;
  r.generated_count = 3;  // tokens 2, 2, 0
  apply_logit_adjustments(l, r);
  EXPECT_FLOAT_EQ(l[0], 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 1.0f - 1.0f - 0.25f);
  EXPECT_FLOAT_EQ(l[3], 0.5f);  // prompt token: untouched
  // The penalty window looks at the most recent tokens only.
  l = {2.0f, -2.0f, 1.0f, 0.5f};
  p = SamplingParams{};
  p.repetition_penalty = 2.0f;
  p.penalty_last_n = 1;
  hist = {0, 2};
  r.history = hist;
  r.generated_count = 0;
  apply_logit_adjustments(l, r);
  EXPECT_FLOAT_EQ(l[0], 2.0f);
  EXPECT_FLOAT_EQ(l[2], 0.5f);
}

TEST(Sampler, LogitBiasAddsAfterThePenaltiesAndCanBanOrForce) {
  const std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f};
  SamplingParams p;
  p.logit_bias = {{0, -100.0f}};  // bans the argmax
  EXPECT_EQ(draw(l, p, 0), 2);
  p.logit_bias = {{3, 100.0f}};  // forces a token, also when sampling
  p.temperature = 1.0f;
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(draw(l, p, i), 3);
  // Bias on a penalised token: the penalty first, then the bias (OpenAI: added to the logits).
  std::vector<float> adjusted = l;
  SamplingParams q;
  q.repetition_penalty = 2.0f;
  q.presence_penalty = 0.5f;
  q.logit_bias = {{0, 1.5f}, {1, -1.0f}};
  SampleRequest r;
  r.params = &q;
  const std::vector<int32_t> hist = {0, 1};
  r.history = hist;
  r.generated_count = 1;  // token 1 was generated
  apply_logit_adjustments(adjusted, r);
  EXPECT_FLOAT_EQ(adjusted[0], 2.0f / 2.0f + 1.5f);
  EXPECT_FLOAT_EQ(adjusted[1], -2.0f * 2.0f - 0.5f - 1.0f);
  EXPECT_FLOAT_EQ(adjusted[2], 1.0f);
  // One adjustment per token, in token order: what the GPU sampler applies too.
  const auto list = logit_adjustments(r, 4);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].token, 0);
  EXPECT_EQ(list[1].token, 1);
}

TEST(Sampler, ValidateRejectsBadValues) {
  SamplingParams p;
  p.temperature = -1;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.top_p = 0;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.min_p = std::nanf("");
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.top_k = -3;
  EXPECT_THROW(p.validate(), Error);
  p = {};
  p.logit_bias = {{3, 101.0f}};
  EXPECT_THROW(p.validate(), Error);
  p.logit_bias = {{3, std::nanf("")}};
  EXPECT_THROW(p.validate(), Error);
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_THROW(p.validate(), Error);
  p.logit_bias = {{3, 1.0f}};
  EXPECT_THROW(p.validate(/*vocab=*/3), Error);  // ids past the vocabulary
  EXPECT_NO_THROW(p.validate(4));
  p = {};
  EXPECT_NO_THROW(p.validate());
}

// Log-probabilities against the definition, log softmax, computed here in long double.
TEST(Logprobs, ChosenAndTopAlternativesAreTheLogSoftmax) {
  const std::vector<float> l = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  long double sum = 0;
  for (float x : l) sum += std::exp(static_cast<long double>(x));
  auto expect = [&](int32_t t) {
    return static_cast<double>(static_cast<long double>(l[t]) - std::log(sum));
  };
  const TokenLogprobs lp = token_logprobs(l, 4, 3);
  EXPECT_EQ(lp.token, 4);
  EXPECT_NEAR(lp.logprob, expect(4), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);  // tie with 3: the lower id first
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 0);
  for (const auto& [t, v] : lp.top) EXPECT_NEAR(v, expect(t), 1e-6);
  EXPECT_TRUE(token_logprobs(l, 0, 0).top.empty());
  // Extreme logits stay finite.
  const TokenLogprobs far = token_logprobs(std::vector<float>{1000.0f, -1000.0f}, 1, 1);
  EXPECT_NEAR(far.logprob, -2000.0f, 1e-2);
  EXPECT_EQ(far.top[0].first, 0);
}

TEST(Sampler, UniformDrawIsInUnitIntervalAndSpread) {
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const float u = sampling_uniform(5, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);
}

}  // namespace
}  // namespace hearth
