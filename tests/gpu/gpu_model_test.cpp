// Whole forward passes: the Llama model (engine/model/llama_model.h) on the CUDA backend against
// the CPU reference, on synthetic models of several shapes; batching of prompts of different
// lengths; CUDA graphs and programmatic dependent launch give bit-identical results; and, when
// the real SmolLM2-135M-Instruct GGUF is present, greedy generation through the Engine API on
// both devices.
//
// Token agreement uses check_logprobs_close semantics (TESTING.md, "Numerical gates"): sequences
// must be identical, or at the first divergence each side's token must be in the other's top-5
// (fp16 versus fp32 activations can swap near-ties); the rest is then not compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "engine/api/engine.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/bench/synthetic_source.h"
#include "engine/core/error.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_paths.h"
#include "tests/common/tiny_model.h"
#include "tests/gpu/gpu_test_util.h"

namespace hearth {
namespace {

constexpr int64_t kPageSize = 64;

std::vector<int32_t> top_k_ids(const float* row, int64_t vocab, int k) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  ids.resize(static_cast<size_t>(k));
  return ids;
}

// One model on one backend with its own cache, and a greedy loop over a batch of prompts.
struct Runner {
  Runner(Backend& backend, const ModelConfig& config, const TensorSource& weights,
         int64_t num_pages, KvCacheType cache_type = KvCacheType::kF16)
      : model(config, backend, weights, options()),
        cache(backend.create_kv_cache(model.kv_cache_spec(num_pages, kPageSize, cache_type))) {}

  static LlamaModelOptions options() {
    LlamaModelOptions o;
    o.max_seq_len = 2048;
    o.max_batch_tokens = 1024;
    o.max_logit_rows = 16;
    return o;
  }

  struct Output {
    std::vector<std::vector<int32_t>> tokens;             // per prompt
    std::vector<std::vector<std::vector<int32_t>>> top5;  // per prompt, per step
    std::vector<float> first_logits;                      // prompt 0's first logits row
  };

  // Prefills all prompts in one forward pass, then decodes them together for `steps` tokens.
  Output greedy(const std::vector<std::vector<int32_t>>& prompts, int steps) {
    const size_t S = prompts.size();
    std::vector<std::vector<int32_t>> pages(S);
    int32_t next_page = 0;
    for (size_t s = 0; s < S; ++s) {
      const int64_t need =
          (static_cast<int64_t>(prompts[s].size()) + steps + kPageSize) / kPageSize;
      for (int64_t i = 0; i < need; ++i) pages[s].push_back(next_page++);
    }
    Output out;
    out.tokens.resize(S);
    out.top5.resize(S);
    std::vector<std::vector<int32_t>> feed = prompts;
    std::vector<int32_t> pos(S, 0);
    const int64_t vocab = model.config().vocab_size;
    for (int step = 0; step < steps; ++step) {
      BatchDesc batch;
      for (size_t s = 0; s < S; ++s) {
        SequenceSlice slice;
        slice.tokens = feed[s];
        slice.start_pos = pos[s];
        slice.page_table = pages[s];
        batch.seqs.push_back(slice);
      }
      DeviceTensor logits = model.forward(batch, *cache);
      const std::vector<float> host = model.backend().read(logits, static_cast<int64_t>(S));
      if (step == 0) out.first_logits.assign(host.begin(), host.begin() + vocab);
      for (size_t s = 0; s < S; ++s) {
        const float* row = host.data() + static_cast<int64_t>(s) * vocab;
        const auto top = top_k_ids(row, vocab, 5);
        out.tokens[s].push_back(top[0]);
        out.top5[s].push_back(top);
        pos[s] += static_cast<int32_t>(feed[s].size());
        feed[s] = {top[0]};
      }
    }
    return out;
  }

  LlamaModel model;
  std::unique_ptr<KvCacheStorage> cache;
};

// "" when the sequences agree under check_logprobs_close, else a description.
std::string logprobs_close(const std::vector<int32_t>& a,
                           const std::vector<std::vector<int32_t>>& a_top,
                           const std::vector<int32_t>& b,
                           const std::vector<std::vector<int32_t>>& b_top, bool* identical) {
  *identical = a == b;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] == b[i]) continue;
    const bool a_in_b = std::count(b_top[i].begin(), b_top[i].end(), a[i]) > 0;
    const bool b_in_a = std::count(a_top[i].begin(), a_top[i].end(), b[i]) > 0;
    if (a_in_b && b_in_a) return "";
    return "diverged at token " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " +
           std::to_string(b[i]) + " (not in each other's top-5)";
  }
  return "";
}

std::vector<int32_t> random_prompt(int64_t length, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> p(static_cast<size_t>(length));
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = static_cast<int32_t>(gpu_test::mix(seed * 7919 + i) % static_cast<uint64_t>(vocab));
  }
  return p;
}

class GpuModel : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { HEARTH_REQUIRE_GPU(); }
};

TEST_P(GpuModel, GreedyTokensAndLogitsMatchTheCpuBackend) {
  const ModelConfig config = synthetic_model_config(GetParam());
  SyntheticSource weights(config, 42, DType::kF16);
  auto cpu = create_cpu_backend(0);
  auto gpu = create_cuda_backend({});
  Runner on_cpu(*cpu, config, weights, 64);
  Runner on_gpu(*gpu, config, weights, 64);
  const std::vector<std::vector<int32_t>> prompts = {random_prompt(37, config.vocab_size, 1),
                                                     random_prompt(100, config.vocab_size, 2),
                                                     random_prompt(1, config.vocab_size, 3)};
  const auto ref = on_cpu.greedy(prompts, 20);
  const auto got = on_gpu.greedy(prompts, 20);
  const auto d = gpu_test::compare(got.first_logits, ref.first_logits);
  EXPECT_TRUE(d.finite && d.nmse < 1e-4) << "first logits: " << d.str();
  for (size_t s = 0; s < prompts.size(); ++s) {
    bool identical = false;
    const std::string why =
        logprobs_close(got.tokens[s], got.top5[s], ref.tokens[s], ref.top5[s], &identical);
    EXPECT_EQ(why, "") << GetParam() << " prompt " << s;
    std::printf("[ %s prompt %zu ] gpu vs cpu: %s; first logits nmse %.2e\n", GetParam(), s,
                identical ? "identical" : "close", d.nmse);
  }
}

INSTANTIATE_TEST_SUITE_P(Synthetic, GpuModel,
                         ::testing::Values("tiny", "tiny-mha", "tiny-gqa8", "tiny-odd"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Over a q8/q6/q4 cache the CUDA backend stores the codes the CPU would store for its (fp16)
// activations; where those differ from the CPU's fp32 ones by a level's edge a code differs, which
// later layers carry on: the first logits' NMSE is allowed 1e-4 / 1e-3 / 5e-3 for q8 / q6 / q4, and
// greedy tokens must agree as for fp16 caches. Prefill, decode steps in CUDA graphs, three prompts
// of different lengths. Each also stays close to the fp16 cache (the quantization error itself).
TEST(GpuQuantizedCache, GreedyTokensMatchTheCpuBackendWithTheSameCache) {
  HEARTH_REQUIRE_GPU();
  for (const char* name : {"tiny", "tiny-gqa8"}) {
    const ModelConfig config = synthetic_model_config(name);
    SyntheticSource weights(config, 42, DType::kF16);
    auto cpu = create_cpu_backend(0);
    auto gpu = create_cuda_backend({});
    const std::vector<std::vector<int32_t>> prompts = {random_prompt(37, config.vocab_size, 1),
                                                       random_prompt(300, config.vocab_size, 2),
                                                       random_prompt(1, config.vocab_size, 3)};
    const auto fp16 = Runner(*gpu, config, weights, 64).greedy(prompts, 20);
    for (KvCacheType type : {KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
      const auto ref = Runner(*cpu, config, weights, 64, type).greedy(prompts, 20);
      const auto got = Runner(*gpu, config, weights, 64, type).greedy(prompts, 20);
      const auto d = gpu_test::compare(got.first_logits, ref.first_logits);
      const double same_cache = type == KvCacheType::kQ8   ? 1e-4
                                : type == KvCacheType::kQ6 ? 1e-3
                                                           : 5e-3;
      EXPECT_TRUE(d.finite && d.nmse < same_cache)
          << name << " " << kv_cache_type_name(type) << ": " << d.str();
      const auto q = gpu_test::compare(got.first_logits, fp16.first_logits);
      const double bound = type == KvCacheType::kQ8 ? 1e-3 : type == KvCacheType::kQ6 ? 1e-2 : 5e-2;
      EXPECT_TRUE(q.finite && q.nmse < bound)
          << name << " " << kv_cache_type_name(type) << " vs fp16 cache: " << q.str();
      for (size_t s = 0; s < prompts.size(); ++s) {
        bool identical = false;
        const std::string why =
            logprobs_close(got.tokens[s], got.top5[s], ref.tokens[s], ref.top5[s], &identical);
        EXPECT_EQ(why, "") << name << " " << kv_cache_type_name(type) << " prompt " << s;
        std::printf(
            "[ %s %s prompt %zu ] gpu vs cpu: %s; first logits nmse %.2e (vs fp16 cache "
            "%.2e)\n",
            name, kv_cache_type_name(type), s, identical ? "identical" : "close", d.nmse, q.nmse);
      }
    }
  }
}

// Eight prompts of different lengths (crossing pages) in one batch give each the tokens it gets
// alone; with the CPU run alone as the outside reference too.
TEST(GpuBatching, EightPromptsTogetherMatchEachAlone) {
  HEARTH_REQUIRE_GPU();
  const ModelConfig config = synthetic_model_config("tiny");
  SyntheticSource weights(config, 7, DType::kF16);
  auto gpu = create_cuda_backend({});
  auto cpu = create_cpu_backend(0);
  Runner batched(*gpu, config, weights, 160);
  const std::vector<int64_t> lengths = {1, 5, 17, 31, 64, 100, 129, 260};
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < lengths.size(); ++i) {
    prompts.push_back(random_prompt(lengths[i], config.vocab_size, 50 + i));
  }
  const int steps = 16;
  const auto together = batched.greedy(prompts, steps);
  int identical_count = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Runner alone(*gpu, config, weights, 32);
    const auto single = alone.greedy({prompts[i]}, steps);
    bool identical = false;
    EXPECT_EQ(logprobs_close(together.tokens[i], together.top5[i], single.tokens[0], single.top5[0],
                             &identical),
              "")
        << "prompt " << i << " (length " << lengths[i] << ")";
    identical_count += identical;
    Runner reference(*cpu, config, weights, 32);
    const auto ref = reference.greedy({prompts[i]}, steps);
    bool same_as_cpu = false;
    EXPECT_EQ(logprobs_close(together.tokens[i], together.top5[i], ref.tokens[0], ref.top5[0],
                             &same_as_cpu),
              "")
        << "prompt " << i << " batched on the GPU vs alone on the CPU";
  }
  std::printf("[ batching ] %d of 8 prompts bit-identical batched vs alone\n", identical_count);
}

// Prefix reuse on the GPU: prompts that share a 300-token prefix, run through the generator with
// reuse off, then with reuse on (alone after a job that left the prefix, and all together). The
// reused keys and values come from a prefill of another shape, so bit-identity is not promised
// (cuBLAS picks kernels by shape, as in batching above): the gate is check_logprobs_close, and
// the count of bit-identical sequences is printed.
TEST(GpuPrefixReuse, ReusedPrefixesMatchNoReuse) {
  HEARTH_REQUIRE_GPU();
  const ModelConfig config = synthetic_model_config("tiny");
  SyntheticSource weights(config, 11, DType::kF16);
  auto gpu = create_cuda_backend({});
  test::ByteTokenizer tokenizer;
  const std::vector<int32_t> prefix = random_prompt(300, config.vocab_size, 900);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> p = prefix;
    const auto tail = random_prompt(5 + 13 * i, config.vocab_size, 910 + i);
    p.insert(p.end(), tail.begin(), tail.end());
    prompts.push_back(std::move(p));
  }
  auto run = [&](bool reuse, bool together) {
    LlamaModel model(config, *gpu, weights, Runner::options());
    auto cache = gpu->create_kv_cache(model.kv_cache_spec(64, kPageSize));
    GeneratorOptions go;
    go.max_batch = 8;
    go.max_seq_len = 2048;
    go.max_batch_tokens = 1024;
    go.prefix_reuse = reuse;
    Generator generator(model, *cache, tokenizer, go);
    auto request = [&](const std::vector<int32_t>& prompt) {
      JobRequest r;
      r.prompt = prompt;
      r.max_tokens = 16;
      r.logprobs = 5;
      r.ignore_eos = true;
      return r;
    };
    auto drain = [&](const std::vector<int64_t>& ids) {
      while (!generator.idle()) generator.step();
      std::vector<JobResult> out;
      for (int64_t id : ids) out.push_back(*generator.take_result(id));
      return out;
    };
    std::vector<int32_t> warm = prefix;
    warm.push_back(1);
    drain({generator.submit(request(warm))});
    std::vector<JobResult> results;
    if (together) {
      std::vector<int64_t> ids;
      for (const auto& p : prompts) ids.push_back(generator.submit(request(p)));
      results = drain(ids);
    } else {
      for (const auto& p : prompts) results.push_back(drain({generator.submit(request(p))})[0]);
    }
    return results;
  };
  auto tops = [](const JobResult& r) {
    std::vector<std::vector<int32_t>> out;
    for (const auto& lp : r.logprobs) {
      std::vector<int32_t> ids;
      for (const auto& [id, logprob] : lp.top) ids.push_back(id);
      out.push_back(ids);
    }
    return out;
  };
  const auto off = run(false, false);
  int identical_count = 0, compared = 0;
  for (bool together : {false, true}) {
    const auto on = run(true, together);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(off[i].cached_tokens, 0);
      // The 300-token prefix: four full pages shared, the 44 positions of the fifth copied.
      EXPECT_EQ(on[i].cached_tokens, 300) << "prompt " << i;
      bool identical = false;
      EXPECT_EQ(logprobs_close(on[i].tokens, tops(on[i]), off[i].tokens, tops(off[i]), &identical),
                "")
          << "prompt " << i << (together ? " (together)" : " (alone)");
      identical_count += identical;
      ++compared;
    }
  }
  std::printf("[ prefix reuse ] %d of %d sequences bit-identical with reuse vs without\n",
              identical_count, compared);
}

// Graph replay and programmatic dependent launch change nothing in the results.
TEST(GpuGraphs, GraphsAndPdlGiveBitIdenticalLogits) {
  HEARTH_REQUIRE_GPU();
  const ModelConfig config = synthetic_model_config("tiny-gqa8");
  SyntheticSource weights(config, 9, DType::kF16);
  std::vector<std::vector<int32_t>> prompts = {random_prompt(33, config.vocab_size, 1),
                                               random_prompt(3, config.vocab_size, 2),
                                               random_prompt(70, config.vocab_size, 3)};
  std::vector<std::vector<int32_t>> results;
  for (int variant = 0; variant < 3; ++variant) {
    CudaBackendOptions o;
    o.cuda_graphs = variant != 1;
    o.pdl = variant != 2;
    auto gpu = create_cuda_backend(o);
    Runner r(*gpu, config, weights, 16);
    const auto out = r.greedy(prompts, 12);  // decode steps 3.. replay captured graphs
    std::vector<int32_t> flat;
    for (const auto& t : out.tokens) flat.insert(flat.end(), t.begin(), t.end());
    results.push_back(flat);
  }
  EXPECT_EQ(results[0], results[1]) << "graphs on vs off";
  EXPECT_EQ(results[0], results[2]) << "PDL on vs off";
}

// The real model through the Engine on the GPU: chat requests that share a long system prompt
// (over 512 tokens), answered one after another with prefix reuse on and off. Greedy tokens
// are compared exactly; the count of identical answers is printed.
// The default GGUF's weights on the GPU are what the plan says they will be: its Q8_0 table stays
// packed, looked up in that form and run as the tied head, so the GPU holds less than the model's
// parameters in fp16.
TEST(GpuGgufWeights, TheGpuHoldsWhatThePlanCounts) {
  HEARTH_REQUIRE_GPU();
  if (!std::filesystem::exists(test::test_model())) {
    GTEST_SKIP() << "skipped: " << test::test_model() << " is not on this machine";
  }
  LoadOptions o;
  o.model_path = test::test_model();
  o.device = DeviceKind::kCuda;
  o.max_seq_len = 512;
  const MemoryPlan plan = Engine::plan(o);
  Engine engine;
  engine.load(o);
  const auto held = static_cast<double>(engine.memory_usage().weights);
  EXPECT_NEAR(held, static_cast<double>(plan.weights), 0.01 * static_cast<double>(plan.weights));
  EXPECT_LT(held, static_cast<double>(engine.info().parameters) * 2);
}

TEST(GpuPrefixReuse, SmolLm2ChatsWithASharedSystemPromptMatchNoReuse) {
  HEARTH_REQUIRE_GPU();
  if (!std::filesystem::exists(test::test_model())) {
    GTEST_SKIP() << "skipped: " << test::test_model() << " is not on this machine";
  }
  std::string system = "You are Hearth's assistant. Follow these house rules:";
  for (int i = 1; i <= 80; ++i) system += " Rule " + std::to_string(i) + ": be brief and kind.";
  const std::vector<std::string> questions = {"What is the capital of France?",
                                              "Name three colours.", "Count to five.",
                                              "Write a haiku about rain."};
  std::vector<std::vector<GenerationResult>> answers(2);
  for (int reuse = 0; reuse < 2; ++reuse) {
    Engine engine;
    LoadOptions o;
    o.model_path = test::test_model();
    o.device = DeviceKind::kCuda;
    o.max_seq_len = 2048;
    o.prefix_reuse = reuse == 1;
    engine.load(o);
    for (const auto& q : questions) {
      GenerationRequest r;
      r.messages = {{"system", system}, {"user", q}};
      r.max_tokens = 24;
      answers[reuse].push_back(engine.generate(r));
    }
  }
  int identical = 0;
  for (size_t i = 0; i < questions.size(); ++i) {
    const GenerationResult& off = answers[0][i];
    const GenerationResult& on = answers[1][i];
    EXPECT_EQ(off.stats.cached_prompt_tokens, 0);
    if (i > 0) {
      EXPECT_GE(on.stats.cached_prompt_tokens, 512) << questions[i];
    }
    EXPECT_EQ(on.tokens, off.tokens) << questions[i];
    identical += on.tokens == off.tokens;
  }
  std::printf("[ prefix reuse ] SmolLM2 on the GPU: %d of %zu answers identical with reuse\n",
              identical, questions.size());
}

// The real model (SmolLM2) on the GPU is checked against transformers, with check_logprobs_close
// semantics for fp16, in gpu_hf_parity_test.cpp.

}  // namespace
}  // namespace hearth
