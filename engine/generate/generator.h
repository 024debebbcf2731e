// Runs generation jobs over a LlamaModel: admits jobs while cache pages and batch slots allow,
// packs their prompt chunks and decode steps into one forward pass per step (decode first,
// then prefill chunks up to the token budget), samples, detokenizes, and ends each job on an
// eos id, a stop string, its token limit or a full context. With speculation on, a decode step
// also checks tokens proposed from the job's own text (prompt lookup) and keeps those the model
// agrees with: several tokens per step, with the output distributed as without speculation.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/generate/decode_step_times.h"
#include "engine/generate/draft_model.h"
#include "engine/generate/page_pool.h"
#include "engine/generate/speculation_governor.h"
#include "engine/generate/stop_matcher.h"
#include "engine/model/llama_model.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampling_params.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth {

enum class JobEnd { kEos, kStopString, kLength, kContextFull, kCancelled };

struct JobRequest {
  std::vector<int32_t> prompt;  // token ids, not empty
  SamplingParams sampling;
  int32_t max_tokens = 256;
  std::vector<std::string> stop_strings;
  std::vector<int32_t> eos_ids;  // any of these ends the job (not emitted as text)
  bool ignore_eos = false;
  // -1: none; else each generated token's log-probability and its `logprobs` most likely
  // alternatives (0..kMaxTopLogprobs), in JobResult::logprobs and through on_logprobs.
  int32_t logprobs = -1;
  // Text pieces as they become final (whole UTF-8 characters, stop strings held back).
  std::function<void(const std::string&)> on_text;
  // Each generated token's log-probabilities as it is sampled, before its text.
  std::function<void(const TokenLogprobs&)> on_logprobs;
  // The weight of each LoRA adapter slot of the model (LlamaModel::set_adapters), at most
  // kMaxLoraSlots; empty: the base model.
  std::vector<float> adapter_weights;
  // Whatever else changes this job's cache contents (which adapters, at which weights): prefix
  // reuse shares pages only between jobs with the same salt.
  uint64_t cache_salt = 0;
};

struct JobResult {
  std::string text;
  std::vector<int32_t> tokens;          // generated ids (an ending eos id included)
  std::vector<TokenLogprobs> logprobs;  // one per generated token, when asked for
  JobEnd end = JobEnd::kEos;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;    // leading prompt tokens whose cache pages an earlier job left
  int64_t proposed_tokens = 0;  // speculative proposals checked by the model
  int64_t accepted_tokens = 0;  // of those, the ones kept
  double prompt_seconds = 0;    // from admission until the first token was sampled
  double decode_seconds = 0;    // from the first token until the end
};

// kNgram: proposals copied from the job's own text (ngram_proposer.h); kDraft: proposed by a
// smaller model (DraftModel, given to the Generator).
enum class SpeculationMode { kOff, kNgram, kDraft };

struct SpeculationOptions {
  SpeculationMode mode = SpeculationMode::kOff;
  int max_draft_tokens = 8;  // most proposals per sequence and step
  // Proposals are added only while a step's decode rows stay within this many: checking a few
  // more rows costs little while a step is bound by reading the weights, but with a full batch
  // the rows cost compute and speculation would slow everyone down.
  int max_step_rows = 16;
  // Pause speculation while steps with proposals deliver fewer tokens per second than steps
  // without (SpeculationGovernor). Off: propose whenever the limits allow (tests that need
  // the same proposals on every run).
  bool measured = true;
};

struct GeneratorOptions {
  int max_batch = 8;               // jobs running together
  int64_t max_seq_len = 4096;      // positions per sequence
  int64_t max_batch_tokens = 512;  // tokens per forward pass
  // Full cache pages of finished and running jobs are kept and shared with later jobs whose
  // prompts start with the same tokens (PagePool), and where the cache copies positions
  // (KvCacheStorage::copies_positions) the start of the next page is copied from an earlier page
  // that begins alike (a finished job's last page included); off: every job computes its whole
  // prompt.
  bool prefix_reuse = true;
  SpeculationOptions speculation;
};

class Generator {
 public:
  // `draft`: the proposing model when options.speculation.mode is kDraft (it must share the
  // model's vocabulary; the Engine checks).
  Generator(LlamaModel& model, KvCacheStorage& cache, const Tokenizer& tokenizer,
            const GeneratorOptions& options, DraftModel* draft = nullptr);
  ~Generator();

  // Queues a job; returns its id. Throws Error(kInvalidArgument) on a bad request (empty or
  // over-long prompt, bad sampling values, token ids outside the vocabulary).
  int64_t submit(JobRequest request);
  void cancel(int64_t id);
  // Runs one forward pass over the running jobs (admitting queued ones first). Returns false
  // when there was nothing to do.
  bool step();
  bool idle() const;
  // The cache's pages: free, held by running jobs, or cached for reuse.
  const PagePool& pages() const { return pages_; }
  // The result of a finished job (nullopt while it runs); removes it.
  std::optional<JobResult> take_result(int64_t id);
  // The decode steps' times since construction or the last reset (benchmarks).
  const DecodeStepTimes& decode_step_times() const { return step_times_; }
  void reset_decode_step_times() { step_times_ = {}; }

 private:
  struct Job;
  void admit();
  void finish(Job& job, JobEnd end);
  void emit(Job& job, const std::string& text);
  void publish_full_pages(Job& job);
  void publish_partial_page(Job& job);
  int proposal_limit(Job& job, int64_t spare) const;
  void propose_with_draft(const std::vector<Job*>& jobs, const std::vector<int>& limits);
  // Takes a sampled token (its logits are row `logit_row` of `logits`); false once the job ended.
  bool take_token(Job& job, int32_t id, const DeviceTensor& logits, int64_t logit_row);

  LlamaModel& model_;
  KvCacheStorage& cache_;
  const Tokenizer& tokenizer_;
  GeneratorOptions options_;
  DraftModel* draft_;
  PagePool pages_;
  SpeculationGovernor governor_;
  DecodeStepTimes step_times_;
  int64_t next_id_ = 1;
  std::deque<std::unique_ptr<Job>> queued_;
  std::vector<std::unique_ptr<Job>> running_;
  std::vector<std::pair<int64_t, JobResult>> finished_;
};

}  // namespace hearth
