// A model split by layers over two GPUs against the same model on one (needs two GPUs; skips
// otherwise): bit-identical logits for prompts of different lengths and for decode steps
// replayed from CUDA graphs, on fp16, EXL2, GPTQ and packed GGUF weights (a tied head included);
// through the Engine, the same greedy tokens and a plan that places every layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "engine/api/engine.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_loader.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/multi_gpu_test_util.h"

namespace hearth {
namespace {

using multi_gpu_test::kPage;
using multi_gpu_test::kPages;
using multi_gpu_test::model_options;
using multi_gpu_test::three_prompts;

// Logits of a prompt step (three prompts of different lengths, one wanting every row), then of
// `steps` decode steps of all three (the first runs directly, the next are captured and replayed).
std::vector<std::vector<float>> run_steps(LlamaModel& model, KvCacheType type = KvCacheType::kF16,
                                          int steps = 6) {
  auto cache = multi_gpu_test::create_cache(model, type);
  const int64_t vocab = model.config().vocab_size;
  const auto [prompts, pages] = three_prompts(vocab);
  std::vector<std::vector<float>> out;
  BatchDesc prompt;
  for (size_t s = 0; s < 3; ++s) prompt.seqs.push_back({prompts[s], 0, pages[s], s == 0, {}});
  const int64_t rows = prompt.logit_rows();
  out.push_back(model.backend().read(model.forward(prompt, *cache), rows));
  auto argmax = [&](const std::vector<float>& logits, int64_t row) {
    const float* r = logits.data() + row * vocab;
    return static_cast<int32_t>(std::max_element(r, r + vocab) - r);
  };
  std::vector<std::vector<int32_t>> feed(3);
  std::vector<int32_t> pos(3);
  for (size_t s = 0; s < 3; ++s) {
    pos[s] = static_cast<int32_t>(prompts[s].size());
    feed[s] = {argmax(out.back(), s == 0 ? static_cast<int64_t>(prompts[0].size()) - 1
                                         : rows - 3 + static_cast<int64_t>(s))};
  }
  for (int step = 0; step < steps; ++step) {
    BatchDesc decode;
    for (size_t s = 0; s < 3; ++s) decode.seqs.push_back({feed[s], pos[s]++, pages[s], false, {}});
    out.push_back(model.backend().read(model.forward(decode, *cache), 3));
    for (size_t s = 0; s < 3; ++s) feed[s] = {argmax(out.back(), static_cast<int64_t>(s))};
  }
  return out;
}

class GpuLayerSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_REQUIRE_TWO_GPUS();
    for (int g = 0; g < 2; ++g) {
      CudaBackendOptions o;
      o.device = g;
      backends_.push_back(create_cuda_backend(o));
    }
  }

  // The model on GPU 0 alone, then split over GPUs 0 and 1 at `first_layers`.
  void expect_identical(const ModelConfig& config, const TensorSource& weights,
                        int64_t first_layers, KvCacheType type = KvCacheType::kF16) {
    std::vector<std::vector<float>> one, two;
    {
      LlamaModel whole(config, *backends_[0], weights, model_options());
      one = run_steps(whole, type);
    }
    {
      LayerPlacement p{{backends_[0].get(), backends_[1].get()},
                       {first_layers, config.num_layers - first_layers}};
      LlamaModel split(config, p, weights, model_options());
      EXPECT_EQ(&split.backend(), backends_[1].get());
      two = run_steps(split, type);
    }
    ASSERT_EQ(one.size(), two.size());
    for (size_t step = 0; step < one.size(); ++step) {
      EXPECT_EQ(one[step], two[step]) << "step " << step;
    }
  }

  std::vector<std::unique_ptr<Backend>> backends_;
};

TEST_F(GpuLayerSplit, Fp16LogitsAreBitIdenticalToOneGpu) {
  const ModelConfig config = synthetic_model_config("tiny");
  SyntheticSource weights(config, 3, DType::kF16);
  expect_identical(config, weights, 1);
  expect_identical(config, weights, config.num_layers - 1);
}

TEST_F(GpuLayerSplit, QuantizedLogitsAreBitIdenticalToOneGpu) {
  for (const char* format : {"exl2", "gptq"}) {
    SCOPED_TRACE(format);
    ModelConfig config = synthetic_model_config("tiny");
    SyntheticQuantSource::Options so;
    so.format = format;
    SyntheticQuantSource weights(config, so);
    config.quantization_config_json = weights.quantization_config_json();
    expect_identical(config, weights, config.num_layers / 2);
  }
}

// A quantized cache divides by layer with its key offsets: each GPU's part gets its layers'.
TEST_F(GpuLayerSplit, QuantizedCachesWithKeyOffsetsAreBitIdenticalToOneGpu) {
  const ModelConfig config = synthetic_model_config("tiny");
  SyntheticSource weights(config, 3, DType::kF16);
  for (KvCacheType type : {KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    SCOPED_TRACE(kv_cache_type_name(type));
    expect_identical(config, weights, 1, type);
  }
}

// A GGUF whose head is its packed embedding table: on one GPU one upload serves both; split,
// the last GPU gets the head of its own.
TEST_F(GpuLayerSplit, PackedGgufWithATiedHeadIsBitIdenticalToOneGpu) {
  const char* path = std::getenv("HEARTH_SPLIT_GGUF");
  const std::filesystem::path file = path && *path ? path : test::test_model();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "skipped: no GGUF model";
  const ModelBundle bundle = open_model(file, false);
  expect_identical(bundle.info.config, *bundle.weights, bundle.info.config.num_layers / 2);
}

TEST_F(GpuLayerSplit, TheEngineSplitsByThePlanAndGeneratesTheSameTokens) {
  const char* path = std::getenv("HEARTH_SPLIT_GGUF");
  const std::filesystem::path file = path && *path ? path : test::test_model();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "skipped: no GGUF model";
  backends_.clear();  // the engine makes its own
  auto generate = [&](std::vector<int> gpus, MemoryPlan* plan) {
    LoadOptions o;
    o.model_path = file;
    o.device = DeviceKind::kCuda;
    o.gpus = std::move(gpus);
    o.max_seq_len = 512;
    *plan = Engine::plan(o);
    Engine engine;
    engine.load(o);
    std::vector<GenerationRequest> requests(2);
    requests[0].prompt = "The capital of France is";
    requests[1].prompt = "List three colours, then count to ten:";
    for (auto& r : requests) {
      r.max_tokens = 24;
      r.ignore_eos = true;
    }
    std::vector<std::vector<int32_t>> tokens;
    for (const GenerationResult& r : engine.generate_batch(requests)) tokens.push_back(r.tokens);
    const MemoryUsage mem = engine.memory_usage();
    EXPECT_GT(mem.weights, 0u);
    return tokens;
  };
  MemoryPlan one, two;
  const auto expected = generate({0}, &one);
  const auto split = generate({0, 1}, &two);
  EXPECT_EQ(split, expected);
  ASSERT_EQ(one.gpus.size(), 1u);
  ASSERT_EQ(two.gpus.size(), 2u);
  EXPECT_EQ(two.gpus[0].layers + two.gpus[1].layers, one.gpus[0].layers);
  EXPECT_EQ(two.gpus[1].first_layer, two.gpus[0].layers);
  EXPECT_TRUE(two.fits);
}

}  // namespace
}  // namespace hearth
