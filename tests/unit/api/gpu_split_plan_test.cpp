// Placing a load on several GPUs before anything is allocated: layers shared by free memory or
// by the GiB each GPU is given, the embedding on the first and the head on the last, every GPU
// judged on its own and named when it does not fit; GPU lists the load cannot use are refused.
// Tensor parallelism: every GPU a share of every layer, the embedding and head whole.
#include <gtest/gtest.h>

#include <optional>

#include "engine/api/gpu_split_plan.h"
#include "engine/core/error.h"

namespace hearth {
namespace {

constexpr size_t kGiB = size_t{1} << 30;

// Llama-3-8B's shape in fp16, with each layer's bytes as the loader reports them.
ModelInfo llama3_8b() {
  ModelInfo info;
  info.format = ModelFormat::kSafetensors;
  ModelConfig& c = info.config;
  c.vocab_size = 128256;
  c.hidden_size = 4096;
  c.intermediate_size = 14336;
  c.num_layers = 32;
  c.num_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.max_position_embeddings = 8192;
  info.parameters = c.parameter_count();
  const auto H = static_cast<uint64_t>(c.hidden_size), I = static_cast<uint64_t>(14336);
  const uint64_t layer = (2 * H * H + 2 * H * 1024 + 3 * H * I) * 2 + 2 * H * 2;
  info.cuda_layer_bytes.assign(32, layer);
  info.cuda_embedding_bytes = 128256 * H * 2;
  return info;
}

LoadOptions cuda_load(std::vector<int> gpus) {
  LoadOptions o;
  o.device = DeviceKind::kCuda;
  o.gpus = std::move(gpus);
  o.max_seq_len = 8192;
  return o;
}

DeviceMemoryInfo gpu(int index, size_t free_gib) {
  return {"cuda:" + std::to_string(index) + " Test GPU", free_gib * kGiB, free_gib * kGiB};
}

MemoryPlan place(const LoadOptions& o, const ModelInfo& info,
                 const std::vector<DeviceMemoryInfo>& devices) {
  const ResolvedLoad r = resolve_load(o, info);
  MemoryPlan plan = estimate_memory(o, info, r);
  place_on_gpus(plan, o, info, r, nullptr, devices, o.gpus);
  return plan;
}

// Shares run consecutive layers from 0 to the last, and the plan's totals are their sums.
void expect_consistent(const MemoryPlan& plan, int64_t layers) {
  int64_t next = 0;
  size_t weights = 0, cache = 0;
  for (const GpuShare& s : plan.gpus) {
    EXPECT_EQ(s.first_layer, next);
    EXPECT_GE(s.layers, 1);
    next += s.layers;
    weights += s.weights;
    cache += s.kv_cache;
  }
  EXPECT_EQ(next, layers);
  EXPECT_EQ(plan.weights, weights);
  EXPECT_EQ(plan.kv_cache, cache);
}

TEST(GpuSplitPlan, EqualGpusShareTheLayersEvenly) {
  const ModelInfo info = llama3_8b();
  const MemoryPlan plan = place(cuda_load({0, 1}), info, {gpu(0, 80), gpu(1, 80)});
  ASSERT_EQ(plan.gpus.size(), 2u);
  expect_consistent(plan, 32);
  EXPECT_EQ(plan.gpus[0].layers, 16);
  EXPECT_EQ(plan.gpus[0].device, 0);
  EXPECT_EQ(plan.gpus[1].device, 1);
  EXPECT_TRUE(plan.fits);
  // The whole model's weights once, the embedding on the first GPU and the head on the last.
  EXPECT_EQ(plan.weights, static_cast<size_t>(info.parameters) * 2);
  EXPECT_GT(plan.gpus[0].weights, 16 * info.cuda_layer_bytes[0]);
  // Each GPU keeps its own activations and scratch; only the last holds the logits.
  EXPECT_GT(plan.gpus[1].activations, plan.gpus[0].activations);
  EXPECT_EQ(plan.device_free, 160 * kGiB);
  EXPECT_NE(plan.device_name.find("cuda:1"), std::string::npos);
}

TEST(GpuSplitPlan, LayersFollowEachGpusFreeMemoryInLayerOrder) {
  const ModelInfo info = llama3_8b();
  // The small card second: it still gets its share, and the order of --gpus is kept.
  const LoadOptions o = cuda_load({1, 0});
  const MemoryPlan plan = place(o, info, {gpu(1, 48), gpu(0, 12)});
  ASSERT_EQ(plan.gpus.size(), 2u);
  expect_consistent(plan, 32);
  EXPECT_EQ(plan.gpus[0].device, 1);
  EXPECT_GT(plan.gpus[0].layers, 2 * plan.gpus[1].layers);
  EXPECT_TRUE(plan.fits);
  for (const GpuShare& s : plan.gpus) EXPECT_LE(s.needed() + o.gpu_reserve_bytes, s.device_free);
}

TEST(GpuSplitPlan, GivenSizesFillEachGpuInTurn) {
  const ModelInfo info = llama3_8b();
  LoadOptions o = cuda_load({0, 1});
  o.gpu_split_gib = {6, 40};
  const MemoryPlan plan = place(o, info, {gpu(0, 80), gpu(1, 80)});
  ASSERT_EQ(plan.gpus.size(), 2u);
  expect_consistent(plan, 32);
  const GpuShare& first = plan.gpus[0];
  EXPECT_LE(first.needed(), 6 * kGiB);
  // It took as many layers as fit: one more would not have.
  const size_t layer = info.cuda_layer_bytes[0] + plan.kv_cache / 32;
  EXPECT_GT(first.needed() + layer, 6 * kGiB);
  EXPECT_EQ(first.limit, 6 * kGiB);
  EXPECT_TRUE(plan.fits);
}

TEST(GpuSplitPlan, AGpuThatCannotHoldItsShareIsNamedWithWhatToChange) {
  const ModelInfo info = llama3_8b();
  const MemoryPlan tight = place(cuda_load({0, 1}), info, {gpu(0, 8), gpu(1, 8)});
  EXPECT_FALSE(tight.fits);
  // With 9 GiB each it fits, and a reserve of 2 GiB on each takes that back.
  LoadOptions reserve = cuda_load({0, 1});
  EXPECT_TRUE(place(reserve, info, {gpu(0, 9), gpu(1, 9)}).fits);
  reserve.gpu_reserve_bytes = 2 * kGiB;
  const MemoryPlan reserved = place(reserve, info, {gpu(0, 9), gpu(1, 9)});
  EXPECT_FALSE(reserved.fits);
  EXPECT_NE(reserved.advice.find("2.00 GiB of it kept in reserve"), std::string::npos)
      << reserved.advice;
  EXPECT_NE(tight.advice.find("Test GPU needs"), std::string::npos) << tight.advice;
  EXPECT_NE(tight.advice.find("Add a GPU"), std::string::npos) << tight.advice;

  LoadOptions o = cuda_load({0, 1});
  o.gpu_split_gib = {4, 4};  // 8 GiB for a 16 GB model: the last GPU takes what is left
  const MemoryPlan given = place(o, info, {gpu(0, 80), gpu(1, 80)});
  EXPECT_FALSE(given.fits);
  EXPECT_TRUE(given.gpus[0].fits);
  EXPECT_FALSE(given.gpus[1].fits);
  EXPECT_NE(given.advice.find("cuda:1 Test GPU"), std::string::npos) << given.advice;
  EXPECT_NE(given.advice.find("its GPU split allows 4.00 GiB"), std::string::npos) << given.advice;
}

TEST(GpuSplitPlan, GpuListsTheLoadCannotUseAreRefused) {
  auto code = [](const LoadOptions& o, int devices) -> std::optional<ErrorCode> {
    try {
      check_gpu_options(o, devices);
    } catch (const Error& e) {
      return e.code();
    }
    return std::nullopt;
  };
  EXPECT_EQ(code(cuda_load({0, 1}), 2), std::nullopt);
  EXPECT_EQ(code(cuda_load({0, 2}), 2), ErrorCode::kInvalidArgument);  // no GPU 2
  EXPECT_EQ(code(cuda_load({1, 1}), 2), ErrorCode::kInvalidArgument);  // named twice
  EXPECT_EQ(code(cuda_load({}), 0), ErrorCode::kInvalidArgument);      // no GPU at all
  LoadOptions tensor = cuda_load({0, 1});
  tensor.gpu_split = GpuSplit::kTensor;
  EXPECT_EQ(code(tensor, 2), std::nullopt);
  // Not built yet with tensor parallelism: a draft model, adapters.
  LoadOptions drafted = tensor;
  drafted.speculation = Speculation::kDraft;
  EXPECT_EQ(code(drafted, 2), ErrorCode::kUnsupported);
  LoadOptions adapted = tensor;
  adapted.adapters.push_back({"adapter", 1.0f});
  EXPECT_EQ(code(adapted, 2), ErrorCode::kUnsupported);
  LoadOptions sizes = cuda_load({0, 1});
  sizes.gpu_split_gib = {10};
  EXPECT_EQ(code(sizes, 2), ErrorCode::kInvalidArgument);
  sizes.gpu_split_gib = {10, -1};
  EXPECT_EQ(code(sizes, 2), ErrorCode::kInvalidArgument);
  EXPECT_EQ(load_gpus(cuda_load({})), std::vector<int>{0});
  // More GPUs than layers cannot each run one.
  ModelInfo two = llama3_8b();
  two.config.num_layers = 2;
  two.cuda_layer_bytes.resize(2);
  EXPECT_THROW(place(cuda_load({0, 1, 2}), two, {gpu(0, 80), gpu(1, 80), gpu(2, 80)}), Error);
}

TEST(GpuSplitPlan, TensorParallelGivesEveryGpuItsShareOfEveryLayer) {
  LoadOptions o = cuda_load({0, 1});
  o.gpu_split = GpuSplit::kTensor;
  const ModelInfo info = llama3_8b();
  const ResolvedLoad r = resolve_load(o, info);
  const MemoryPlan whole = estimate_memory(o, info, r);
  MemoryPlan plan = whole;
  place_tensor_parallel(plan, o, info, r, {gpu(0, 80), gpu(1, 80)}, o.gpus);
  ASSERT_EQ(plan.gpus.size(), 2u);
  EXPECT_TRUE(plan.fits);
  const size_t layers = info.cuda_layer_bytes[0] * 32;
  const size_t embedding = static_cast<size_t>(info.cuda_embedding_bytes);
  for (const GpuShare& s : plan.gpus) {
    EXPECT_EQ(s.first_layer, 0);
    EXPECT_EQ(s.layers, 32);
    // Half of every layer (4 of 8 kv heads, 7168 of 14336 features), the embedding and head whole.
    EXPECT_NEAR(double(s.weights), double(layers / 2 + whole.weights - layers), 1e6);
    EXPECT_NEAR(double(s.kv_cache), double(whole.kv_cache / 2), 1.0);
    EXPECT_GT(s.weights, embedding);
  }
  EXPECT_EQ(plan.weights, plan.gpus[0].weights + plan.gpus[1].weights);
  // 8 GiB GPUs cannot each hold half of an fp16 8B's layers (6.5 GB), its 1 GB embedding and
  // 1 GB head and the 8,192-token cache: the first GPU that does not fit is named.
  MemoryPlan small = whole;
  place_tensor_parallel(small, o, info, r, {gpu(0, 8), gpu(1, 8)}, o.gpus);
  EXPECT_FALSE(small.fits);
  EXPECT_NE(small.advice.find("cuda:0 Test GPU"), std::string::npos) << small.advice;
  EXPECT_NE(small.advice.find("share of every layer"), std::string::npos) << small.advice;
  // An act-order o (every EXL2 layer) stays nearly whole on each GPU: half of the rest of the
  // layers, all of o (4096 × 4096 per layer).
  ModelInfo exl2 = info;
  exl2.format = ModelFormat::kExl2;
  MemoryPlan act_order = whole;
  place_tensor_parallel(act_order, o, exl2, r, {gpu(0, 80), gpu(1, 80)}, o.gpus);
  const double o_bytes = double(layers) * (4096.0 * 4096) /
                         (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336);
  EXPECT_NEAR(double(act_order.gpus[0].weights), double(plan.gpus[0].weights) + o_bytes / 2, 1e6);
  // Two key/value heads cannot be divided over three GPUs.
  ModelInfo narrow = info;
  narrow.config.num_kv_heads = 2;
  MemoryPlan refused = estimate_memory(o, narrow, resolve_load(o, narrow));
  EXPECT_THROW(
      place_tensor_parallel(refused, o, narrow, r, {gpu(0, 80), gpu(1, 80), gpu(2, 80)}, {0, 1, 2}),
      Error);
}

}  // namespace
}  // namespace hearth
