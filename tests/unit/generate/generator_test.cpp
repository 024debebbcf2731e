// The generator over a real forward pass (a tiny random model on the CPU backend).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/bench/synthetic_lora.h"
#include "engine/core/error.h"
#include "tests/unit/generate/generator_fixture.h"

namespace hearth {
namespace {

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
    const std::vector<float> logits = logits_after(ids);
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

// Decode steps count every token they generate, a job's last one too (its result is handed over
// as it ends), with and without speculation; the wall time holds the forward and sampling calls.
TEST_F(GeneratorTest, DecodeStepTimesCountEveryTokenOfDecodeSteps) {
  SpeculationOptions ngram;
  ngram.mode = SpeculationMode::kNgram;
  ngram.measured = false;
  for (const SpeculationOptions& speculation : {SpeculationOptions{}, ngram}) {
    build(64, 256, 32, 8, true, speculation);
    EXPECT_EQ(generator->decode_step_times().steps, 0);
    // Both prompts fit one step, which samples each job's first token; the rest are decode steps.
    const auto results = run({request("abcabcabc", 3), request("xyzxyzxyz", 9)});
    ASSERT_EQ(results[0].tokens.size(), 3u);
    ASSERT_EQ(results[1].tokens.size(), 9u);
    const DecodeStepTimes& t = generator->decode_step_times();
    EXPECT_EQ(t.tokens, 2 + 8);
    if (speculation.mode == SpeculationMode::kOff) {
      EXPECT_EQ(t.steps, 8);
    }
    EXPECT_LE(t.steps, 8);
    EXPECT_GT(t.forward_seconds, 0.0);
    EXPECT_GT(t.sample_seconds, 0.0);
    EXPECT_GE(t.generator_seconds(), 0.0);
    generator->reset_decode_step_times();
    EXPECT_EQ(generator->decode_step_times().tokens, 0);
    EXPECT_EQ(generator->decode_step_times().wall_seconds, 0.0);
  }
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

// Prompts that start like an earlier job's (a shared system prompt; the next message of a
// conversation, whose prompt holds the previous answer) reuse its full pages and give exactly
// the tokens they give without reuse, greedy and sampled, alone and in a batch.
TEST_F(GeneratorTest, ReusedPrefixesGiveTheSameTokensAsNoReuse) {
  const std::string system = "You are a terse assistant. Answer in one line, no preamble. ";
  const std::vector<std::string> questions = {"what is two plus two", "name a colour",
                                              "a much longer question that adds a page or two "
                                              "of its own before it ends"};
  auto requests = [&] {
    std::vector<JobRequest> out;
    for (size_t i = 0; i < questions.size(); ++i) {
      JobRequest r = request(system + questions[i], 10);
      if (i == 1) {  // sampled, with a fixed seed
        r.sampling.temperature = 0.9f;
        r.sampling.top_p = 0.95f;
        r.sampling.seed = 1234;
      }
      out.push_back(std::move(r));
    }
    return out;
  };
  build(24, 256, 32, 8, /*prefix_reuse=*/false);
  std::vector<JobResult> expected;
  for (auto& r : requests()) expected.push_back(run({std::move(r)})[0]);

  build(24);
  run({request(system + "warm the cache", 4)});
  const int64_t shared = static_cast<int64_t>(tokenizer.encode(system, false).size()) / 16 * 16;
  ASSERT_GE(shared, 48);
  // One at a time, then all together (each batch composition reads the same shared pages).
  {
    auto reqs = requests();
    for (size_t i = 0; i < reqs.size(); ++i) {
      const JobResult alone = run({std::move(reqs[i])})[0];
      EXPECT_EQ(alone.tokens, expected[i].tokens) << "question " << i;
      EXPECT_GE(alone.cached_tokens, shared) << "question " << i;
    }
  }
  const auto together = run(requests());
  for (size_t i = 0; i < questions.size(); ++i) {
    EXPECT_EQ(together[i].tokens, expected[i].tokens) << "question " << i;
    EXPECT_GE(together[i].cached_tokens, shared) << "question " << i;
    EXPECT_EQ(expected[i].cached_tokens, 0);
  }

  // The next message of a conversation: the previous prompt and answer are reused, the last
  // partly filled page's positions copied from the page the first job left.
  const std::vector<int32_t> first_prompt = tokenizer.encode(system + questions[2], false);
  JobRequest next;
  next.prompt = first_prompt;
  next.prompt.insert(next.prompt.end(), together[2].tokens.begin(), together[2].tokens.end());
  const std::vector<int32_t> follow = tokenizer.encode(" and then?", false);
  next.prompt.insert(next.prompt.end(), follow.begin(), follow.end());
  next.max_tokens = 8;
  JobRequest same = next;
  const JobResult continued = run({std::move(next)})[0];
  // All but the answer's last token, which the first job sampled but never fed to the model.
  EXPECT_EQ(continued.cached_tokens,
            static_cast<int64_t>(first_prompt.size() + together[2].tokens.size() - 1));
  build(24, 256, 32, 8, false);
  EXPECT_EQ(run({std::move(same)})[0].tokens, continued.tokens);
}

// A prompt that shares a page's first tokens with an earlier job's (a system prompt that ends
// mid-page, a regenerated answer) copies those positions from the earlier job's page instead of
// computing them, up to the prompt's last token, and gives the tokens it gives without reuse.
TEST_F(GeneratorTest, PartlySharedPagesAreCopiedNotComputed) {
  const std::string system = "Answer briefly. ";  // 16 bytes: ends a page
  const std::string stem = system + "The context goes on past it: ";
  const std::vector<std::string> asks = {"who", "whom", "why not", "what else"};
  build(24, 256, 32, 8, /*prefix_reuse=*/false);
  std::vector<JobResult> expected;
  for (const std::string& a : asks) expected.push_back(run({request(stem + a, 6)})[0]);

  build(24);
  const auto stem_len = static_cast<int64_t>(stem.size());
  ASSERT_NE(stem_len % 16, 0);
  std::string before;
  for (size_t i = 0; i < asks.size(); ++i) {
    const JobResult r = run({request(stem + asks[i], 6)})[0];
    EXPECT_EQ(r.tokens, expected[i].tokens) << asks[i];
    // The first job computes everything; each later one copies up to where its question leaves
    // the longest earlier one (byte tokens: the common prefix of the strings).
    int64_t common = 0;
    for (size_t j = 0; j < i; ++j) {
      const auto& other = asks[j];
      const auto mismatch =
          std::mismatch(other.begin(), other.end(), asks[i].begin(), asks[i].end());
      common = std::max<int64_t>(common, mismatch.first - other.begin());
    }
    const int64_t prompt_len = stem_len + static_cast<int64_t>(asks[i].size());
    EXPECT_EQ(r.cached_tokens, i == 0 ? 0 : std::min(stem_len + common, prompt_len - 1)) << asks[i];
    generator->pages().check_invariants();
  }
  // The same prompt again (regenerate): everything but its last token comes from the cache.
  const JobResult again = run({request(stem + asks[3], 6)})[0];
  EXPECT_EQ(again.cached_tokens, stem_len + static_cast<int64_t>(asks[3].size()) - 1);
  EXPECT_EQ(again.tokens, expected[3].tokens);
  EXPECT_EQ(generator->pages().available_pages(), generator->pages().num_pages());
}

// A page a job would copy from is given up when the job needs its room: over a 4-page cache the
// second job takes all 4 pages (one shared, three of its own) instead of running short of them.
TEST_F(GeneratorTest, APageToCopyFromGivesWayWhenItsRoomIsNeeded) {
  build(64, 128, 4);
  const std::string prompt = "twenty bytes prompt!";  // 20 tokens: one page and 4 of the next
  ASSERT_EQ(run({request(prompt, 4)})[0].tokens.size(), 4u);
  const JobResult r = run({request(prompt + "more", 40)})[0];  // 24 + 40 tokens: 4 pages
  EXPECT_EQ(r.end, JobEnd::kLength);
  EXPECT_EQ(r.tokens.size(), 40u);
  EXPECT_EQ(r.cached_tokens, 16);  // the shared page only: the partial one was evicted
  generator->pages().check_invariants();
}

// When the cache is full of pages kept for reuse, new jobs evict them (least recently used
// first) instead of waiting, and every page comes back when all jobs are done.
TEST_F(GeneratorTest, CachedPagesAreEvictedForNewJobs) {
  build(64, 128, 8);
  for (int round = 0; round < 6; ++round) {
    const auto r = run({request(std::string(40, static_cast<char>('a' + round)) + " tail", 8)});
    EXPECT_EQ(r[0].end, JobEnd::kLength);
    EXPECT_EQ(r[0].tokens.size(), 8u);
    generator->pages().check_invariants();
  }
  EXPECT_GT(generator->pages().cached_pages(), 0);
  EXPECT_EQ(generator->pages().available_pages(), 8);
  // The most recent prompt is still cached; the first was evicted.
  EXPECT_GT(run({request(std::string(40, 'f') + " again", 2)})[0].cached_tokens, 0);
  EXPECT_EQ(run({request(std::string(40, 'a') + " again", 2)})[0].cached_tokens, 0);
}

// Submit, cancel and step in random order over a small cache for thousands of steps: the pool's
// states stay consistent at every step, every job ends, and no page leaks. With speculation on too:
// its steps write proposals past a job's kept tokens and take them back.
TEST_F(GeneratorTest, RandomAdmitCancelFinishNeverLeaksPages) {
  for (const SpeculationMode mode : {SpeculationMode::kOff, SpeculationMode::kNgram}) {
    SCOPED_TRACE(mode == SpeculationMode::kOff ? "no speculation" : "n-gram speculation");
    SpeculationOptions speculation;
    speculation.mode = mode;
    build(32, 96, 10, 4, true, speculation);
    std::mt19937 rng(99);
    const std::vector<std::string> stems = {"shared stem one, long enough for a page ",
                                            "another shared stem that fills a page ", "x"};
    std::vector<int64_t> live;
    int64_t finished = 0, reused = 0;
    for (int step = 0; step < 3000; ++step) {
      const int action = static_cast<int>(rng() % 10);
      if (action < 3 && live.size() < 12) {
        std::string prompt = stems[rng() % stems.size()];
        for (int i = 0, n = static_cast<int>(rng() % 20); i < n; ++i) {
          prompt += static_cast<char>('a' + rng() % 26);
        }
        live.push_back(generator->submit(request(prompt, static_cast<int32_t>(1 + rng() % 30))));
      } else if (action == 3 && !live.empty()) {
        generator->cancel(live[rng() % live.size()]);
      } else {
        generator->step();
      }
      generator->pages().check_invariants();
      std::erase_if(live, [&](int64_t id) {
        const auto result = generator->take_result(id);
        if (!result) return false;
        ++finished;
        reused += result->cached_tokens > 0;
        return true;
      });
    }
    while (!generator->idle()) generator->step();
    for (int64_t id : live) ASSERT_TRUE(generator->take_result(id));
    finished += static_cast<int64_t>(live.size());
    EXPECT_GT(finished, 300);
    EXPECT_GT(reused, 50) << "the stems should have been shared";
    generator->pages().check_invariants();
    EXPECT_EQ(generator->pages().available_pages(), generator->pages().num_pages());
    if (drafter) {
      EXPECT_EQ(drafter->pages().available_pages(), drafter->pages().num_pages());
    }
  }
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

// Jobs with LoRA adapters: a batch mixing adapter sets gives each job its tokens from running
// alone, and prefix reuse shares pages only between jobs with the same adapters (cache salt).
TEST_F(GeneratorTest, AdapterJobsMixInBatchesAndReuseOnlyTheirOwnPages) {
  build(64);
  model->set_adapters({synthetic_lora_adapter(config, 4, 1, {}, 0.3f),
                       synthetic_lora_adapter(config, 8, 2, {}, 0.3f)});
  const std::string prompt = "The same prompt, long enough to fill a few cache pages of 16.";
  auto with = [&](std::vector<float> weights, uint64_t salt) {
    JobRequest r = request(prompt, 12);
    r.adapter_weights = std::move(weights);
    r.cache_salt = salt;
    return r;
  };
  const JobResult base_alone = run({with({}, 0)})[0];
  build(64);  // a fresh cache: nothing to reuse
  model->set_adapters({synthetic_lora_adapter(config, 4, 1, {}, 0.3f),
                       synthetic_lora_adapter(config, 8, 2, {}, 0.3f)});
  const JobResult first_alone = run({with({1.0f}, 1)})[0];
  EXPECT_EQ(first_alone.cached_tokens, 0);  // the base job's pages are not this job's
  const JobResult mixed_alone = run({with({0.5f, 0.5f}, 2)})[0];
  EXPECT_EQ(mixed_alone.cached_tokens, 0);
  EXPECT_NE(first_alone.tokens, base_alone.tokens);
  EXPECT_NE(mixed_alone.tokens, first_alone.tokens);

  // Together in one batch, each job as alone; the same adapters reuse their pages.
  const std::vector<JobResult> together =
      run({with({1.0f}, 1), with({}, 0), with({0.5f, 0.5f}, 2)});
  EXPECT_EQ(together[0].tokens, first_alone.tokens);
  EXPECT_EQ(together[1].tokens, base_alone.tokens);
  EXPECT_EQ(together[2].tokens, mixed_alone.tokens);
  EXPECT_GT(together[0].cached_tokens, 0);
  EXPECT_GT(together[2].cached_tokens, 0);
  generator->pages().check_invariants();
}

}  // namespace
}  // namespace hearth
