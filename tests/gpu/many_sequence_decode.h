// Greedy decoding of many sequences at once through a quantized model, for the tests that check
// decode steps of more rows than the fused quantized kernels take: such steps must be captured
// as CUDA graphs once and replayed, on one GPU and over several.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/model/llama_model.h"

namespace hearth::gpu_test {

// `seqs` prompts of 3 tokens in one batch, then `steps` decode steps of one greedy token per
// sequence (one cache page each); the logits of every step, one row per sequence, concatenated.
inline std::vector<float> greedy_many_sequences(LlamaModel& model, KvCacheStorage& cache,
                                                int64_t seqs, int steps) {
  const int64_t vocab = model.config().vocab_size;
  std::vector<std::vector<int32_t>> tokens(seqs), pages(seqs);
  for (int64_t s = 0; s < seqs; ++s) {
    pages[s] = {static_cast<int32_t>(s)};
    for (int64_t i = 0; i < 3; ++i)
      tokens[s].push_back(static_cast<int32_t>((s * 131 + i * 17 + 5) % vocab));
  }
  std::vector<float> logits;
  for (int step = 0; step <= steps; ++step) {
    BatchDesc batch;
    for (int64_t s = 0; s < seqs; ++s) {
      SequenceSlice slice;
      const size_t n = step == 0 ? 3 : 1;
      slice.tokens = std::span<const int32_t>(tokens[s]).last(n);
      slice.start_pos = static_cast<int32_t>(tokens[s].size() - n);
      slice.page_table = pages[s];
      batch.seqs.push_back(slice);
    }
    const auto out = model.backend().read(model.forward(batch, cache), seqs);
    logits.insert(logits.end(), out.begin(), out.end());
    for (int64_t s = 0; s < seqs; ++s) {
      const float* row = out.data() + s * vocab;
      tokens[s].push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
    }
  }
  return logits;
}

// A tiny EXL2 model decodes 40 sequences past the fused kernel, every quantized linear on
// dequantize + cuBLAS with its slices on a side stream (CudaBackendOptions::dequant_overlap),
// on a backend from `make` with CUDA graphs and on one without: the first warms the step's key
// up, captures it once and replays it (no capture abandoned for scratch still to grow), with the
// logits of the steps run directly.
inline void expect_many_row_steps_captured_once(
    const std::function<std::unique_ptr<Backend>(const CudaBackendOptions&)>& make) {
  const ModelConfig config = synthetic_model_config("tiny");
  SyntheticQuantSource::Options so;
  so.format = "exl2";
  so.bpw = 4.0;
  SyntheticQuantSource weights(config, so);
  ModelConfig quantized = config;
  quantized.quantization_config_json = weights.quantization_config_json();
  constexpr int64_t kSeqs = 40, kPage = 32;
  auto run = [&](bool graphs, Backend::GraphStats* stats) {
    CudaBackendOptions o;
    o.quant_fused_max_rows = 32;  // 40 rows past the fused kernel
    o.quant_mma_min_rows = 0;     // and on dequantize + cuBLAS
    o.dequant_overlap = true;
    o.cuda_graphs = graphs;
    auto backend = make(o);
    LlamaModelOptions mo;
    mo.max_seq_len = kPage;
    mo.max_batch_tokens = kSeqs * 4;
    mo.max_logit_rows = kSeqs;  // so decode steps are padded to no more rows
    LlamaModel model(quantized, *backend, weights, mo);
    auto cache = model.create_kv_cache(kSeqs, kPage);
    const auto logits = greedy_many_sequences(model, *cache, kSeqs, 6);
    *stats = backend->graph_stats();
    return logits;
  };
  Backend::GraphStats stats, unused;
  const auto replayed = run(true, &stats);
  const auto direct = run(false, &unused);
  EXPECT_EQ(stats.captured, 1);
  EXPECT_EQ(stats.abandoned, 0);
  EXPECT_TRUE(replayed == direct) << "graph replays against steps run directly";
}

}  // namespace hearth::gpu_test
