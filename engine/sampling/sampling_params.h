// How the next token is chosen. Applied in this order: penalties, logit bias, temperature,
// top-k, top-p, min-p, then a draw from the renormalised distribution (temperature 0 means
// argmax).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hearth {

struct SamplingParams {
  float temperature = 0.0f;         // 0: greedy
  int32_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // HF style: logit / p if > 0 else logit * p, over history
  float frequency_penalty = 0.0f;   // OpenAI style: minus count × f, over generated tokens
  float presence_penalty = 0.0f;    // OpenAI style: minus p once per generated token present
  int32_t penalty_last_n = 1024;    // how many recent tokens the penalties look at (0: none)
  uint64_t seed = 0;
  // Added to a token's logit after the penalties (OpenAI's logit_bias: -100 bans, +100 forces).
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Throws Error(kInvalidArgument) naming the field; with `vocab` > 0, logit_bias ids are checked
  // against it too.
  void validate(int64_t vocab = 0) const;
};

// One row of logits to sample from, with what the penalties and the random draw need.
struct SampleRequest {
  const SamplingParams* params = nullptr;
  std::span<const int32_t> history;  // recent tokens (prompt and generated), oldest first
  int32_t generated_count = 0;       // how many of `history`'s last entries were generated
  uint64_t draw_index = 0;           // counter for the random draw (same seed+index → same u)
  // A speculative proposal for this row (-1: none). With one, the row's token is the verdict of
  // verify_proposal (engine/sampling/speculative_sampling.h): the proposal exactly when it is
  // kept, else its replacement. `draft_probs`: the proposer's distribution over the vocabulary,
  // or empty for a certain proposal (prompt lookup).
  int32_t proposed = -1;
  std::span<const float> draft_probs;
};

// The uniform draw in [0, 1) for (seed, index): splitmix64, identical on every backend.
inline float sampling_uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z = z ^ (z >> 31);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

}  // namespace hearth
