// Greedy decoding of many sequences at once through a model on any backend, for the tests that
// check decode steps of more rows than the fused quantized kernels take (their CUDA graphs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_model.h"

namespace hearth::gpu_test {

// Model options for `seqs` sequences of at most `page` positions, one page each, whose logits
// buffer holds exactly one row per sequence (so decode steps are padded to no more rows).
inline LlamaModelOptions many_sequence_options(int64_t seqs, int64_t page) {
  LlamaModelOptions mo;
  mo.max_seq_len = page;
  mo.max_batch_tokens = seqs * 4;
  mo.max_logit_rows = seqs;
  return mo;
}

// `seqs` prompts of 3 tokens in one batch, then `steps` decode steps of one greedy token per
// sequence; the logits of every step, one row per sequence, concatenated.
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

}  // namespace hearth::gpu_test
