// What the tests that run a model over two GPUs against one GPU share (the layer split, tensor
// parallelism): the skip without two GPUs, the model's sizes and the prompts they feed.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/model/llama_model.h"

#define HEARTH_REQUIRE_TWO_GPUS()                                             \
  do {                                                                        \
    if (::hearth::cuda_device_count() < 2) GTEST_SKIP() << "skipped: no GPU"; \
  } while (0)

namespace hearth::multi_gpu_test {

inline constexpr int64_t kPage = 64;
inline constexpr int64_t kPages = 32;  // cache pages the prompts' tables stay within

inline LlamaModelOptions model_options() {
  LlamaModelOptions o;
  o.max_seq_len = 1024;
  o.max_batch_tokens = 512;
  o.max_logit_rows = 16;
  return o;
}

// Three prompts of different lengths (7, 130 and a single token) and their page tables.
struct Prompts {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<int32_t>> pages;
};

inline Prompts three_prompts(int64_t vocab) {
  Prompts p;
  p.tokens.resize(3);
  for (int i = 0; i < 7; ++i) p.tokens[0].push_back(static_cast<int32_t>((i * 37 + 5) % vocab));
  for (int i = 0; i < 130; ++i) p.tokens[1].push_back(static_cast<int32_t>((i * 91 + 2) % vocab));
  p.tokens[2] = {static_cast<int32_t>(17 % vocab)};
  p.pages = {{0, 1, 2}, {3, 4, 5, 6}, {7, 8}};
  return p;
}

// The model's cache of `type`. A quantized one gets key offsets first, as a loaded model's has
// them (KvCacheStorage::set_key_offsets): made-up values that differ by layer, head and dim, so
// that a part given another head's or layer's offsets would store other codes.
inline std::unique_ptr<KvCacheStorage> create_cache(const LlamaModel& model, KvCacheType type) {
  auto cache = model.create_kv_cache(kPages, kPage, type);
  if (is_quantized(type)) {
    const KvCacheSpec& spec = cache->spec();
    std::vector<float> offsets(
        static_cast<size_t>(spec.num_layers * spec.num_kv_heads * spec.head_dim));
    for (size_t i = 0; i < offsets.size(); ++i) {
      offsets[i] = 0.4f * std::sin(0.37f * static_cast<float>(i) + 1.0f);
    }
    cache->set_key_offsets(offsets);
  }
  return cache;
}

}  // namespace hearth::multi_gpu_test
