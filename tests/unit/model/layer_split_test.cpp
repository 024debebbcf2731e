// A model split by layers over several backends computes what it computes on one: on the CPU
// backend (the reference, exact) the logits of prompts and decode steps are bit-identical, and
// generation through the Generator gives the same tokens, whatever the split. Misplaced splits
// and caches are refused with a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "engine/model/lora_adapter.h"
#include "tests/common/tiny_model.h"

namespace hearth {
namespace {

constexpr int64_t kPage = 16;

class LayerSplit : public ::testing::Test {
 protected:
  LayerSplit() {
    config_.num_layers = 4;
    weights_ = std::make_unique<test::TinyWeights>(config_);
    for (int i = 0; i < 3; ++i) backends_.push_back(create_cpu_backend(2));
    options_.max_seq_len = 128;
    options_.max_batch_tokens = 64;
    options_.max_logit_rows = 16;
  }

  LayerPlacement placement(const std::vector<int64_t>& layers) {
    LayerPlacement p;
    for (size_t s = 0; s < layers.size(); ++s) p.backends.push_back(backends_[s].get());
    p.layers = layers;
    return p;
  }

  // Logits of every step: two prompts of different lengths (one wanting all its logits), then
  // decode steps feeding each sequence the argmax of its last row.
  std::vector<std::vector<float>> run_steps(LlamaModel& model) {
    auto cache = model.create_kv_cache(8, kPage);
    std::vector<int32_t> a = {3, 14, 15, 92, 65}, b = {35, 89, 79, 32, 38, 46, 26, 43, 38};
    const std::vector<int32_t> pages_a = {0, 1, 2}, pages_b = {3, 4, 5};
    std::vector<std::vector<float>> out;
    BatchDesc prompt;
    prompt.seqs.push_back({a, 0, pages_a, true, {}});
    prompt.seqs.push_back({b, 0, pages_b, false, {}});
    const int64_t rows = prompt.logit_rows();
    out.push_back(model.backend().read(model.forward(prompt, *cache), rows));
    int32_t pos_a = static_cast<int32_t>(a.size()), pos_b = static_cast<int32_t>(b.size());
    auto argmax = [&](const std::vector<float>& logits, int64_t row) {
      const auto V = static_cast<size_t>(config_.vocab_size);
      const float* r = logits.data() + static_cast<size_t>(row) * V;
      return static_cast<int32_t>(std::max_element(r, r + V) - r);
    };
    std::vector<int32_t> next_a = {argmax(out.back(), rows - 2)};
    std::vector<int32_t> next_b = {argmax(out.back(), rows - 1)};
    for (int step = 0; step < 4; ++step) {
      BatchDesc decode;
      decode.seqs.push_back({next_a, pos_a++, pages_a, false, {}});
      decode.seqs.push_back({next_b, pos_b++, pages_b, false, {}});
      out.push_back(model.backend().read(model.forward(decode, *cache), 2));
      next_a = {argmax(out.back(), 0)};
      next_b = {argmax(out.back(), 1)};
    }
    return out;
  }

  ModelConfig config_ = test::tiny_config();
  std::unique_ptr<test::TinyWeights> weights_;
  std::vector<std::unique_ptr<Backend>> backends_;
  LlamaModelOptions options_;
  test::ByteTokenizer tokenizer_;
};

TEST_F(LayerSplit, LogitsAreBitIdenticalToOneBackendForEverySplit) {
  LlamaModel whole(config_, *backends_[0], *weights_, options_);
  const auto expected = run_steps(whole);
  for (const std::vector<int64_t>& layers :
       std::vector<std::vector<int64_t>>{{1, 3}, {3, 1}, {2, 2}, {2, 1, 1}, {1, 1, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(layers));
    LlamaModel split(config_, placement(layers), *weights_, options_);
    EXPECT_EQ(&split.backend(), backends_[layers.size() - 1].get());  // the logits' backend
    EXPECT_EQ(run_steps(split), expected);
  }
}

TEST_F(LayerSplit, EachBackendHoldsItsOwnLayersAndCache) {
  LlamaModel split(config_, placement({1, 3}), *weights_, options_);
  const auto cache = split.create_kv_cache(8, kPage);
  EXPECT_EQ(cache->spec().num_layers, 4);
  const MemoryUsage first = backends_[0]->memory_usage(), second = backends_[1]->memory_usage();
  // A layer's KV pages on the backend that runs it: one layer's worth against three.
  EXPECT_EQ(second.kv_cache, 3 * first.kv_cache);
  EXPECT_GT(first.kv_cache, 0u);
}

TEST_F(LayerSplit, GenerationGivesTheSameTokens) {
  auto generate = [&](LlamaModel& model) {
    auto cache = model.create_kv_cache(32, kPage);
    GeneratorOptions go;
    go.max_seq_len = options_.max_seq_len;
    go.max_batch_tokens = options_.max_batch_tokens;
    Generator generator(model, *cache, tokenizer_, go);
    std::vector<int64_t> ids;
    for (const char* prompt : {"split me", "a longer prompt than the first one"}) {
      JobRequest r;
      r.prompt = tokenizer_.encode(prompt, false);
      r.max_tokens = 12;
      r.ignore_eos = true;
      ids.push_back(generator.submit(std::move(r)));
    }
    while (!generator.idle()) generator.step();
    std::vector<std::vector<int32_t>> tokens;
    for (int64_t id : ids) tokens.push_back(generator.take_result(id)->tokens);
    return tokens;
  };
  LlamaModel whole(config_, *backends_[0], *weights_, options_);
  LlamaModel split(config_, placement({2, 1, 1}), *weights_, options_);
  const auto expected = generate(whole);
  EXPECT_EQ(expected[0].size(), 12u);
  EXPECT_EQ(generate(split), expected);
}

// LoRA adapters go to the backend of the layer they change, and each sequence's weighting of
// them gives the same logits as on one backend.
TEST_F(LayerSplit, AdaptersApplyOnEveryStage) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  auto random = [&](std::vector<int64_t> shape) {
    std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]));
    for (float& x : v) x = dist(rng);
    return HostTensor::from_floats(std::move(v), shape);
  };
  auto adapter = std::make_shared<LoraAdapter>();
  const int64_t H = config_.hidden_size, rank = 4;
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    adapter->linears.push_back(
        {layer, LoraProjection::kQ, random({rank, H}), random({config_.q_dim(), rank}), 0.5f});
    adapter->linears.push_back({layer, LoraProjection::kDown,
                                random({rank, config_.intermediate_size}), random({H, rank}),
                                0.5f});
  }
  const std::vector<float> weights = {0.7f};
  auto logits = [&](LlamaModel& model) {
    model.set_adapters({adapter});
    auto cache = model.create_kv_cache(8, kPage);
    const std::vector<int32_t> a = {3, 14, 15, 92}, b = {65, 35};
    const std::vector<int32_t> pages_a = {0}, pages_b = {1};
    BatchDesc batch;
    batch.seqs.push_back({a, 0, pages_a, false, weights});
    batch.seqs.push_back({b, 0, pages_b, false, {}});  // the base model alone
    return model.backend().read(model.forward(batch, *cache), 2);
  };
  LlamaModel whole(config_, *backends_[0], *weights_, options_);
  LlamaModel split(config_, placement({1, 3}), *weights_, options_);
  const std::vector<float> expected = logits(whole);
  EXPECT_EQ(logits(split), expected);
  EXPECT_GT(split.adapter_bytes(), 0u);
  // The adapter changed the first sequence: its logits differ from the base model's.
  whole.set_adapters({});
  auto cache = whole.create_kv_cache(8, kPage);
  const std::vector<int32_t> a = {3, 14, 15, 92}, pages = {0};
  BatchDesc base;
  base.seqs.push_back({a, 0, pages, false, {}});
  const std::vector<float> plain = whole.backend().read(whole.forward(base, *cache), 1);
  EXPECT_NE(std::vector<float>(expected.begin(), expected.begin() + config_.vocab_size), plain);
}

TEST_F(LayerSplit, BadSplitsAndForeignCachesAreRefused) {
  auto expect_invalid = [&](const LayerPlacement& p) {
    try {
      LlamaModel model(config_, p, *weights_, options_);
      ADD_FAILURE() << "accepted a bad split";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  };
  expect_invalid(placement({1, 2}));     // 3 of 4 layers
  expect_invalid(placement({4, 0}));     // a backend without a layer
  expect_invalid(placement({2, 2, 1}));  // 5 layers
  LayerPlacement missing = placement({2, 2});
  missing.backends[1] = nullptr;
  expect_invalid(missing);

  LlamaModel split(config_, placement({2, 2}), *weights_, options_);
  auto plain = backends_[0]->create_kv_cache(split.kv_cache_spec(8, kPage));
  const std::vector<int32_t> tokens = {1, 2, 3}, pages = {0};
  BatchDesc batch;
  batch.seqs.push_back({tokens, 0, pages, false, {}});
  EXPECT_THROW(split.forward(batch, *plain), Error);
}

}  // namespace
}  // namespace hearth
