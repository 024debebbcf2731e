// Speculative decoding on the GPU. A check batch (each sequence's last token and its proposals,
// with every row's logits) runs as decode rows (CudaBackendOptions::check_slice_max_tokens):
// its rows must give the logits that decoding the same tokens one step at a time gives
// (bit-identical where every op is batch-invariant: EXL2, GPTQ, and fp16, whose check rows run
// the row GEMV's several-row form (CudaBackendOptions::exact_check_rows) or the tensor-core GEMV
// (dense_invariant_max_rows); close for fp16 on cuBLAS), and the CPU backend's within the model
// gate. Through the generator, greedy speculation must give the tokens of plain decoding; on the
// real SmolLM2 (when present) too, with the share of proposals kept printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "engine/api/engine.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_paths.h"
#include "tests/common/tiny_model.h"
#include "tests/gpu/gpu_test_util.h"

namespace hearth {
namespace {

constexpr int64_t kPage = 64;

LlamaModelOptions model_options() {
  LlamaModelOptions o;
  o.max_seq_len = 1024;
  o.max_batch_tokens = 512;
  o.max_logit_rows = 32;
  return o;
}

// A synthetic model of the "tiny" shape in one of three weight formats.
struct Weights {
  explicit Weights(const std::string& format) : config(synthetic_model_config("tiny")) {
    if (format == "fp16") {
      dense.emplace(config, 21, DType::kF16);
      return;
    }
    SyntheticQuantSource::Options o;
    o.format = format;
    o.bpw = 4.0;
    o.seed = 21;
    quant.emplace(config, o);
    config.quantization_config_json = quant->quantization_config_json();
  }
  const TensorSource& source() const {
    return dense ? static_cast<const TensorSource&>(*dense) : *quant;
  }
  ModelConfig config;
  std::optional<SyntheticSource> dense;
  std::optional<SyntheticQuantSource> quant;
};

std::vector<int32_t> ids(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<int32_t>(gpu_test::mix(seed * 104729 + i) % static_cast<uint64_t>(vocab));
  return out;
}

// Logits rows of `tokens` fed after `prompt`: one decode step per token, or one check step.
std::vector<float> rows_after(Backend& backend, const Weights& w,
                              const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& tokens, bool one_step) {
  LlamaModel model(w.config, backend, w.source(), model_options());
  auto cache = backend.create_kv_cache(model.kv_cache_spec(8, kPage));
  const std::vector<int32_t> pages = {0, 1, 2, 3};
  BatchDesc prefill;
  prefill.seqs.push_back({prompt, 0, pages, false});
  model.forward(prefill, *cache);
  const auto start = static_cast<int32_t>(prompt.size());
  const int64_t vocab = w.config.vocab_size;
  if (one_step) {
    BatchDesc check;
    check.seqs.push_back({tokens, start, pages, true});
    return backend.read(model.forward(check, *cache), static_cast<int64_t>(tokens.size()));
  }
  std::vector<float> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    BatchDesc step;
    step.seqs.push_back({std::span(&tokens[i], 1), start + static_cast<int32_t>(i), pages, false});
    const auto row = backend.read(model.forward(step, *cache), 1);
    out.insert(out.end(), row.begin(), row.begin() + vocab);
  }
  return out;
}

TEST(GpuSpeculation, CheckRowsGiveTheLogitsOfDecodeSteps) {
  HEARTH_REQUIRE_GPU();
  // GPTQ with and without the RMSNorm fold (decode steps of up to fold_norm_max_rows rows fold
  // it; every norm adds its sum of squares in one order, kernels/rms_sum.cuh). fp16 by default
  // (check rows on the row GEMV's several-row form), on cuBLAS (exact_check_rows off), and with
  // every dense linear of up to 16 rows on the tensor-core GEMV (dense_invariant_max_rows).
  struct Case {
    std::string format;
    int64_t fold_rows;
    bool identical;
    int64_t dense_invariant_rows = 0;
    bool exact_check_rows = true;
  };
  const std::vector<Case> cases = {{"exl2", 2, true},
                                   {"gptq", 0, true},
                                   {"gptq", 2, true},
                                   {"fp16", 2, true},
                                   {"fp16", 2, false, 0, false},
                                   {"fp16", 2, true, 16}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.format + ", fold rows " + std::to_string(c.fold_rows) +
                 ", invariant dense rows " + std::to_string(c.dense_invariant_rows) +
                 ", exact check rows " + std::to_string(c.exact_check_rows));
    CudaBackendOptions bo;
    bo.fold_norm_max_rows = c.fold_rows;
    bo.dense_invariant_max_rows = c.dense_invariant_rows;
    bo.exact_check_rows = c.exact_check_rows;
    auto gpu = create_cuda_backend(bo);
    const Weights w(c.format);
    // Contexts within the first decode tile and across several splits.
    for (const int64_t context : {9, 150}) {
      const auto prompt = ids(context, w.config.vocab_size, 1 + context);
      const auto tokens = ids(7, w.config.vocab_size, 99);
      const auto stepped = rows_after(*gpu, w, prompt, tokens, false);
      const auto checked = rows_after(*gpu, w, prompt, tokens, true);
      ASSERT_EQ(stepped.size(), checked.size());
      const auto d = gpu_test::compare(checked, stepped);
      if (c.identical) {
        EXPECT_TRUE(checked == stepped) << "context " << context << ": " << d.str();
      } else {
        // fp16 on cuBLAS: the check's linears are cuBLAS GEMMs, the decode step's the row GEMV.
        EXPECT_TRUE(d.finite && d.nmse < 1e-5) << "context " << context << ": " << d.str();
      }
      std::printf(
          "[ check rows ] %s (fold %lld, invariant dense rows %lld, exact check rows %d), "
          "context %lld: %s decode steps (%s)\n",
          c.format.c_str(), static_cast<long long>(c.fold_rows),
          static_cast<long long>(c.dense_invariant_rows), c.exact_check_rows ? 1 : 0,
          static_cast<long long>(context), checked == stepped ? "bit-identical to" : "close to",
          d.str().c_str());
    }
  }
}

// Several sequences of different lengths with 1..9 new tokens each, against the CPU backend.
TEST(GpuSpeculation, MixedCheckBatchesMatchTheCpu) {
  HEARTH_REQUIRE_GPU();
  auto gpu = create_cuda_backend({});
  auto cpu = create_cpu_backend(0);
  const Weights w("exl2");
  const std::vector<int64_t> contexts = {5, 70, 200, 1};
  const std::vector<int64_t> news = {9, 1, 4, 2};
  std::vector<std::vector<float>> results;
  for (Backend* b : {gpu.get(), cpu.get()}) {
    LlamaModel model(w.config, *b, w.source(), model_options());
    auto cache = b->create_kv_cache(model.kv_cache_spec(32, kPage));
    std::vector<std::vector<int32_t>> prompts, tails, pages(contexts.size());
    BatchDesc prefill, check;
    int32_t next_page = 0;
    for (size_t s = 0; s < contexts.size(); ++s) {
      prompts.push_back(ids(contexts[s], w.config.vocab_size, 7 + s));
      tails.push_back(ids(news[s], w.config.vocab_size, 70 + s));
      for (int i = 0; i < 5; ++i) pages[s].push_back(next_page++);
    }
    for (size_t s = 0; s < contexts.size(); ++s) {
      prefill.seqs.push_back({prompts[s], 0, pages[s], false});
      check.seqs.push_back({tails[s], static_cast<int32_t>(contexts[s]), pages[s], news[s] > 1});
    }
    model.forward(prefill, *cache);
    results.push_back(b->read(model.forward(check, *cache), check.logit_rows()));
  }
  const auto d = gpu_test::compare(results[0], results[1]);
  EXPECT_TRUE(d.finite && d.nmse <= 5e-4) << d.str();
}

// Greedy generation through the generator with speculation on and off: prompts that repeat a
// random stretch (lookup proposes it), run one at a time (each check row then gets the bits of
// the one-row step it replaces: identical tokens on EXL2 and fp16) and all together (batched
// fp16 steps without speculation run cuBLAS, whose bits differ from one-row steps').
TEST(GpuSpeculation, GreedyGenerationMatchesPlainDecoding) {
  HEARTH_REQUIRE_GPU();
  auto gpu = create_cuda_backend({});
  test::ByteTokenizer tokenizer;
  for (const std::string format : {"exl2", "fp16"}) {
    SCOPED_TRACE(format);
    const Weights w(format);
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 5; ++i) {
      auto stretch = ids(20 + 7 * i, w.config.vocab_size, 300 + i);
      auto p = stretch;
      p.insert(p.end(), stretch.begin(), stretch.end());
      p.insert(p.end(), stretch.begin(), stretch.begin() + 5);
      prompts.push_back(std::move(p));
    }
    auto run = [&](bool speculate, bool together) {
      LlamaModel model(w.config, *gpu, w.source(), model_options());
      auto cache = gpu->create_kv_cache(model.kv_cache_spec(64, kPage));
      GeneratorOptions go;
      go.max_batch = 8;
      go.max_seq_len = 1024;
      go.max_batch_tokens = 256;
      if (speculate) go.speculation.mode = SpeculationMode::kNgram;
      go.speculation.measured = false;  // the same proposals whatever the timing
      Generator generator(model, *cache, tokenizer, go);
      auto request = [&](const std::vector<int32_t>& prompt) {
        JobRequest r;
        r.prompt = prompt;
        r.max_tokens = 48;
        r.ignore_eos = true;
        return r;
      };
      std::vector<JobResult> out;
      auto drain = [&](const std::vector<int64_t>& job_ids) {
        while (!generator.idle()) generator.step();
        for (int64_t id : job_ids) out.push_back(*generator.take_result(id));
      };
      if (together) {
        std::vector<int64_t> job_ids;
        for (const auto& p : prompts) job_ids.push_back(generator.submit(request(p)));
        drain(job_ids);
      } else {
        for (const auto& p : prompts) drain({generator.submit(request(p))});
      }
      return out;
    };
    for (const bool together : {false, true}) {
      const auto off = run(false, together);
      const auto on = run(true, together);
      int identical = 0;
      int64_t proposed = 0, accepted = 0;
      for (size_t i = 0; i < prompts.size(); ++i) {
        identical += on[i].tokens == off[i].tokens;
        proposed += on[i].proposed_tokens;
        accepted += on[i].accepted_tokens;
        if (!together) {
          EXPECT_EQ(on[i].tokens, off[i].tokens) << "prompt " << i;
        }
      }
      EXPECT_GT(proposed, 0);
      std::printf(
          "[ speculation ] %s %s: %d of %zu greedy answers identical, %lld of %lld "
          "proposals kept\n",
          format.c_str(), together ? "together" : "alone", identical, prompts.size(),
          static_cast<long long>(accepted), static_cast<long long>(proposed));
    }
  }
}

// A draft model on the same backend (its own decode graphs beside the model's): greedy tokens
// are those of plain decoding, and a draft with the model's own weights has its proposals kept.
TEST(GpuSpeculation, DraftModelOnTheSameGpuKeepsGreedyTokens) {
  HEARTH_REQUIRE_GPU();
  auto gpu = create_cuda_backend({});
  test::ByteTokenizer tokenizer;
  const Weights w("exl2");
  SyntheticSource other(w.config, 77, DType::kF16);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(ids(30 + 11 * i, w.config.vocab_size, 500 + i));
  auto run = [&](const TensorSource* draft_weights) {
    LlamaModel model(w.config, *gpu, w.source(), model_options());
    auto cache = gpu->create_kv_cache(model.kv_cache_spec(64, kPage));
    std::unique_ptr<LlamaModel> draft_model;
    std::unique_ptr<KvCacheStorage> draft_cache;
    std::unique_ptr<DraftModel> drafter;
    GeneratorOptions go;
    go.max_batch = 8;
    go.max_seq_len = 1024;
    go.max_batch_tokens = 512;
    if (draft_weights) {
      ModelConfig dc = w.config;
      if (draft_weights == &other) dc.quantization_config_json.clear();
      draft_model = std::make_unique<LlamaModel>(dc, *gpu, *draft_weights, model_options());
      draft_cache = gpu->create_kv_cache(draft_model->kv_cache_spec(64, kPage));
      drafter = std::make_unique<DraftModel>(*draft_model, *draft_cache);
      go.speculation.mode = SpeculationMode::kDraft;
      go.speculation.max_draft_tokens = 4;
      go.speculation.measured = false;
    }
    Generator generator(model, *cache, tokenizer, go, drafter.get());
    std::vector<JobResult> out;
    for (const auto& p : prompts) {  // one at a time: the same block shapes as plain decoding
      JobRequest r;
      r.prompt = p;
      r.max_tokens = 40;
      r.ignore_eos = true;
      const int64_t id = generator.submit(std::move(r));
      while (!generator.idle()) generator.step();
      out.push_back(*generator.take_result(id));
    }
    return out;
  };
  const auto plain = run(nullptr);
  const auto self = run(&w.source());
  const auto foreign = run(&other);
  int64_t self_kept = 0, self_proposed = 0, other_kept = 0, other_proposed = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(self[i].tokens, plain[i].tokens) << "prompt " << i;
    EXPECT_EQ(foreign[i].tokens, plain[i].tokens) << "prompt " << i;
    self_kept += self[i].accepted_tokens;
    self_proposed += self[i].proposed_tokens;
    other_kept += foreign[i].accepted_tokens;
    other_proposed += foreign[i].proposed_tokens;
  }
  EXPECT_GT(self_proposed, 0);
  // The draft's catch-up runs through the prefill path (a last-bit difference can flip a near-tie).
  EXPECT_GE(self_kept * 100, self_proposed * 95);
  std::printf("[ speculation ] draft = model: %lld of %lld kept; other draft: %lld of %lld\n",
              static_cast<long long>(self_kept), static_cast<long long>(self_proposed),
              static_cast<long long>(other_kept), static_cast<long long>(other_proposed));
}

// The real model: a code edit through the Engine with speculation off and on.
TEST(GpuSpeculation, SmolLm2CodeEditGivesTheSameAnswer) {
  HEARTH_REQUIRE_GPU();
  if (!std::filesystem::exists(test::test_model())) {
    GTEST_SKIP() << "skipped: " << test::test_model() << " is not on this machine";
  }
  GenerationRequest r;
  r.messages = {{"user",
                 "Add a docstring to this function and return it whole:\n\ndef area(width, "
                 "height):\n    if width < 0 or height < 0:\n        raise ValueError('negative "
                 "size')\n    return width * height\n"}};
  r.max_tokens = 96;
  std::vector<GenerationResult> results;
  for (const Speculation s : {Speculation::kOff, Speculation::kNgram}) {
    Engine engine;
    LoadOptions o;
    o.model_path = test::test_model();
    o.device = DeviceKind::kCuda;
    o.max_seq_len = 1024;
    o.speculation = s;
    engine.load(o);
    results.push_back(engine.generate(r));
  }
  EXPECT_EQ(results[1].tokens, results[0].tokens);
  EXPECT_GT(results[1].stats.accepted_tokens, 0);
  std::printf(
      "[ speculation ] SmolLM2 code edit: %lld of %lld proposals kept, %.1f -> %.1f "
      "tokens/s\n",
      static_cast<long long>(results[1].stats.accepted_tokens),
      static_cast<long long>(results[1].stats.proposed_tokens),
      results[0].stats.decode_tokens_per_s(), results[1].stats.decode_tokens_per_s());
}

}  // namespace
}  // namespace hearth
