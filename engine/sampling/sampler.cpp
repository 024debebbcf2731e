#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace hearth {

void SamplingParams::validate(int64_t vocab) const {
  auto bad = [](const char* field, const char* why) {
    fail(ErrorCode::kInvalidArgument, std::string("sampling: ") + field + " " + why);
  };
  if (!std::isfinite(temperature) || temperature < 0 || temperature > 100)
    bad("temperature", "must be in [0, 100]");
  if (top_k < 0) bad("top_k", "must be >= 0");
  if (!std::isfinite(top_p) || top_p <= 0 || top_p > 1) bad("top_p", "must be in (0, 1]");
  if (!std::isfinite(min_p) || min_p < 0 || min_p > 1) bad("min_p", "must be in [0, 1]");
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0 || repetition_penalty > 100)
    bad("repetition_penalty", "must be in (0, 100]");
  if (!std::isfinite(frequency_penalty) || std::fabs(frequency_penalty) > 100)
    bad("frequency_penalty", "must be in [-100, 100]");
  if (!std::isfinite(presence_penalty) || std::fabs(presence_penalty) > 100)
    bad("presence_penalty", "must be in [-100, 100]");
  if (penalty_last_n < 0) bad("penalty_last_n", "must be >= 0");
  for (const auto& [token, bias] : logit_bias) {
    if (!std::isfinite(bias) || std::fabs(bias) > 100)
      bad("logit_bias", "values must be in [-100, 100]");
    if (token < 0 || (vocab > 0 && token >= vocab)) {
      fail(ErrorCode::kInvalidArgument, "sampling: logit_bias names token " +
                                            std::to_string(token) + ", outside the vocabulary");
    }
  }
}

std::vector<LogitAdjustment> logit_adjustments(const SampleRequest& request, int64_t vocab) {
  const SamplingParams& p = *request.params;
  std::map<int32_t, LogitAdjustment> per_token;
  auto entry = [&](int32_t t) -> LogitAdjustment& {
    auto [it, inserted] = per_token.try_emplace(t);
    if (inserted) it->second.token = t;
    return it->second;
  };
  auto in_vocab = [&](int32_t t) { return t >= 0 && t < vocab; };
  const bool repetition = p.repetition_penalty != 1.0f;
  const bool additive = p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  if (p.penalty_last_n > 0 && !request.history.empty() && (repetition || additive)) {
    const size_t window = std::min<size_t>(request.history.size(), p.penalty_last_n);
    const auto recent = request.history.last(window);
    if (repetition) {  // HF: once per distinct token seen in the window (prompt and generated)
      for (int32_t t : recent) {
        if (in_vocab(t)) entry(t).repetition = p.repetition_penalty;
      }
    }
    if (additive) {  // OpenAI: count over generated tokens only
      const size_t generated = std::min<size_t>(window, std::max(0, request.generated_count));
      std::map<int32_t, int32_t> counts;
      for (int32_t t : recent.last(generated)) ++counts[t];
      for (auto [t, c] : counts) {
        if (in_vocab(t)) {
          entry(t).subtract = static_cast<float>(c) * p.frequency_penalty + p.presence_penalty;
        }
      }
    }
  }
  for (const auto& [t, bias] : p.logit_bias) {
    if (in_vocab(t)) entry(t).subtract -= bias;
  }
  std::vector<LogitAdjustment> out;
  out.reserve(per_token.size());
  for (const auto& [t, a] : per_token) out.push_back(a);
  return out;
}

void apply_logit_adjustments(std::span<float> logits, const SampleRequest& request) {
  for (const LogitAdjustment& a : logit_adjustments(request, static_cast<int64_t>(logits.size()))) {
    float& l = logits[static_cast<size_t>(a.token)];
    if (a.repetition != 1.0f) l = l > 0 ? l / a.repetition : l * a.repetition;
    if (a.subtract != 0.0f) l -= a.subtract;
  }
}

namespace {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);  // first maximum wins ties
  }
  return best;
}

}  // namespace

bool is_greedy(const SamplingParams& params) {
  return params.temperature <= 0.0f || params.top_k == 1;
}

double TokenDistribution::prob_of(int32_t token) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == token) return probs[i];
  }
  return 0.0;
}

namespace {

// The top-k candidates of a sampled row (all tokens without top-k) in logit order, ties to the
// lower id, with their softmax probabilities at the temperature (max-subtracted, in double).
// They are sorted only as far as a walk goes: a draw or a top-p/min-p cut rarely passes the
// first few dozen of a 50k vocabulary, and sorting all of it cost ~7 ms a token on a CPU.
class CandidateWalk {
 public:
  CandidateWalk(std::span<const float> logits, size_t keep, double inv_t)
      : logits_(logits), order_(logits.size()), inv_t_(inv_t) {
    std::iota(order_.begin(), order_.end(), 0);
    if (keep < order_.size()) {
      const auto front = order_.begin() + static_cast<std::ptrdiff_t>(keep);
      if (keep <= kFirstSort) {  // a usual top-k: sorted at once
        std::partial_sort(order_.begin(), front, order_.end(), by_logit());
        sorted_ = keep;
      } else {  // the top `keep`, unordered, in front
        std::nth_element(order_.begin(), front, order_.end(), by_logit());
      }
      order_.resize(keep);
    }
    top_ = logits_[static_cast<size_t>(token(0))];
    for (int32_t t : order_) sum_ += weight(t);
  }
  size_t size() const { return order_.size(); }
  int32_t token(size_t i) {
    if (i >= sorted_) {
      const size_t end = std::min(order_.size(), std::max({i + 1, 2 * sorted_, kFirstSort}));
      std::partial_sort(order_.begin() + static_cast<std::ptrdiff_t>(sorted_),
                        order_.begin() + static_cast<std::ptrdiff_t>(end), order_.end(),
                        by_logit());
      sorted_ = end;
    }
    return order_[i];
  }
  // Probability of the i-th candidate under the softmax over all of them.
  double prob(size_t i) {
    while (probs_.size() <= i) probs_.push_back(weight(token(probs_.size())) / sum_);
    return probs_[i];
  }

 private:
  struct ByLogit {
    const float* logits;
    bool operator()(int32_t a, int32_t b) const {
      const float la = logits[a], lb = logits[b];
      return la > lb || (la == lb && a < b);
    }
  };
  ByLogit by_logit() const { return {logits_.data()}; }
  double weight(int32_t t) const {
    return std::exp((static_cast<double>(logits_[static_cast<size_t>(t)]) - top_) * inv_t_);
  }

  static constexpr size_t kFirstSort = 64;  // candidates sorted by the first step of a walk

  std::span<const float> logits_;
  std::vector<int32_t> order_;
  size_t sorted_ = 0;
  double inv_t_;
  double top_ = 0;
  double sum_ = 0;
  std::vector<double> probs_;
};

// How many of the walk's candidates survive top-p and min-p, and their probability `mass` (<= 1:
// draws are scaled by it instead of every probability being divided, which is the arithmetic the
// CUDA sampler reproduces).
struct Survivors {
  size_t n = 0;
  double mass = 1.0;
};

Survivors survivors(CandidateWalk& walk, const SamplingParams& p) {
  Survivors s{walk.size(), 1.0};
  // top-p: the smallest prefix whose mass reaches top_p (always at least one token).
  if (p.top_p < 1.0f) {
    double cum = 0;
    for (size_t i = 0; i < s.n; ++i) {
      cum += walk.prob(i);
      if (cum >= p.top_p) {
        s.n = i + 1;
        break;
      }
    }
  }
  // min-p: drop tokens below min_p × the top probability.
  if (p.min_p > 0.0f) {
    const double floor = p.min_p * walk.prob(0);
    size_t m = 1;
    while (m < s.n && walk.prob(m) >= floor) ++m;
    s.n = m;
  }
  if (s.n < walk.size()) {
    s.mass = 0;
    for (size_t i = 0; i < s.n; ++i) s.mass += walk.prob(i);
  }
  return s;
}

size_t top_k_keep(const SamplingParams& p, size_t vocab) {
  return p.top_k > 0 ? std::min<size_t>(vocab, static_cast<size_t>(p.top_k)) : vocab;
}

// The surviving candidates with their probabilities under the softmax over all top-k candidates
// (so they sum to `mass` <= 1, not to 1).
struct Candidates {
  std::vector<int32_t> tokens;
  std::vector<double> probs;
  double mass = 1.0;
};

Candidates filtered_candidates(std::span<float> logits, const SampleRequest& request) {
  HEARTH_CHECK(request.params != nullptr, "sample request without params");
  HEARTH_CHECK(!logits.empty(), "empty logits");
  const SamplingParams& p = *request.params;
  apply_logit_adjustments(logits, request);
  Candidates d;
  if (is_greedy(p)) {
    d.tokens = {argmax(logits)};
    d.probs = {1.0};
    return d;
  }
  CandidateWalk walk(logits, top_k_keep(p, logits.size()), 1.0 / p.temperature);
  const Survivors s = survivors(walk, p);
  for (size_t i = 0; i < s.n; ++i) {
    d.tokens.push_back(walk.token(i));
    d.probs.push_back(walk.prob(i));
  }
  d.mass = s.mass;
  return d;
}

}  // namespace

TokenDistribution sampling_distribution(std::span<float> logits, const SampleRequest& request) {
  const SamplingParams& p = *request.params;
  if (!is_greedy(p) && p.top_k == 0 && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    // Nothing is cut: the softmax over the whole vocabulary, in id order (no sort of it).
    apply_logit_adjustments(logits, request);
    TokenDistribution d;
    const double inv_t = 1.0 / p.temperature;
    const double top = *std::max_element(logits.begin(), logits.end());
    d.tokens.resize(logits.size());
    d.probs.resize(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      d.tokens[i] = static_cast<int32_t>(i);
      d.probs[i] = std::exp((static_cast<double>(logits[i]) - top) * inv_t);
      sum += d.probs[i];
    }
    for (double& q : d.probs) q /= sum;
    return d;
  }
  Candidates c = filtered_candidates(logits, request);
  for (double& q : c.probs) q /= c.mass;
  return {std::move(c.tokens), std::move(c.probs)};
}

int32_t sample_token(std::span<float> logits, const SampleRequest& request) {
  HEARTH_CHECK(request.params != nullptr, "sample request without params");
  HEARTH_CHECK(!logits.empty(), "empty logits");
  const SamplingParams& p = *request.params;
  apply_logit_adjustments(logits, request);
  if (is_greedy(p)) return argmax(logits);
  // One draw from the survivors, walked in logit order only as far as it lands.
  CandidateWalk walk(logits, top_k_keep(p, logits.size()), 1.0 / p.temperature);
  const Survivors s = survivors(walk, p);
  if (s.n == 1) return walk.token(0);
  const double u = static_cast<double>(sampling_uniform(p.seed, request.draw_index)) * s.mass;
  double cum = 0;
  for (size_t i = 0; i < s.n; ++i) {
    cum += walk.prob(i);
    if (u < cum) return walk.token(i);
  }
  return walk.token(s.n - 1);
}

}  // namespace hearth
