// A Generator over a tiny random model on the CPU backend, rebuilt with the options a test needs.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/generate/generator.h"
#include "tests/common/tiny_model.h"

namespace hearth {

class GeneratorTest : public ::testing::Test {
 protected:
  void build(int64_t max_batch_tokens, int64_t max_seq_len = 256, int64_t pages = 32,
             int max_batch = 8, bool prefix_reuse = true, SpeculationOptions speculation = {}) {
    generator.reset();
    drafter.reset();
    draft_cache.reset();
    draft_model.reset();
    cache.reset();
    model.reset();
    LlamaModelOptions mo;
    mo.max_seq_len = max_seq_len;
    mo.max_batch_tokens = max_batch_tokens;
    mo.max_logit_rows = max_batch + (speculation.mode == SpeculationMode::kOff ? 0 : 16);
    model = std::make_unique<LlamaModel>(config, *backend, weights, mo);
    cache = backend->create_kv_cache(model->kv_cache_spec(pages, 16));
    GeneratorOptions go;
    go.max_batch = max_batch;
    go.max_seq_len = max_seq_len;
    go.max_batch_tokens = max_batch_tokens;
    go.prefix_reuse = prefix_reuse;
    go.speculation = speculation;
    if (speculation.mode == SpeculationMode::kDraft) {
      // The draft: the same shape, its own weights (or the model's, when draft_weights says so).
      draft_model = std::make_unique<LlamaModel>(config, *backend, *draft_weights, mo);
      draft_cache = backend->create_kv_cache(draft_model->kv_cache_spec(pages, 16));
      drafter = std::make_unique<DraftModel>(*draft_model, *draft_cache);
    }
    generator = std::make_unique<Generator>(*model, *cache, tokenizer, go, drafter.get());
  }
  JobRequest request(const std::string& prompt, int32_t max_tokens) {
    JobRequest r;
    r.prompt = tokenizer.encode(prompt, false);
    r.max_tokens = max_tokens;
    return r;
  }
  // The model's logits after `tokens`: one forward pass over all of them on a cache of its own.
  std::vector<float> logits_after(const std::vector<int32_t>& tokens) {
    auto side = backend->create_kv_cache(model->kv_cache_spec(32, 16));
    std::vector<int32_t> pages;
    for (int32_t p = 0; p * 16 < static_cast<int32_t>(tokens.size()); ++p) pages.push_back(p);
    BatchDesc batch;
    SequenceSlice s;
    s.tokens = tokens;
    s.page_table = pages;
    batch.seqs.push_back(s);
    return backend->read(model->forward(batch, *side), 1);
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
  test::TinyWeights other_weights{config, 8};
  const TensorSource* draft_weights = &other_weights;
  test::ByteTokenizer tokenizer;
  std::unique_ptr<Backend> backend = create_cpu_backend(2);
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvCacheStorage> cache;
  std::unique_ptr<LlamaModel> draft_model;
  std::unique_ptr<KvCacheStorage> draft_cache;
  std::unique_ptr<DraftModel> drafter;
  std::unique_ptr<Generator> generator;
};

}  // namespace hearth
