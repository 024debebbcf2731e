// Key offsets of a quantized KV cache (engine/model/key_offsets.h): only the dims RoPE turns
// slowly over the context keep their mean, and calibration reaches every part of a layer split,
// so a split model stores the same keys as a whole one.
#include "engine/model/key_offsets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/model/rope.h"
#include "tests/common/tiny_model.h"

namespace hearth {
namespace {

ModelConfig config_with_64_dim_heads() {
  ModelConfig c = test::tiny_config();
  c.head_dim = 64;  // a quantized cache needs 64 or 128
  return c;
}

LlamaModelOptions options() {
  LlamaModelOptions o;
  o.max_seq_len = 128;
  o.max_batch_tokens = 48;  // calibration runs in several chunks
  o.max_logit_rows = 32;
  return o;
}

TEST(KeyOffsets, KeepTheMeanOnlyInDimsThatTurnSlowly) {
  const ModelConfig c = config_with_64_dim_heads();
  const test::TinyWeights weights(c);
  auto backend = create_cpu_backend(1);
  LlamaModel model(c, *backend, weights, options());
  const int64_t D = c.head_dim, rows = c.num_layers * c.num_kv_heads;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> means(static_cast<size_t>(rows * D));
  for (float& x : means) x = normal(rng);
  const std::vector<float> offsets = key_offsets_from_means(model, means);
  ASSERT_EQ(offsets.size(), means.size());
  const RopeFrequencies rope = compute_rope_frequencies(c, options().max_seq_len);
  int kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> mean(means.begin() + r * D, means.begin() + (r + 1) * D);
    std::vector<float> offset(offsets.begin() + r * D, offsets.begin() + (r + 1) * D);
    hadamard_rotate(mean.data(), D);  // back to the model's dims
    hadamard_rotate(offset.data(), D);
    for (int64_t d = 0; d < D; ++d) {
      const bool slow = rope.inv_freq[static_cast<size_t>(d % (D / 2))] * 128.0 <= 1.0;
      kept += slow;
      EXPECT_NEAR(offset[d], slow ? mean[d] : 0.0f, 1e-4) << "row " << r << " dim " << d;
    }
  }
  // theta 10000 over 128 positions: the 15 slowest of 32 frequencies, both dims of each pair.
  EXPECT_EQ(kept, rows * 30);
}

TEST(KeyOffsets, LayerSplitStoresWhatOneBackendStores) {
  const ModelConfig c = config_with_64_dim_heads();
  const test::TinyWeights weights(c);
  const test::ByteTokenizer tokenizer;
  std::vector<std::unique_ptr<Backend>> backends;
  for (int i = 0; i < 2; ++i) backends.push_back(create_cpu_backend(1));
  LayerPlacement split;
  split.backends = {backends[0].get(), backends[1].get()};
  split.layers = {1, 1};
  LlamaModel whole(c, *backends[0], weights, options());
  LlamaModel parts(c, split, weights, options());
  auto logits = [&](LlamaModel& model, bool calibrated) {
    auto cache = model.create_kv_cache(16, 16, KvCacheType::kQ4);
    EXPECT_TRUE(cache->offsets_keys());
    if (calibrated) calibrate_key_offsets(model, *cache, tokenizer, 96);
    const std::vector<int32_t> prompt = tokenizer.encode("offsets reach every stage", false);
    const std::vector<int32_t> pages = {12, 13};
    BatchDesc b;
    b.seqs.push_back({prompt, 0, pages, true, {}});
    return model.backend().read(model.forward(b, *cache), b.logit_rows());
  };
  const std::vector<float> expected = logits(whole, true);
  EXPECT_EQ(logits(parts, true), expected);
  EXPECT_NE(logits(whole, false), expected);  // the offsets changed what was stored
}

}  // namespace
}  // namespace hearth
