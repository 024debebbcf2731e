// Speculative decoding with prompt lookup: proposals, draft lengths, and the generator's
// promise that speculation changes speed only (greedy: the same tokens; sampling: the same
// distribution, checked with a chi-square test against the model's exact probabilities).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/generate/draft_length.h"
#include "engine/generate/ngram_proposer.h"
#include "engine/generate/speculation_governor.h"
#include "engine/sampling/sampler.h"
#include "tests/unit/generate/generator_fixture.h"

namespace hearth {
namespace {

TEST(NgramProposer, ProposesWhatFollowedTheLatestEarlierMatch) {
  const std::vector<int32_t> t = {1, 2, 3, 4, 9, 1, 2, 3, 5, 6, 7, 1, 2, 3};
  // "1 2 3" last occurred at 5..7, followed by 5 6 7 1 ...
  EXPECT_EQ(propose_from_ngrams(t, 3), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(propose_from_ngrams(t, 0), std::vector<int32_t>{});
  // The continuation stops at the end of the text.
  const std::vector<int32_t> u = {7, 8, 9, 7, 8};
  EXPECT_EQ(propose_from_ngrams(u, 5), (std::vector<int32_t>{9, 7, 8}));
  // No match of at least min_ngram tokens: nothing.
  EXPECT_TRUE(propose_from_ngrams(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 2}, 4).empty());
  NgramLookup single;
  single.min_ngram = 1;
  EXPECT_EQ(propose_from_ngrams(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 2}, 2, single),
            (std::vector<int32_t>{3, 4}));
  // A run of one token proposes more of it.
  EXPECT_EQ(propose_from_ngrams(std::vector<int32_t>{4, 4, 4, 4}, 3), (std::vector<int32_t>{4}));
}

TEST(SpeculationGovernor, PausesWhenSpeculationIsSlowerAndTriesAgain) {
  SpeculationGovernor g;
  EXPECT_FALSE(g.allows(1)) << "plain steps first, to compare with";
  g.record(0.01, 1, 1, false);  // 100 tokens/s without
  g.record(0.01, 1, 1, false);
  ASSERT_TRUE(g.allows(1));
  EXPECT_FALSE(g.allows(2)) << "rates are kept per number of jobs";
  // Speculative steps at 60 tokens/s: paused after they are judged.
  int speculative = 0;
  while (g.allows(1) && speculative < 100) {
    g.record(0.05, 3, 1, true);
    ++speculative;
  }
  EXPECT_EQ(speculative, 8);
  int plain = 0;
  while (!g.allows(1) && plain < 100) {
    g.record(0.01, 1, 1, false);
    ++plain;
  }
  EXPECT_EQ(plain, 16) << "the first pause";
  // Faster now (200 tokens/s): speculation stays on, with a plain step now and then.
  int plain_between = 0;
  for (int i = 0; i < 200; ++i) {
    if (g.allows(1)) {
      g.record(0.01, 2, 1, true);
    } else {
      g.record(0.01, 1, 1, false);
      ++plain_between;
    }
  }
  EXPECT_GT(plain_between, 0);
  EXPECT_LT(plain_between, 20);
  EXPECT_GT(g.rates(1).speculative, g.rates(1).plain);
}

TEST(DraftLength, GrowsWithAcceptanceAndPausesWhenProposalsFail) {
  DraftLength d(8);
  const int first = d.next();
  EXPECT_GE(first, 1);
  for (int i = 0; i < 10; ++i) d.record(d.next(), d.next());  // everything kept
  EXPECT_EQ(d.next(), 8);
  for (int i = 0; i < 20 && d.next() > 0; ++i) d.record(d.next(), 0);  // nothing kept
  EXPECT_EQ(d.next(), 0) << "poor acceptance pauses proposing";
  int paused = 0;
  while (d.next() == 0 && paused < 100) {
    d.skip();
    ++paused;
  }
  EXPECT_GT(paused, 0);
  EXPECT_LT(paused, 100) << "the pause ends and proposing is tried again";
  EXPECT_GE(d.next(), 1);
}

class SpeculationTest : public GeneratorTest {
 protected:
  static SpeculationOptions ngram(int max_draft = 8) {
    SpeculationOptions s;
    s.mode = SpeculationMode::kNgram;
    s.max_draft_tokens = max_draft;
    s.measured = false;  // the same proposals on every run, whatever the timing
    return s;
  }
  static SpeculationOptions draft(int max_draft = 4) {
    SpeculationOptions s = ngram(max_draft);
    s.mode = SpeculationMode::kDraft;
    return s;
  }
  // The distribution sampling would draw the token after `tokens` from.
  TokenDistribution exact_next(const std::vector<int32_t>& tokens, const SamplingParams& params,
                               int32_t generated) {
    std::vector<float> row = logits_after(tokens);
    SampleRequest r;
    r.params = &params;
    r.history = tokens;
    r.generated_count = generated;
    return sampling_distribution(row, r);
  }
  // Runs 4,096 sampled 3-token jobs (seeds from `first_seed`) on a repeating prompt whose two
  // tokens are lifted (logit bias) far above all others and level with each other after the
  // prompt, so proposals are both kept and replaced; checks the continuations' frequencies
  // against the model's exact probabilities with a chi-square test at the 0.1 % level.
  void expect_the_models_distribution(uint64_t first_seed) {
    SamplingParams params;
    params.temperature = 16.0f;  // the tiny model is very sure of itself
    params.top_k = 3;
    const std::vector<int32_t> prompt = tokenizer.encode("abababababababab", false);
    const std::vector<float> row = logits_after(prompt);
    const float level = std::max(row['a'], row['b']);
    for (const int32_t t : {int32_t{'a'}, int32_t{'b'}}) {
      params.logit_bias.emplace_back(t, 50.0f + level - row[static_cast<size_t>(t)]);
    }
    std::map<std::vector<int32_t>, double> expected;
    const TokenDistribution d1 = exact_next(prompt, params, 0);
    for (size_t i = 0; i < d1.tokens.size(); ++i) {
      auto p1 = prompt;
      p1.push_back(d1.tokens[i]);
      const TokenDistribution d2 = exact_next(p1, params, 1);
      for (size_t j = 0; j < d2.tokens.size(); ++j) {
        auto p2 = p1;
        p2.push_back(d2.tokens[j]);
        const TokenDistribution d3 = exact_next(p2, params, 2);
        for (size_t k = 0; k < d3.tokens.size(); ++k) {
          expected[{d1.tokens[i], d2.tokens[j], d3.tokens[k]}] =
              d1.probs[i] * d2.probs[j] * d3.probs[k];
        }
      }
    }
    constexpr int kRuns = 4096;
    std::map<std::vector<int32_t>, int> seen;
    int64_t proposed = 0, accepted = 0;
    for (int first = 0; first < kRuns; first += 64) {
      std::vector<JobRequest> batch;
      for (int i = first; i < first + 64; ++i) {
        JobRequest r;
        r.prompt = prompt;
        r.max_tokens = 3;
        r.ignore_eos = true;
        r.sampling = params;
        r.sampling.seed = first_seed + static_cast<uint64_t>(i);
        batch.push_back(std::move(r));
      }
      for (const JobResult& r : run(std::move(batch))) {
        ++seen[r.tokens];
        proposed += r.proposed_tokens;
        accepted += r.accepted_tokens;
      }
    }
    EXPECT_GT(accepted, kRuns / 20);
    EXPECT_GT(proposed - accepted, kRuns / 20) << "replacements must be exercised too";
    // Cells expected fewer than 5 times are pooled.
    double chi2 = 0, pooled_expected = 0;
    int pooled_seen = 0, cells = 0, total = 0;
    for (const auto& [seq, p] : expected) {
      const double e = p * kRuns;
      const int o = seen.count(seq) ? seen.at(seq) : 0;
      total += o;
      if (e < 5) {
        pooled_expected += e;
        pooled_seen += o;
        continue;
      }
      chi2 += (o - e) * (o - e) / e;
      ++cells;
    }
    if (pooled_expected > 0) {
      chi2 += (pooled_seen - pooled_expected) * (pooled_seen - pooled_expected) / pooled_expected;
      ++cells;
    }
    EXPECT_EQ(total, kRuns) << "a continuation the distribution does not allow was produced";
    // Wilson-Hilferty approximation of the chi-square quantile at 0.999.
    const double df = cells - 1;
    const double critical = df * std::pow(1 - 2 / (9 * df) + 3.090 * std::sqrt(2 / (9 * df)), 3.0);
    EXPECT_LT(chi2, critical) << cells << " cells, " << accepted << " of " << proposed
                              << " proposals kept";
  }
  // Prompts that repeat (so lookup proposes) and one that does not.
  const std::vector<std::string> prompts = {
      "abcabcabcabcabcabcabc", "int f(int x) { return x + 1; } int g(int x) { return x + 1; } int",
      "the cat sat on the mat. the cat sat on the mat. the cat", "qwertyuiop"};
};

TEST_F(SpeculationTest, GreedyOutputIsTheSameAsWithoutSpeculation) {
  auto requests = [&] {
    std::vector<JobRequest> all;
    for (size_t i = 0; i < prompts.size(); ++i) {
      JobRequest r = request(prompts[i], 48);
      if (i == 1) r.sampling.repetition_penalty = 1.2f;  // penalties see the proposals as history
      if (i == 2) r.stop_strings = {"mat"};
      all.push_back(std::move(r));
    }
    return all;
  };
  build(512);
  std::vector<JobResult> plain;
  for (auto& r : requests()) plain.push_back(run({std::move(r)})[0]);

  int64_t proposed = 0, accepted = 0;
  for (const int64_t budget : {512, 24}) {  // each alone; then together in small chunks
    SCOPED_TRACE("budget " + std::to_string(budget));
    build(budget, 256, 32, 8, true, ngram());
    std::vector<JobResult> spec;
    if (budget == 512) {
      for (auto& r : requests()) spec.push_back(run({std::move(r)})[0]);
    } else {
      spec = run(requests());
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "prompt " << i;
      EXPECT_EQ(spec[i].text, plain[i].text) << "prompt " << i;
      EXPECT_EQ(spec[i].end, plain[i].end) << "prompt " << i;
      EXPECT_LE(spec[i].accepted_tokens, spec[i].proposed_tokens);
      proposed += spec[i].proposed_tokens;
      accepted += spec[i].accepted_tokens;
    }
    generator->pages().check_invariants();
    EXPECT_EQ(generator->pages().available_pages(), generator->pages().num_pages());
  }
  EXPECT_GT(proposed, 0);
  EXPECT_GT(accepted, 0) << "the repeating prompts should have had proposals kept";
}

TEST_F(SpeculationTest, LogprobsAndStreamedTextAreThoseOfPlainDecoding) {
  auto make = [&](std::string* streamed) {
    JobRequest r = request(prompts[0], 32);
    r.logprobs = 2;
    r.on_text = [streamed](const std::string& piece) { *streamed += piece; };
    return r;
  };
  std::string plain_text, spec_text;
  build(512);
  const JobResult plain = run({make(&plain_text)})[0];
  build(512, 256, 32, 8, true, ngram());
  const JobResult spec = run({make(&spec_text)})[0];
  EXPECT_GT(spec.accepted_tokens, 0);
  ASSERT_EQ(spec.logprobs.size(), plain.logprobs.size());
  for (size_t i = 0; i < plain.logprobs.size(); ++i) {
    EXPECT_EQ(spec.logprobs[i].token, plain.logprobs[i].token);
    EXPECT_FLOAT_EQ(spec.logprobs[i].logprob, plain.logprobs[i].logprob);
  }
  EXPECT_EQ(spec_text, plain_text);
  EXPECT_EQ(spec_text, spec.text);
}

// Many sampled runs of three tokens with different seeds: the frequencies of the 3-token
// continuations match the model's exact probabilities (chi-square test at the 0.1 % level; fixed
// seeds, so the outcome is the same on every run). The second and third tokens come through
// proposals that are kept or replaced, so a bias in either path shows here.
TEST_F(SpeculationTest, SampledOutputKeepsTheModelsDistribution) {
  build(512, 256, 64, 8, true, ngram());
  expect_the_models_distribution(1000);
}

// A draft model with the main model's own weights proposes exactly what greedy decoding picks:
// every proposal is kept. With other weights, proposals are replaced; the tokens never change.
TEST_F(SpeculationTest, GreedyDraftModelGivesTheSameTokens) {
  build(512);
  std::vector<JobResult> plain;
  for (const auto& p : prompts) plain.push_back(run({request(p, 40)})[0]);
  for (const bool same_weights : {true, false}) {
    SCOPED_TRACE(same_weights ? "draft = model" : "draft with other weights");
    draft_weights = same_weights ? static_cast<const TensorSource*>(&weights) : &other_weights;
    for (const int64_t budget : {512, 24}) {
      build(budget, 256, 64, 8, true, draft());
      std::vector<JobRequest> all;
      for (const auto& p : prompts) all.push_back(request(p, 40));
      const auto spec = run(std::move(all));
      int64_t proposed = 0, accepted = 0;
      for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "prompt " << i << ", budget " << budget;
        proposed += spec[i].proposed_tokens;
        accepted += spec[i].accepted_tokens;
      }
      EXPECT_GT(proposed, 0);
      if (same_weights) {
        EXPECT_EQ(accepted, proposed);
      } else {
        EXPECT_LT(accepted, proposed);
      }
      EXPECT_EQ(drafter->pages().available_pages(), drafter->pages().num_pages());
    }
  }
  draft_weights = &other_weights;
}

// The same with a draft model of other weights: proposals drawn from the draft's q, kept with
// min(1, p/q), replaced from the residual.
TEST_F(SpeculationTest, SampledDraftOutputKeepsTheModelsDistribution) {
  build(512, 256, 128, 8, true, draft(2));
  expect_the_models_distribution(7000);
}

}  // namespace
}  // namespace hearth
