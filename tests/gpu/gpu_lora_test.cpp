// LoRA on the CUDA backend against the CPU reference: the op alone (both of its paths: the
// shrink/expand kernels for up to kLoraKernelMaxRows rows and cuBLAS beyond, several adapter
// slots and targets, every row weighing the slots its own way) and whole tiny models with
// adapters, batched and replayed from CUDA graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/bench/synthetic_lora.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "kernels/kernels.h"
#include "tests/common/tiny_model.h"
#include "tests/gpu/gpu_test_util.h"

namespace hearth {
namespace {

using gpu_test::TestBatch;

struct OpShape {
  int64_t rows_per_seq;
  int64_t seqs;
  int64_t in;
  std::vector<int64_t> outs;
};

HostTensor values(std::vector<int64_t> shape, uint64_t seed, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return HostTensor::from_floats(gpu_test::random_values(static_cast<size_t>(n), seed, scale),
                                 shape);
}

// The op on one backend: outs start from given values (the base linears' outputs), the LoRA
// parts add to them. Returns every output, concatenated.
std::vector<float> run_lora(Backend& b, const OpShape& shape, const LoraSource& source,
                            const std::vector<std::vector<float>>& seq_weights) {
  TestBatch batch;
  for (int64_t s = 0; s < shape.seqs; ++s) {
    batch.seqs.push_back({0, static_cast<int32_t>(shape.rows_per_seq), {0}, false});
  }
  BatchDesc desc = batch.desc();
  for (size_t s = 0; s < desc.seqs.size(); ++s) desc.seqs[s].adapter_weights = seq_weights[s];
  const int64_t rows = batch.rows();
  const PreparedBatch prepared = b.prepare_batch(desc);
  std::vector<std::unique_ptr<BackendWeight>> keep;
  const DeviceTensor x = b.alloc_activation(prepared.tokens, shape.in);
  std::vector<DeviceTensor> outs;
  gpu_test::load(b, values({rows, shape.in}, 1, 1.0f).to_floats(), rows, shape.in, x,
                 prepared.tokens, keep);
  for (size_t t = 0; t < shape.outs.size(); ++t) {
    outs.push_back(b.alloc_activation(prepared.tokens, shape.outs[t]));
    gpu_test::load(b, values({rows, shape.outs[t]}, 10 + t, 1.0f).to_floats(), rows, shape.outs[t],
                   outs.back(), prepared.tokens, keep);
  }
  const std::unique_ptr<BackendWeight> lora = b.upload_lora(source);
  b.run([&] { b.lora(*lora, x.first_rows(prepared.tokens), outs); }, std::nullopt);
  std::vector<float> all;
  for (const DeviceTensor& o : outs) {
    const std::vector<float> v = b.read(o, rows);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TEST(GpuLora, OpMatchesCpuOnBothPaths) {
  HEARTH_REQUIRE_GPU();
  auto cpu = create_cpu_backend(0);
  // Every layout on both paths: Hearth's kernels (up to their row limit) and cuBLAS.
  CudaBackendOptions on_kernels, on_cublas;
  on_kernels.lora_kernel_max_rows = kernels::kLoraKernelMaxRows;
  on_cublas.lora_kernel_max_rows = 0;
  auto cuda_kernels = create_cuda_backend(on_kernels);
  auto cuda_cublas = create_cuda_backend(on_cublas);
  // (rows per sequence, sequences): decode rows, a few prompt rows (kernels), and many (cuBLAS).
  const std::vector<std::pair<int64_t, int64_t>> layouts = {{1, 1},  {1, 5},  {4, 4},
                                                            {1, 17}, {40, 3}, {300, 1}};
  for (const auto& [per_seq, seqs] : layouts) {
    const OpShape shape{per_seq, seqs, 576, {576, 192, 192}};
    // Slot 0 on q and v, slot 2 on all three, slot 5 on k.
    const LoraSource source = gpu_test::three_slot_lora(shape.in, shape.outs, 100);
    std::vector<std::vector<float>> weights;
    for (int64_t s = 0; s < seqs; ++s) {
      switch (s % 4) {
        case 0:
          weights.push_back({1.0f, 0.0f, 0.5f, 0.0f, 0.0f, 1.25f});
          break;
        case 1:
          weights.push_back({0.0f, 0.0f, 1.0f});
          break;
        case 2:
          weights.push_back({});  // the base model: outputs unchanged
          break;
        default:
          weights.push_back({-0.5f});
      }
    }
    const std::vector<float> want = run_lora(*cpu, shape, source, weights);
    const std::vector<float> base =
        run_lora(*cpu, shape, source, std::vector<std::vector<float>>(seqs));
    for (Backend* cuda : {cuda_kernels.get(), cuda_cublas.get()}) {
      const bool kernel_path =
          cuda == cuda_kernels.get() && per_seq * seqs <= kernels::kLoraKernelMaxRows;
      SCOPED_TRACE(std::to_string(per_seq) + " rows x " + std::to_string(seqs) + " sequences, " +
                   (kernel_path ? "kernels" : "cuBLAS"));
      const std::vector<float> got = run_lora(*cuda, shape, source, weights);
      const gpu_test::Diff d = gpu_test::compare(got, want);
      EXPECT_TRUE(d.finite);
      // fp16 inputs and outputs (one rounding of the base value, of t and of the sum).
      EXPECT_EQ(gpu_test::first_outside(got, want, 4e-3, 4e-3), -1) << d.str();
      // Rows of sequences without weights are exactly their inputs.
      if (seqs > 2) {
        const int64_t row = 2 * per_seq;  // sequence 2's first row, first target
        for (int64_t i = 0; i < per_seq * shape.outs[0]; ++i) {
          ASSERT_EQ(got[static_cast<size_t>(row * shape.outs[0] + i)],
                    base[static_cast<size_t>(row * shape.outs[0] + i)]);
        }
      }
    }
  }
}

// A tiny model with two adapters on the CPU and on CUDA (decode steps from CUDA graphs): the
// same greedy tokens for a batch mixing adapter sets, and each sequence's tokens as alone.
TEST(GpuLora, TinyModelWithAdaptersMatchesCpu) {
  HEARTH_REQUIRE_GPU();
  const ModelConfig config = test::tiny_config();
  const test::TinyWeights weights(config);
  const auto attn = synthetic_lora_adapter(
      config, 4, 1000,
      {LoraProjection::kQ, LoraProjection::kK, LoraProjection::kV, LoraProjection::kO}, 0.3f);
  const auto all = synthetic_lora_adapter(config, 8, 2000, {}, 0.3f);
  const std::vector<std::vector<int32_t>> prompts = {
      {72, 101, 108, 108, 111}, {84, 104, 101, 32, 113, 117, 105}, {49, 44, 32, 50}};
  const std::vector<std::vector<float>> sets = {{1.0f}, {0.7f, 0.3f}, {}};
  auto generate = [&](Backend& backend, const std::vector<size_t>& which, bool base = false) {
    LlamaModelOptions mo;
    mo.max_seq_len = 256;
    mo.max_batch_tokens = 256;
    mo.max_logit_rows = 16;
    LlamaModel model(config, backend, weights, mo);
    model.set_adapters({attn, all});
    auto cache = backend.create_kv_cache(model.kv_cache_spec(16, 64));
    test::ByteTokenizer tokenizer;
    GeneratorOptions go;
    go.max_seq_len = 256;
    go.max_batch_tokens = 256;
    Generator gen(model, *cache, tokenizer, go);
    std::vector<int64_t> ids;
    for (size_t i : which) {
      JobRequest r;
      r.prompt = prompts[i];
      r.max_tokens = 24;
      r.ignore_eos = true;
      if (!base) {
        r.adapter_weights = sets[i];
        r.cache_salt = i + 1;
      }
      ids.push_back(gen.submit(std::move(r)));
    }
    while (!gen.idle()) gen.step();
    std::vector<std::vector<int32_t>> out;
    for (int64_t id : ids) out.push_back(gen.take_result(id)->tokens);
    return out;
  };
  auto cpu = create_cpu_backend(0);
  auto cuda = create_cuda_backend(CudaBackendOptions{});
  const auto cpu_batch = generate(*cpu, {0, 1, 2});
  const auto cuda_batch = generate(*cuda, {0, 1, 2});
  int differing = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    // The tiny model's logits are far apart: fp16 activations give the same greedy tokens.
    EXPECT_EQ(cuda_batch[i], cpu_batch[i]) << "sequence " << i;
    const auto alone = generate(*cuda, {i});
    EXPECT_EQ(alone[0], cuda_batch[i]) << "sequence " << i << " alone";
    differing += cpu_batch[i] != generate(*cpu, {i}, true)[0] ? 1 : 0;
  }
  EXPECT_EQ(differing, 2);  // the adapters change what the model writes (not sequence 2's)
}

}  // namespace
}  // namespace hearth
