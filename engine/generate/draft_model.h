// A smaller model with the main model's vocabulary that proposes tokens for speculative
// decoding. It keeps a paged KV cache of its own for every job it serves, catches up on the
// tokens the main model settled (the whole prompt the first time, in chunks within its token
// budget), and proposes by decoding up to k tokens itself, batched over jobs: k small forward
// passes for one pass of the main model. For a sampled job it draws from its own distribution q
// (with the job's sampling settings) and hands q over with each proposal, as the acceptance test
// (verify_proposal) needs; a greedy job's proposals are the draft's argmax.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/generate/page_pool.h"
#include "engine/model/llama_model.h"
#include "engine/sampling/sampling_params.h"

namespace hearth {

class DraftModel {
 public:
  DraftModel(LlamaModel& model, KvCacheStorage& cache);

  // Reserves cache pages for a job of up to `positions` positions; false when they are not free
  // (the job then runs without proposals).
  bool attach(int64_t job, int64_t positions);
  void detach(int64_t job);
  bool attached(int64_t job) const { return seqs_.count(job) > 0; }

  struct Request {
    int64_t job = 0;
    std::span<const int32_t> tokens;  // the job's tokens so far; the last one is in no cache yet
    int count = 1;                    // proposals wanted
    const SamplingParams* params = nullptr;
    int64_t generated = 0;  // how many of `tokens` the job generated
  };
  struct Proposal {
    std::vector<int32_t> tokens;
    // Sampled jobs: q over the vocabulary for each proposal (empty for greedy jobs).
    std::vector<std::vector<float>> probs;
  };
  std::vector<Proposal> propose(std::span<const Request> requests);

  // The job's first `valid` tokens are final: the draft's cache keeps at most those (the rest
  // held proposals the main model did not keep).
  void settle(int64_t job, int64_t valid);

  const PagePool& pages() const { return pages_; }

 private:
  struct Sequence {
    std::vector<int32_t> pages;
    int64_t cached = 0;  // leading tokens whose keys and values the draft's cache holds
  };
  // Samples rows `rows` of `logits` for `requests` (one per row); probs[i] gets q for a sampled
  // request i (left empty for greedy ones).
  std::vector<int32_t> sample_rows(const DeviceTensor& logits, std::span<const int64_t> rows,
                                   std::span<const SampleRequest> requests,
                                   std::vector<float>* probs);

  LlamaModel& model_;
  KvCacheStorage& cache_;
  PagePool pages_;
  std::map<int64_t, Sequence> seqs_;
};

}  // namespace hearth
