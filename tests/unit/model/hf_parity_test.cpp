// SmolLM2-135M-Instruct on the CPU backend against Hugging Face transformers (fp32, CPU) on the
// same GGUF weights. Reference: tests/fixtures/model/hf_parity.json, made by
// tests/reference/hf_parity.py. Gates: greedy 32-token continuations identical (batched and one
// prompt at a time); per-position logits of the reference's top-40 tokens within 2e-3;
// log-sum-exp within 2e-3; mean KL(ref || ours) ≤ 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/api/model_loader.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {

struct Case {
  std::vector<int32_t> prompt, greedy;
  nlohmann::json positions;
};

class HfParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::ifstream in(test::fixtures_dir() / "model" / "hf_parity.json");
    ASSERT_TRUE(in) << "missing fixture";
    const auto j = nlohmann::json::parse(in);
    for (const auto& c : j["cases"]) {
      cases_.push_back({c["prompt_ids"].get<std::vector<int32_t>>(),
                        c["greedy_ids"].get<std::vector<int32_t>>(), c["positions"]});
    }
    bundle_ = new ModelBundle(open_model(test::test_model(), true));
    backend_ = create_cpu_backend(0).release();
    LlamaModelOptions o;
    o.max_seq_len = 256;
    o.max_batch_tokens = 128;
    o.max_logit_rows = 128;
    model_ = new LlamaModel(bundle_->info.config, *backend_, *bundle_->weights, o);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete backend_;
    delete bundle_;
  }

  static inline std::vector<Case> cases_;
  static inline ModelBundle* bundle_ = nullptr;
  static inline Backend* backend_ = nullptr;
  static inline LlamaModel* model_ = nullptr;
};

TEST_F(HfParity, GreedyContinuationsIdenticalAloneAndBatched) {
  auto cache = backend_->create_kv_cache(model_->kv_cache_spec(64, 64));
  GeneratorOptions go;
  go.max_batch = 12;
  go.max_seq_len = 256;
  go.max_batch_tokens = 128;
  LlamaModelOptions o = model_->options();
  ASSERT_GE(o.max_logit_rows, go.max_batch);
  Generator gen(*model_, *cache, *bundle_->tokenizer, go);
  auto run = [&](const std::vector<size_t>& which) {
    std::vector<int64_t> ids;
    for (size_t i : which) {
      JobRequest r;
      r.prompt = cases_[i].prompt;
      r.max_tokens = static_cast<int32_t>(cases_[i].greedy.size());
      ids.push_back(gen.submit(std::move(r)));
    }
    while (!gen.idle()) gen.step();
    std::vector<std::vector<int32_t>> out;
    for (int64_t id : ids) out.push_back(gen.take_result(id)->tokens);
    return out;
  };
  ASSERT_GE(cases_.size(), 10u);
  std::vector<size_t> all;
  for (size_t i = 0; i < cases_.size(); ++i) all.push_back(i);
  const auto batched = run(all);
  for (size_t i = 0; i < cases_.size(); ++i) {
    EXPECT_EQ(batched[i], cases_[i].greedy) << "prompt " << i << " (batched)";
  }
  for (size_t i : {size_t{0}, size_t{6}}) {
    EXPECT_EQ(run({i})[0], cases_[i].greedy) << "prompt " << i << " (alone)";
  }
}

TEST_F(HfParity, PerPositionLogitsAndKlDivergence) {
  auto cache = backend_->create_kv_cache(model_->kv_cache_spec(4, 64));
  const std::vector<int32_t> pages = {0, 1, 2, 3};
  double kl_sum = 0, max_logit_err = 0, max_lse_err = 0;
  int64_t positions = 0;
  for (size_t c = 0; c < cases_.size(); ++c) {
    std::vector<int32_t> seq = cases_[c].prompt;
    seq.insert(seq.end(), cases_[c].greedy.begin(), cases_[c].greedy.end());
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = seq;
    s.page_table = pages;
    s.all_logits = true;
    batch.seqs.push_back(s);
    const DeviceTensor logits = model_->forward(batch, *cache);
    const std::vector<float> ours = backend_->read(logits, static_cast<int64_t>(seq.size()));
    const int64_t V = logits.cols;
    ASSERT_EQ(cases_[c].positions.size(), seq.size());
    for (size_t p = 0; p < seq.size(); ++p) {
      const auto& ref = cases_[c].positions[p];
      const float* row = ours.data() + p * V;
      double mx = row[0];
      for (int64_t i = 1; i < V; ++i) mx = std::max<double>(mx, row[i]);
      double z = 0;
      for (int64_t i = 0; i < V; ++i) z += std::exp(row[i] - mx);
      const double lse = mx + std::log(z);
      const double ref_lse = ref["lse"].get<double>();
      max_lse_err = std::max(max_lse_err, std::fabs(lse - ref_lse));
      const auto ids = ref["top_ids"].get<std::vector<int32_t>>();
      const auto vals = ref["top_logits"].get<std::vector<double>>();
      double p_top = 0, q_top = 0, kl = 0;
      for (size_t k = 0; k < ids.size(); ++k) {
        max_logit_err = std::max(max_logit_err, std::fabs(row[ids[k]] - vals[k]));
        const double lp = vals[k] - ref_lse, lq = row[ids[k]] - lse;
        kl += std::exp(lp) * (lp - lq);
        p_top += std::exp(lp);
        q_top += std::exp(lq);
      }
      // The reference's mass outside its top-40 is one bucket (a lower bound on its share).
      const double p_tail = std::max(1e-12, 1 - p_top), q_tail = std::max(1e-12, 1 - q_top);
      kl += p_tail * std::log(p_tail / q_tail);
      kl_sum += kl;
      ++positions;
    }
  }
  const double mean_kl = kl_sum / static_cast<double>(positions);
  std::printf("positions %lld, max |logit diff| %.2e, max |lse diff| %.2e, mean KL %.2e\n",
              static_cast<long long>(positions), max_logit_err, max_lse_err, mean_kl);
  EXPECT_LE(max_logit_err, 2e-3);
  EXPECT_LE(max_lse_err, 2e-3);
  EXPECT_LE(mean_kl, 1e-4);
}

}  // namespace
}  // namespace hearth
