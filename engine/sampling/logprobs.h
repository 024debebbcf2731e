// Log-probabilities of generated tokens, as OpenAI's API reports them: from the model's own
// distribution (the log-softmax of the raw logits, before penalties, bias, temperature and
// filters), for the chosen token and the most likely alternatives.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hearth {

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // most likely first (ties: lower id first)
};

// The most alternatives a request may ask for (OpenAI's top_logprobs limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

// `token`'s log-probability under `logits`, and the `top` most likely tokens' (0..kMaxTopLogprobs).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t top);

}  // namespace hearth
