// Key offsets for a quantized KV cache (KvCacheStorage::set_key_offsets), measured when a model
// is loaded.
//
// The keys of one head share a large common part, carried by the dims that RoPE turns slowest;
// quantizing a key with that part still in it spends the codes' range on what every position
// has alike. Subtracting the same vector from every key of a head leaves attention as it is
// (each score of a query shifts by the same amount), so the cache stores keys less their mean.
// The mean is measured through the model and the cache themselves: a built-in text is run into
// the cache, its keys are read back and averaged (position 0, whose key is unlike the
// rest, left out). Only dims that turn by at most a radian over the whole context keep their
// mean: in a faster dim the common part points another way at later positions, and taking the
// early direction away there would add error instead of removing it.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/model/llama_model.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth {

// The text the mean keys are measured on: prose, code, a chat turn (436 tokens for SmolLM2).
std::string_view key_offset_text();

// How many of its tokens to measure over on `device`: the whole text where the forward pass is
// fast (on the GPU it takes milliseconds; SmolLM2's q4 cache: KL 2.49e-2 over 436 tokens,
// 2.62e-2 over 128); 128 on the CPU, where every token runs through the whole model at load
// (SmolLM2 on two cores: about a second for the whole text, a few hundredths for 128).
int64_t key_offset_tokens(DeviceKind device);

// Measures and sets `cache`'s key offsets for `model` over the text's first `max_tokens`
// tokens (nothing when !cache.offsets_keys()). Uses the cache's first pages; call it after
// creating the cache and before any job runs.
void calibrate_key_offsets(LlamaModel& model, KvCacheStorage& cache, const Tokenizer& tokenizer,
                           int64_t max_tokens);

// The per-layer, per-head means in `rotated_means` ([layers][kv heads][head_dim], rotated) with
// the dims that turn faster than a radian over `model`'s context cleared: the offsets to set.
std::vector<float> key_offsets_from_means(const LlamaModel& model,
                                          std::vector<float> rotated_means);

}  // namespace hearth
