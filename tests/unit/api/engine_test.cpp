// hearth::Engine in process, as the app, the CLI and the server use it, on a tiny synthetic
// Llama written as a Hugging Face folder and run on the CPU backend. Greedy tokens are checked
// against an independent double-precision decoder of the same weights (written apart from the
// engine, in tests/unit/quantizer/quantizer_test_model.h), not against the engine itself.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/api/engine.h"
#include "engine/api/memory_planner.h"
#include "engine/core/error.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/model/model_loader.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/common/test_paths.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;
namespace qt = quantizer::test;

// Logits of the last position of `ids`, recomputed from scratch in double precision.
std::vector<double> reference_logits(const std::map<std::string, std::vector<float>>& w,
                                     const qt::TinySpec& s, const std::vector<int32_t>& ids) {
  const auto T = static_cast<int64_t>(ids.size());
  const int64_t H = s.hidden, Q = s.heads * s.head_dim, KV = s.kv_heads * s.head_dim;
  const std::vector<float>& embed = w.at("model.embed_tokens.weight");
  qt::Mat x(static_cast<size_t>(T * H));
  for (int64_t t = 0; t < T; ++t) {
    std::copy_n(embed.begin() + ids[t] * H, H, x.begin() + t * H);
  }
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const qt::Mat h = qt::rms_norm(x, T, H, w.at(p + "input_layernorm.weight"), s.eps);
    qt::Mat q = qt::matmul_t(h, T, H, w.at(p + "self_attn.q_proj.weight"), Q);
    qt::Mat k = qt::matmul_t(h, T, H, w.at(p + "self_attn.k_proj.weight"), KV);
    const qt::Mat v = qt::matmul_t(h, T, H, w.at(p + "self_attn.v_proj.weight"), KV);
    qt::rope(q, T, s.heads, s.head_dim, s.rope_theta);
    qt::rope(k, T, s.kv_heads, s.head_dim, s.rope_theta);
    const qt::Mat attn = qt::attention(q, k, v, T, s);
    const qt::Mat o = qt::matmul_t(attn, T, Q, w.at(p + "self_attn.o_proj.weight"), H);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    const qt::Mat h2 = qt::rms_norm(x, T, H, w.at(p + "post_attention_layernorm.weight"), s.eps);
    qt::Mat gate = qt::matmul_t(h2, T, H, w.at(p + "mlp.gate_proj.weight"), s.inter);
    const qt::Mat up = qt::matmul_t(h2, T, H, w.at(p + "mlp.up_proj.weight"), s.inter);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
    const qt::Mat down = qt::matmul_t(gate, T, s.inter, w.at(p + "mlp.down_proj.weight"), H);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  const qt::Mat last(x.end() - H, x.end());
  const qt::Mat h = qt::rms_norm(last, 1, H, w.at("model.norm.weight"), s.eps);
  return qt::matmul_t(h, 1, H, embed, s.vocab);  // tied head
}

class EngineApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("hearth_engine_api_" + std::to_string(getpid()));
    weights_ = qt::write_tiny_model(dir_ / "tiny", spec_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static LoadOptions options() {
    LoadOptions o;
    o.model_path = dir_ / "tiny";
    o.device = DeviceKind::kCpu;
    o.cpu_threads = 2;
    o.max_seq_len = 256;
    o.max_batch = 4;
    return o;
  }
  static GenerationRequest greedy(const std::string& prompt, int32_t max_tokens) {
    GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;  // random weights: generate the full length
    return r;
  }

  static inline qt::TinySpec spec_;
  static inline fs::path dir_;
  static inline std::map<std::string, std::vector<float>> weights_;
};

TEST_F(EngineApi, InspectAndPlanDescribeTheModelBeforeLoading) {
  const ModelInfo info = Engine::inspect(dir_ / "tiny");
  EXPECT_EQ(info.format, ModelFormat::kSafetensors);
  EXPECT_EQ(info.config.num_layers, spec_.layers);
  EXPECT_EQ(info.config.hidden_size, spec_.hidden);
  EXPECT_EQ(info.parameters, info.config.parameter_count());
  EXPECT_EQ(info.file_bytes, static_cast<uint64_t>(2 * info.parameters));  // fp16, tied head

  const MemoryPlan plan = Engine::plan(options());
  EXPECT_TRUE(plan.fits) << plan.advice;
  EXPECT_EQ(plan.weights, info.file_bytes);  // the CPU keeps fp16 safetensors as they are
  // fp32 K and V for every layer, 256 positions (four 64-token pages).
  EXPECT_EQ(plan.kv_cache,
            static_cast<size_t>(2 * spec_.layers * 256 * spec_.kv_heads * spec_.head_dim * 4));
  EXPECT_FALSE(plan.device_name.empty());
}

// The default GGUF on the GPU: its Q8_0 embedding table (looked up packed, and run as the tied
// head) stays in its blocks' form, within 3 % of its bytes in the file; its 576-wide Q4_1 linears
// are small enough to run faster in fp16 (kGgufFp16MaxBytes), and so do the norms.
TEST(EnginePlan, GgufWeightsOnTheGpuCountPackedTablesAtTheirFileSize) {
  const ModelBundle bundle = open_model(test::test_model(), false);
  const ModelInfo& info = bundle.info;
  const ModelConfig& c = info.config;
  ASSERT_TRUE(c.tie_word_embeddings);
  const auto table = bundle.weights->packed("model.embed_tokens.weight");
  ASSERT_TRUE(table && runs_packed_on_gpu(*table));
  const double table_file = static_cast<double>(c.vocab_size * c.hidden_size) * 34.0 / 32.0;
  EXPECT_NEAR(static_cast<double>(info.cuda_embedding_bytes), table_file, 0.03 * table_file);
  uint64_t fp16 = 0;
  for (const std::string& name : bundle.weights->tensor_names()) {
    if (name == "model.embed_tokens.weight") continue;
    const auto packed = bundle.weights->packed(name);
    EXPECT_TRUE(!packed || !runs_packed_on_gpu(*packed)) << name;
    uint64_t numel = 1;
    for (int64_t d : bundle.weights->info(name).shape) numel *= static_cast<uint64_t>(d);
    fp16 += numel * 2;
  }
  EXPECT_EQ(info.cuda_weight_bytes, info.cuda_embedding_bytes + fp16);
  uint64_t layers = 0;
  for (uint64_t b : info.cuda_layer_bytes) layers += b;
  EXPECT_EQ(info.cuda_layer_bytes.size(), static_cast<size_t>(c.num_layers));
  EXPECT_EQ(layers + 2 * static_cast<uint64_t>(c.hidden_size),  // and the final norm
            info.cuda_weight_bytes - info.cuda_embedding_bytes);
}

// An adapter over packed quantized matrices on a GPU also takes a copy of each A in its matrix's
// stored row order (inputs rounded up to 32-row chunks), and the plan counts it; over fp16
// matrices, and on the CPU, it takes its A and B alone. GGUF linears count as packed only where
// the layer is smaller than its linears in fp16 (the default model's are expanded at load).
TEST(EnginePlan, AdaptersOverPackedMatricesCountTheirStoredOrderCopy) {
  LoraAdapter lora;
  auto linear = [](int64_t rank, int64_t in, int64_t out) {
    LoraLinear l;
    l.a = HostTensor::from_floats(std::vector<float>(static_cast<size_t>(rank * in), 0.5f),
                                  {rank, in});
    l.b = HostTensor::from_floats(std::vector<float>(static_cast<size_t>(out * rank), 0.5f),
                                  {out, rank});
    return l;
  };
  lora.linears = {linear(8, 576, 192), linear(4, 100, 576)};
  const size_t values = 8 * 576 + 192 * 8 + 4 * 100 + 576 * 4;
  EXPECT_EQ(adapter_device_bytes(lora, DType::kF16, false), values * 2);
  EXPECT_EQ(adapter_device_bytes(lora, DType::kF32, false), values * 4);
  EXPECT_EQ(adapter_device_bytes(lora, DType::kF16, true), (values + 8 * 576 + 4 * 128) * 2);

  LoadOptions cuda;
  cuda.device = DeviceKind::kCuda;
  LoadOptions cpu;
  cpu.device = DeviceKind::kCpu;
  const ModelInfo gguf = Engine::inspect(test::test_model());
  EXPECT_FALSE(packed_quantized_base(cuda, gguf));
  ModelInfo exl2 = gguf;
  exl2.format = ModelFormat::kExl2;
  EXPECT_TRUE(packed_quantized_base(cuda, exl2));
  EXPECT_FALSE(packed_quantized_base(cpu, exl2));
  ModelInfo small_layers = gguf;
  for (uint64_t& b : small_layers.cuda_layer_bytes) b /= 4;
  EXPECT_TRUE(packed_quantized_base(cuda, small_layers));
  ModelInfo fp16 = gguf;
  fp16.format = ModelFormat::kSafetensors;
  EXPECT_FALSE(packed_quantized_base(cuda, fp16));
}

// A quantized cache needs heads of 64 or 128 dims (the tiny model's are 16): the plan and the
// load say so, and the engine stays usable.
TEST_F(EngineApi, AQuantizedCacheTheModelCannotUseIsAClearError) {
  LoadOptions o = options();
  o.kv_cache_type = KvCacheType::kQ4;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (attempt == 0) {
        Engine::plan(o);
      } else {
        Engine engine;
        engine.load(o);
      }
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("heads of 64 or 128 dims; this model's have 16"),
                std::string::npos)
          << e.what();
    }
  }
  // Only the fp16 choice is offered for it.
  const MemoryPlan plan = Engine::plan(options());
  ASSERT_EQ(plan.cache_choices.size(), 1u);
  EXPECT_EQ(plan.cache_choices[0].type, KvCacheType::kF16);
  EXPECT_GT(plan.cache_choices[0].tokens_that_fit, 256);
  Engine engine;
  engine.load(options());
  EXPECT_EQ(engine.generate(greedy("Hello", 3)).tokens.size(), 3u);
}

TEST_F(EngineApi, GreedyTokensMatchAnIndependentDecoder) {
  Engine engine;
  engine.load(options());
  ASSERT_TRUE(engine.loaded());
  const GenerationResult r = engine.generate(greedy("Hello, hearth", 12));
  EXPECT_EQ(r.finish, FinishReason::kLength);
  ASSERT_EQ(r.tokens.size(), 12u);
  EXPECT_EQ(r.stats.prompt_tokens, 13);  // byte-level, no merges, no BOS added
  std::vector<int32_t> ids = engine.tokenizer().encode("Hello, hearth", true);
  int checked = 0;
  for (int32_t token : r.tokens) {
    const std::vector<double> logits = reference_logits(weights_, spec_, ids);
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    if (token != best) {
      // Only a near tie between the two best may go either way in fp32.
      EXPECT_LT(logits[best] - logits[token], 1e-3) << "step " << ids.size();
    } else {
      ++checked;
    }
    ids.push_back(token);
  }
  EXPECT_GE(checked, 10);
}

TEST_F(EngineApi, BatchedRequestsGetWhatTheyGetAloneAndTextStreams) {
  Engine engine;
  engine.load(options());
  const std::vector<std::string> prompts = {"a", "The quick brown fox", "0123456789 and more"};
  std::vector<GenerationRequest> requests;
  std::vector<GenerationResult> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    requests.push_back(greedy(prompts[i], 6 + static_cast<int32_t>(i)));
    alone.push_back(engine.generate(requests.back()));
  }
  std::vector<std::string> streamed(prompts.size());
  std::vector<TextCallback> callbacks;
  for (size_t i = 0; i < prompts.size(); ++i) {
    callbacks.push_back([&, i](const std::string& piece) { streamed[i] += piece; });
  }
  const std::vector<GenerationResult> batched = engine.generate_batch(requests, callbacks);
  ASSERT_EQ(batched.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(batched[i].tokens, alone[i].tokens) << prompts[i];
    EXPECT_EQ(batched[i].text, alone[i].text) << prompts[i];
    EXPECT_EQ(streamed[i], batched[i].text) << prompts[i];
  }
}

// A prompt that starts like an earlier one reports the reused tokens and gets the same tokens
// as with reuse off (LoadOptions::prefix_reuse).
TEST_F(EngineApi, RepeatedPromptsReportCachedTokensAndReuseCanBeTurnedOff) {
  std::string prompt;
  for (int i = 0; prompt.size() < 1200; ++i) prompt += "word" + std::to_string(i) + " ";
  std::vector<GenerationResult> on, off;
  for (bool reuse : {true, false}) {
    Engine engine;
    LoadOptions o = options();
    o.max_seq_len = 4096;
    o.prefix_reuse = reuse;
    engine.load(o);
    auto& out = reuse ? on : off;
    out.push_back(engine.generate(greedy(prompt, 5)));
    out.push_back(engine.generate(greedy(prompt + " and more", 5)));
    out.push_back(engine.generate(greedy(prompt, 5)));  // regenerate
  }
  ASSERT_GT(on[0].stats.prompt_tokens, 512) << "the prompt should fill several pages";
  EXPECT_EQ(on[0].stats.cached_prompt_tokens, 0);
  // At least every full 64-token page of the first prompt (the default page size), and on the
  // CPU the start of the next page too, copied from the first request's last page.
  EXPECT_GE(on[1].stats.cached_prompt_tokens, on[0].stats.prompt_tokens / 64 * 64);
  EXPECT_LT(on[1].stats.cached_prompt_tokens, on[1].stats.prompt_tokens);
  // The same prompt again: all but its last token, which is always computed.
  EXPECT_EQ(on[2].stats.cached_prompt_tokens, on[2].stats.prompt_tokens - 1);
  EXPECT_EQ(off[1].stats.cached_prompt_tokens, 0);
  EXPECT_EQ(on[1].tokens, off[1].tokens);
  EXPECT_EQ(on[2].tokens, off[2].tokens);
  EXPECT_EQ(on[2].tokens, on[0].tokens);
}

// Speculation through the Engine: the same greedy tokens, the counts in the stats, and a clear
// error for a draft length out of range.
TEST_F(EngineApi, SpeculationGivesTheSameTokensAndReportsItsCounts) {
  std::string prompt;
  for (int i = 0; i < 6; ++i) prompt += "one two three four five ";
  std::vector<GenerationResult> results;
  for (const Speculation s : {Speculation::kOff, Speculation::kNgram}) {
    Engine engine;
    LoadOptions o = options();
    o.speculation = s;
    o.draft_tokens = 6;
    engine.load(o);
    results.push_back(engine.generate(greedy(prompt, 40)));
  }
  EXPECT_EQ(results[1].tokens, results[0].tokens);
  EXPECT_EQ(results[0].stats.proposed_tokens, 0);
  EXPECT_GT(results[1].stats.proposed_tokens, 0);
  EXPECT_LE(results[1].stats.accepted_tokens, results[1].stats.proposed_tokens);

  Engine engine;
  LoadOptions bad = options();
  bad.speculation = Speculation::kNgram;
  bad.draft_tokens = 0;
  try {
    engine.load(bad);
    ADD_FAILURE() << "draft_tokens 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("draft_tokens"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.loaded());
  EXPECT_EQ(parse_speculation("ngram"), Speculation::kNgram);
  EXPECT_EQ(parse_speculation("draft"), Speculation::kDraft);
  EXPECT_EQ(parse_speculation("magic"), std::nullopt);
  EXPECT_STREQ(speculation_name(Speculation::kOff), "off");
}

// A draft model: the model drafting for itself has every greedy proposal kept and changes no
// token; the plan counts its weights and cache; one with another vocabulary is refused.
TEST_F(EngineApi, ADraftModelProposesAndMustShareTheVocabulary) {
  auto with_draft = [](const fs::path& draft) {
    LoadOptions o = options();
    o.speculation = Speculation::kDraft;
    o.draft_model_path = draft;
    o.draft_tokens = 4;
    return o;
  };
  std::vector<GenerationResult> results;
  for (const LoadOptions& o : {options(), with_draft(dir_ / "tiny")}) {
    Engine engine;
    engine.load(o);
    results.push_back(engine.generate(greedy("Hello, hearth", 24)));
  }
  EXPECT_EQ(results[1].tokens, results[0].tokens);
  EXPECT_GT(results[1].stats.proposed_tokens, 0);
  EXPECT_EQ(results[1].stats.accepted_tokens, results[1].stats.proposed_tokens);

  const MemoryPlan alone = Engine::plan(options());
  const MemoryPlan drafted = Engine::plan(with_draft(dir_ / "tiny"));
  EXPECT_EQ(drafted.weights, 2 * alone.weights);
  EXPECT_EQ(drafted.kv_cache, 2 * alone.kv_cache);

  qt::TinySpec other = spec_;
  other.vocab += 8;
  qt::write_tiny_model(dir_ / "other_vocab", other);
  Engine engine;
  try {
    engine.load(with_draft(dir_ / "other_vocab"));
    ADD_FAILURE() << "a draft with another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.loaded());
  LoadOptions missing = with_draft({});
  EXPECT_THROW(engine.load(missing), Error);
}

// Stop strings are tested where text is meaningful: generator_test (Generator) and cli_test
// (the real model); the random weights here write mostly invalid UTF-8.
TEST_F(EngineApi, ACancelledRequestEndsAndTheNextRunsAsBefore) {
  Engine engine;
  engine.load(options());
  const GenerationResult full = engine.generate(greedy("stop here", 16));
  CancelToken cancel;
  cancel.cancel();
  const GenerationResult cancelled = engine.generate(greedy("never mind", 16), {}, cancel);
  EXPECT_EQ(cancelled.finish, FinishReason::kCancelled);
  // The engine serves the next request as if nothing happened.
  EXPECT_EQ(engine.generate(greedy("stop here", 16)).tokens, full.tokens);
}

// The incremental API: requests submitted while others run join the batch and get what they
// get alone; logprobs ride along on the results.
TEST_F(EngineApi, RequestsSubmittedWhileOthersRunGetWhatTheyGetAlone) {
  Engine engine;
  engine.load(options());
  GenerationRequest first = greedy("first request", 10);
  GenerationRequest second = greedy("a second, later one", 8);
  second.logprobs = 2;
  const GenerationResult first_alone = engine.generate(first);
  const GenerationResult second_alone = engine.generate(second);
  ASSERT_EQ(second_alone.logprobs.size(), second_alone.tokens.size());

  std::string streamed;
  int logprob_calls = 0;
  const RequestId a = engine.submit(first, {[&](const std::string& s) { streamed += s; }, {}});
  engine.step();
  engine.step();  // the first request is decoding when the second arrives
  const RequestId b = engine.submit(second, {{}, [&](const TokenLogprobs&) { ++logprob_calls; }});
  EXPECT_FALSE(engine.take_result(a)) << "still running";
  while (engine.step()) {
  }
  EXPECT_TRUE(engine.idle());
  const std::optional<GenerationResult> ra = engine.take_result(a);
  const std::optional<GenerationResult> rb = engine.take_result(b);
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(ra->tokens, first_alone.tokens);
  EXPECT_EQ(streamed, ra->text);
  EXPECT_EQ(rb->tokens, second_alone.tokens);
  ASSERT_EQ(rb->logprobs.size(), rb->tokens.size());
  EXPECT_EQ(logprob_calls, static_cast<int>(rb->tokens.size()));
  for (size_t i = 0; i < rb->logprobs.size(); ++i) {
    EXPECT_EQ(rb->logprobs[i].token, rb->tokens[i]);
    EXPECT_NEAR(rb->logprobs[i].logprob, second_alone.logprobs[i].logprob, 1e-5);
  }
  EXPECT_FALSE(engine.take_result(a)) << "a result is handed over once";

  const RequestId c = engine.submit(greedy("cancelled", 50));
  engine.step();
  engine.cancel(c);
  while (engine.step()) {
  }
  EXPECT_EQ(engine.take_result(c)->finish, FinishReason::kCancelled);
}

TEST_F(EngineApi, AFailedLoadLeavesNothingLoadedAndTheEngineUsable) {
  Engine engine;
  try {
    engine.load([] {
      LoadOptions o = options();
      o.model_path = dir_ / "no such model";
      return o;
    }());
    FAIL() << "loaded a missing model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no such model"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.loaded());

  qt::TinySpec partial = spec_;
  partial.omit = "model.layers.1.self_attn.v_proj.weight";
  qt::write_tiny_model(dir_ / "partial", partial);
  LoadOptions o = options();
  o.model_path = dir_ / "partial";
  try {
    engine.load(o);
    FAIL() << "loaded a model without " << partial.omit;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find(partial.omit), std::string::npos) << e.what();
  }
  EXPECT_FALSE(engine.loaded());
  EXPECT_THROW(Engine::inspect(o.model_path), Error);

  LoadOptions bad = options();
  bad.max_batch = 0;
  try {
    engine.load(bad);
    FAIL() << "accepted max_batch 0";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }

  engine.load(options());
  EXPECT_TRUE(engine.loaded());
  EXPECT_EQ(engine.generate(greedy("works", 3)).tokens.size(), 3u);
  engine.unload();
  EXPECT_FALSE(engine.loaded());
  EXPECT_THROW(engine.generate(greedy("unloaded", 3)), Error);
}

TEST_F(EngineApi, AModelWithoutChatTemplateRendersChatMl) {
  Engine engine;
  engine.load(options());
  EXPECT_EQ(engine.render_chat({{"system", "Be brief."}, {"user", "Hi"}}),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

}  // namespace
}  // namespace hearth
