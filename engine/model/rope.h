// Rotary-embedding frequencies for every RoPE scaling type, with Hugging Face transformers'
// semantics. Computed once on the host, so every backend uses bit-identical frequencies.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/io/model_config.h"

namespace hearth {

struct RopeFrequencies {
  std::vector<float> inv_freq;   // [rotary_dim / 2]
  float attention_factor = 1.0f; // multiplies cos and sin (YaRN's mscale)
};

// `max_seq_len` is the context the model is loaded with: YaRN and dynamic NTK depend on it.
// Dynamic NTK is computed once for max_seq_len (HF recomputes it as a sequence grows; a fixed
// table keeps cached keys and new queries consistent).
RopeFrequencies compute_rope_frequencies(const ModelConfig& config, int64_t max_seq_len);

}  // namespace hearth
