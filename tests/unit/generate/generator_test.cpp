// The generator over a real forward pass (a tiny random model on the CPU backend).
#include <gtest/gtest.h>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/generate/generator.h"
#include "tests/common/tiny_model.h"

namespace hearth {
namespace {

class GeneratorTest : public ::testing::Test {
 protected:
  void build(int64_t max_batch_tokens, int64_t max_seq_len = 256, int64_t pages = 32,
             int max_batch = 8) {
    generator.reset();
    cache.reset();
    model.reset();
    LlamaModelOptions mo;
    mo.max_seq_len = max_seq_len;
    mo.max_batch_tokens = max_batch_tokens;
    mo.max_logit_rows = max_batch;
    model = std::make_unique<LlamaModel>(config, *backend, weights, mo);
    cache = backend->create_kv_cache(model->kv_cache_spec(pages, 16));
    GeneratorOptions go;
    go.max_batch = max_batch;
    go.max_seq_len = max_seq_len;
    go.max_batch_tokens = max_batch_tokens;
    generator = std::make_unique<Generator>(*model, *cache, tokenizer, go);
  }
  JobRequest request(const std::string& prompt, int32_t max_tokens) {
    JobRequest r;
    r.prompt = tokenizer.encode(prompt, false);
    r.max_tokens = max_tokens;
    return r;
  }
  std::vector<JobResult> run(std::vector<JobRequest> requests) {
    std::vector<int64_t> ids;
    for (auto& r : requests) ids.push_back(generator->submit(std::move(r)));
    while (!generator->idle()) generator->step();
    std::vector<JobResult> out;
    for (int64_t id : ids) out.push_back(*generator->take_result(id));
    return out;
  }

  ModelConfig config = test::tiny_config();
  test::TinyWeights weights{config};
  test::ByteTokenizer tokenizer;
  std::unique_ptr<Backend> backend = create_cpu_backend(2);
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvCacheStorage> cache;
  std::unique_ptr<Generator> generator;
};

TEST_F(GeneratorTest, BatchedAndChunkedGenerationMatchesEachPromptAlone) {
  const std::vector<std::string> prompts = {"abc", "the quick brown fox jumps",
                                            "a much longer prompt that spans several cache pages "
                                            "and several prefill chunks",
                                            "xyz 123"};
  build(512);
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) alone.push_back(run({request(p, 12)})[0].tokens);
  // Together, with a token budget small enough to split prompts into several chunks.
  build(16);
  std::vector<JobRequest> all;
  for (const auto& p : prompts) all.push_back(request(p, 12));
  const auto together = run(std::move(all));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i].tokens, alone[i]) << "prompt " << i;
    EXPECT_EQ(together[i].tokens.size(), 12u);
    EXPECT_EQ(together[i].end, JobEnd::kLength);
  }
}

TEST_F(GeneratorTest, StreamedTextEqualsResultAndStopsAtStopString) {
  build(64);
  JobRequest r = request("hello", 24);
  std::string streamed;
  r.on_text = [&](const std::string& s) { streamed += s; };
  const auto full = run({std::move(r)})[0];
  EXPECT_EQ(streamed, full.text);
  // Stop on a piece of the text generated above: the output ends right before it.
  std::string bytes;
  for (int32_t id : full.tokens) {
    if (id < 256) bytes += static_cast<char>(id);
  }
  ASSERT_GE(bytes.size(), 10u);
  const std::string stop = bytes.substr(6, 3);
  JobRequest s = request("hello", 24);
  s.stop_strings = {stop};
  std::string streamed2;
  s.on_text = [&](const std::string& x) { streamed2 += x; };
  const auto stopped = run({std::move(s)})[0];
  EXPECT_EQ(stopped.end, JobEnd::kStopString);
  EXPECT_EQ(stopped.text, bytes.substr(0, bytes.find(stop)));
  EXPECT_EQ(streamed2, stopped.text);
}

TEST_F(GeneratorTest, EndsOnEosContextAndCancel) {
  build(64, /*max_seq_len=*/40);
  const auto first = run({request("hi", 5)})[0];
  JobRequest e = request("hi", 5);
  e.eos_ids = {first.tokens[0]};
  const auto eos = run({std::move(e)})[0];
  EXPECT_EQ(eos.end, JobEnd::kEos);
  EXPECT_EQ(eos.tokens.size(), 1u);
  EXPECT_EQ(eos.text, "");
  // ignore_eos keeps going.
  JobRequest ig = request("hi", 5);
  ig.eos_ids = {first.tokens[0]};
  ig.ignore_eos = true;
  EXPECT_EQ(run({std::move(ig)})[0].tokens, first.tokens);

  const auto full = run({request("0123456789", 100)})[0];
  EXPECT_EQ(full.end, JobEnd::kContextFull);
  EXPECT_EQ(full.tokens.size(), 30u);  // 10 prompt + 30 generated = 40 positions

  const int64_t id = generator->submit(request("cancel me", 50));
  generator->step();
  generator->cancel(id);
  while (!generator->idle()) generator->step();
  const auto cancelled = *generator->take_result(id);
  EXPECT_EQ(cancelled.end, JobEnd::kCancelled);
  EXPECT_LE(cancelled.tokens.size(), 1u);
}

TEST_F(GeneratorTest, RejectsBadRequests) {
  build(64, 40);
  EXPECT_THROW(generator->submit(request("", 4)), Error);
  EXPECT_THROW(generator->submit(request(std::string(40, 'a'), 4)), Error);
  JobRequest bad = request("x", 4);
  bad.prompt.push_back(100000);
  EXPECT_THROW(generator->submit(std::move(bad)), Error);
  JobRequest t = request("x", 4);
  t.sampling.temperature = -2;
  EXPECT_THROW(generator->submit(std::move(t)), Error);
  const auto zero = run({request("x", 0)})[0];
  EXPECT_EQ(zero.tokens.size(), 0u);
  EXPECT_EQ(zero.end, JobEnd::kLength);
}

// Log-probabilities come from the logits the model gave for each generated token: recomputed
// here by running the model over the prompt and the tokens generated before it.
TEST_F(GeneratorTest, LogprobsAreTheModelsLogSoftmaxAtEachStep) {
  build(64);
  JobRequest r = request("logprobs", 6);
  r.logprobs = 3;
  std::vector<TokenLogprobs> streamed;
  r.on_logprobs = [&](const TokenLogprobs& lp) { streamed.push_back(lp); };
  const auto result = run({std::move(r)})[0];
  ASSERT_EQ(result.logprobs.size(), result.tokens.size());
  ASSERT_EQ(streamed.size(), result.tokens.size());
  std::vector<int32_t> ids = tokenizer.encode("logprobs", false);
  for (size_t i = 0; i < result.tokens.size(); ++i) {
    const TokenLogprobs& lp = result.logprobs[i];
    EXPECT_EQ(lp.token, result.tokens[i]);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].first, lp.token) << "greedy takes the most likely token";
    EXPECT_EQ(streamed[i].logprob, lp.logprob);
    // The same logits again from a fresh cache: the whole sequence so far in one pass.
    auto fresh = backend->create_kv_cache(model->kv_cache_spec(32, 16));
    std::vector<int32_t> pages;
    for (int32_t p = 0; p * 16 < static_cast<int32_t>(ids.size()); ++p) pages.push_back(p);
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = ids;
    s.page_table = pages;
    batch.seqs.push_back(s);
    const std::vector<float> logits = backend->read(model->forward(batch, *fresh), 1);
    const TokenLogprobs again = token_logprobs(logits, lp.token, 3);
    EXPECT_NEAR(lp.logprob, again.logprob, 1e-4) << "token " << i;
    ids.push_back(result.tokens[i]);
  }
  JobRequest bad = request("x", 2);
  bad.logprobs = kMaxTopLogprobs + 1;
  EXPECT_THROW(generator->submit(std::move(bad)), Error);
  JobRequest biased = request("x", 2);
  biased.sampling.logit_bias = {{static_cast<int32_t>(config.vocab_size), 1.0f}};
  EXPECT_THROW(generator->submit(std::move(biased)), Error);
}

TEST_F(GeneratorTest, JobsWaitForCachePagesAndAllFinish) {
  // 6 pages of 16 tokens: each job reserves 2 pages, so at most 3 run at once.
  build(64, 128, 6);
  std::vector<JobRequest> reqs;
  for (int i = 0; i < 7; ++i) reqs.push_back(request("job " + std::to_string(i), 20));
  const auto results = run(std::move(reqs));
  for (const auto& r : results) {
    EXPECT_EQ(r.tokens.size(), 20u);
    EXPECT_EQ(r.end, JobEnd::kLength);
  }
}

}  // namespace
}  // namespace hearth
