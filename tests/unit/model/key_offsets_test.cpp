// Key offsets of a quantized KV cache (engine/model/key_offsets.h): only the dims RoPE turns
// slowly over the context keep their mean, calibration reaches every part of a layer split (a
// split model stores the same keys as a whole one), and prefix reuse over such a cache gives
// the tokens it gives without reuse.
#include "engine/model/key_offsets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/generate/generator.h"
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

// Prefix reuse over a q4 cache with key offsets: a job whose prompt shares the start of an
// earlier one's first page copies those positions (the fp16 first key with them) and gives the
// tokens it gives without reuse.
TEST(KeyOffsets, PrefixReuseOverAQuantizedCacheGivesTheSameTokens) {
  const ModelConfig c = config_with_64_dim_heads();
  const test::TinyWeights weights(c);
  const test::ByteTokenizer tokenizer;
  auto backend = create_cpu_backend(2);
  LlamaModel model(c, *backend, weights, options());
  const std::vector<std::string> prompts = {"shared: one", "shared: two", "shared: three"};
  auto run = [&](bool reuse) {
    auto cache = model.create_kv_cache(16, 16, KvCacheType::kQ4);
    calibrate_key_offsets(model, *cache, tokenizer, 64);
    GeneratorOptions go;
    go.max_seq_len = options().max_seq_len;
    go.max_batch_tokens = options().max_batch_tokens;
    go.prefix_reuse = reuse;
    Generator generator(model, *cache, tokenizer, go);
    std::vector<JobResult> results;
    for (const std::string& p : prompts) {  // one after another: each finds the last's pages
      JobRequest r;
      r.prompt = tokenizer.encode(p, false);
      r.max_tokens = 10;
      r.ignore_eos = true;
      const int64_t id = generator.submit(std::move(r));
      while (!generator.idle()) generator.step();
      results.push_back(*generator.take_result(id));
    }
    return results;
  };
  const std::vector<JobResult> without = run(false), with = run(true);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(with[i].tokens, without[i].tokens) << prompts[i];
    EXPECT_EQ(without[i].cached_tokens, 0);
  }
  EXPECT_EQ(with[1].cached_tokens, 8);  // "shared: ", copied from the first job's page 0
  EXPECT_EQ(with[2].cached_tokens, 9);  // "shared: t", from the second's
}

}  // namespace
}  // namespace hearth
