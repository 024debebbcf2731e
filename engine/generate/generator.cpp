#include "engine/generate/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/core/error.h"
#include "engine/generate/draft_length.h"
#include "engine/generate/ngram_proposer.h"
#include "engine/sampling/sampler.h"

namespace hearth {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

struct Generator::Job {
  int64_t id = 0;
  JobRequest request;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int64_t prompt_len = 0;
  int64_t cached = 0;  // tokens whose keys/values are in the cache
  std::vector<int32_t> pages;
  int64_t published = 0;   // leading pages offered to later jobs (PagePool::publish)
  uint64_t chain_key = 0;  // the hash chain after them
  std::unique_ptr<StreamingDetokenizer> detokenizer;
  std::unique_ptr<StopMatcher> stops;
  JobResult result;
  bool cancelled = false;
  bool done = false;
  Clock::time_point admitted, first_token;
  DraftLength draft_length{0};
  int proposed_now = 0;  // proposals in this step's slice (after the last token)
  std::vector<std::vector<float>> draft_probs;  // the draft's q of each proposal (sampled jobs)
  bool drafted = false;                         // the draft model serves this job
};

Generator::Generator(LlamaModel& model, KvCacheStorage& cache, const Tokenizer& tokenizer,
                     const GeneratorOptions& options, DraftModel* draft)
    : model_(model),
      cache_(cache),
      tokenizer_(tokenizer),
      options_(options),
      draft_(draft),
      pages_(cache.spec().num_pages, cache.spec().page_size) {
  HEARTH_CHECK((options_.speculation.mode == SpeculationMode::kDraft) == (draft != nullptr),
               "a draft model goes with draft speculation");
  HEARTH_CHECK(options_.max_batch > 0 && options_.max_batch_tokens > 0, "generator options");
  HEARTH_CHECK(options_.max_batch <= model.options().max_logit_rows,
               "max_batch exceeds the model's logit rows");
}

Generator::~Generator() = default;

int64_t Generator::submit(JobRequest request) {
  if (request.prompt.empty()) fail(ErrorCode::kInvalidArgument, "the prompt is empty");
  const auto prompt_len = static_cast<int64_t>(request.prompt.size());
  if (prompt_len >= options_.max_seq_len) {
    fail(ErrorCode::kInvalidArgument,
         "the prompt has " + std::to_string(prompt_len) + " tokens; the context holds " +
             std::to_string(options_.max_seq_len) + " (raise max_seq_len or shorten the prompt)");
  }
  if (pages_.pages_for(prompt_len + 1) > pages_.num_pages()) {
    fail(ErrorCode::kInvalidArgument, "the prompt does not fit in the KV cache");
  }
  const int64_t vocab = model_.config().vocab_size;
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= vocab) {
      fail(ErrorCode::kInvalidArgument,
           "token id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  if (request.max_tokens < 0) fail(ErrorCode::kInvalidArgument, "max_tokens must be >= 0");
  if (request.logprobs < -1 || request.logprobs > kMaxTopLogprobs) {
    fail(ErrorCode::kInvalidArgument,
         "logprobs must be between 0 and " + std::to_string(kMaxTopLogprobs));
  }
  request.sampling.validate(vocab);
  if (request.adapter_weights.size() > static_cast<size_t>(kMaxLoraSlots)) {
    fail(ErrorCode::kInvalidArgument, "more adapter weights than adapter slots");
  }
  for (float w : request.adapter_weights) {
    if (!std::isfinite(w)) fail(ErrorCode::kInvalidArgument, "an adapter weight is not finite");
  }

  auto job = std::make_unique<Job>();
  job->id = next_id_++;
  job->prompt_len = prompt_len;
  job->tokens = request.prompt;
  job->stops = std::make_unique<StopMatcher>(request.stop_strings);
  job->detokenizer = std::make_unique<StreamingDetokenizer>(tokenizer_, true);
  job->result.prompt_tokens = prompt_len;
  job->request = std::move(request);
  if (options_.speculation.mode != SpeculationMode::kOff) {
    job->draft_length = DraftLength(options_.speculation.max_draft_tokens);
  }
  const int64_t id = job->id;
  if (job->request.max_tokens == 0) {  // nothing to generate: done without a forward pass
    job->admitted = job->first_token = Clock::now();
    finish(*job, JobEnd::kLength);
    return id;
  }
  queued_.push_back(std::move(job));
  return id;
}

void Generator::cancel(int64_t id) {
  for (auto& j : running_) {
    if (j->id == id) j->cancelled = true;
  }
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if ((*it)->id == id) {
      (*it)->admitted = (*it)->first_token = Clock::now();
      finish(**it, JobEnd::kCancelled);
      queued_.erase(it);
      return;
    }
  }
}

bool Generator::idle() const {
  return queued_.empty() && running_.empty();
}

std::optional<JobResult> Generator::take_result(int64_t id) {
  for (auto it = finished_.begin(); it != finished_.end(); ++it) {
    if (it->first == id) {
      JobResult r = std::move(it->second);
      finished_.erase(it);
      return r;
    }
  }
  return std::nullopt;
}

void Generator::admit() {
  // A job reserves the pages for its whole run (prompt + max_tokens, within max_seq_len), so a
  // running job never stalls for cache space. Leading pages an earlier job left are shared
  // instead (at least the last prompt token is always computed: its logits give the first
  // token).
  while (!queued_.empty() && static_cast<int>(running_.size()) < options_.max_batch) {
    Job& job = *queued_.front();
    const int64_t need_tokens =
        std::min<int64_t>(options_.max_seq_len, job.prompt_len + job.request.max_tokens);
    const int64_t need_pages = pages_.pages_for(std::max<int64_t>(need_tokens, 1));
    PagePool::SharedPrefix shared{{}, pages_.root_key(job.request.cache_salt)};
    PagePool::PartialMatch partial;
    if (options_.prefix_reuse) {
      shared = pages_.acquire_prefix(job.tokens, (job.prompt_len - 1) / pages_.page_size(),
                                     job.request.cache_salt);
      if (cache_.copies_positions()) {
        // The next page's leading tokens, as far as an earlier page after the same chain holds
        // them (at most up to the prompt's last token, which is always computed): copied below.
        const auto start = static_cast<int64_t>(shared.pages.size()) * pages_.page_size();
        const int64_t room = std::min(pages_.page_size(), job.prompt_len - 1 - start);
        if (room > 0) {
          partial = pages_.acquire_partial(
              shared.chain_key,
              std::span<const int32_t>(job.tokens)
                  .subspan(static_cast<size_t>(start), static_cast<size_t>(room)));
        }
      }
    }
    // Held while this job's pages are allocated, so that allocation cannot evict it.
    auto release_partial = [&] {
      if (partial.page >= 0) pages_.release({partial.page});
    };
    const auto own_count = need_pages - static_cast<int64_t>(shared.pages.size());
    auto pages = pages_.allocate(own_count);
    if (!pages && partial.page >= 0) {
      // The held page may be the room this job needs: computing its positions is cheaper than
      // waiting.
      release_partial();
      partial = {};
      pages = pages_.allocate(own_count);
    }
    if (!pages) {
      // Not enough room now. If nothing runs, it can never fit: shorten the reservation to what
      // the cache holds (the job ends with kContextFull when it runs out).
      if (running_.empty()) {
        pages = pages_.allocate(pages_.available_pages());
        if (pages &&
            static_cast<int64_t>(shared.pages.size() + pages->size()) * pages_.page_size() <=
                job.prompt_len) {
          pages_.release(*pages);
          pages.reset();
        }
      }
      if (!pages) {
        pages_.release(shared.pages);
        break;
      }
    }
    job.published = static_cast<int64_t>(shared.pages.size());
    job.chain_key = shared.chain_key;
    job.pages = std::move(shared.pages);
    job.pages.insert(job.pages.end(), pages->begin(), pages->end());
    job.cached = job.published * pages_.page_size();
    if (partial.page >= 0) {
      cache_.copy_positions(partial.page, (*pages)[0], partial.tokens);
      job.cached += partial.tokens;
      release_partial();
    }
    job.result.cached_tokens = job.cached;
    job.admitted = Clock::now();
    if (draft_) job.drafted = draft_->attach(job.id, need_tokens);
    running_.push_back(std::move(queued_.front()));
    queued_.pop_front();
  }
}

void Generator::publish_full_pages(Job& job) {
  if (!options_.prefix_reuse) return;
  const int64_t ps = pages_.page_size();
  while ((job.published + 1) * ps <= job.cached &&
         job.published < static_cast<int64_t>(job.pages.size())) {
    const auto page_tokens =
        std::span<const int32_t>(job.tokens)
            .subspan(static_cast<size_t>(job.published * ps), static_cast<size_t>(ps));
    job.chain_key = pages_.publish(job.pages[job.published], job.chain_key, page_tokens);
    ++job.published;
  }
}

void Generator::publish_partial_page(Job& job) {
  // The ended job's last page, when partly computed, for later jobs to copy from (its positions
  // are never written again: the job releases its pages now).
  if (!options_.prefix_reuse || !cache_.copies_positions()) return;
  const int64_t ps = pages_.page_size();
  const int64_t start = job.published * ps;
  if (job.cached <= start || job.published >= static_cast<int64_t>(job.pages.size())) return;
  pages_.publish_partial(job.pages[job.published], job.chain_key,
                         std::span<const int32_t>(job.tokens)
                             .subspan(static_cast<size_t>(start),
                                      static_cast<size_t>(std::min(job.cached - start, ps - 1))));
}

void Generator::emit(Job& job, const std::string& text) {
  if (text.empty()) return;
  job.result.text += text;
  if (job.request.on_text) job.request.on_text(text);
}

void Generator::finish(Job& job, JobEnd end) {
  if (job.done) return;
  job.done = true;
  if (end != JobEnd::kStopString) {
    // Whatever the detokenizer and the stop matcher still hold is final now.
    std::string tail = job.stops->push(job.detokenizer->flush());
    if (!job.stops->stopped()) tail += job.stops->flush();
    emit(job, tail);
  }
  job.result.end = end;
  publish_partial_page(job);
  const auto now = Clock::now();
  if (job.result.tokens.empty()) {
    job.result.prompt_seconds = seconds_between(job.admitted, now);
  } else {
    job.result.decode_seconds = seconds_between(job.first_token, now);
  }
  pages_.release(job.pages);
  job.pages.clear();
  if (draft_) draft_->detach(job.id);
  finished_.emplace_back(job.id, std::move(job.result));
}

int Generator::proposal_limit(Job& job, int64_t spare) const {
  // Positions this step may write: the last token's and one per proposal, within the job's pages
  // and the context; and no more tokens than the job may still generate.
  const auto pos = static_cast<int64_t>(job.tokens.size()) - 1;
  const int64_t room = std::min<int64_t>(
      {static_cast<int64_t>(job.pages.size()) * pages_.page_size(), options_.max_seq_len});
  const int64_t left = job.request.max_tokens - static_cast<int64_t>(job.result.tokens.size()) - 1;
  return static_cast<int>(std::max<int64_t>(
      0, std::min<int64_t>({spare, job.draft_length.next(), room - pos - 1, left})));
}

void Generator::propose_with_draft(const std::vector<Job*>& jobs, const std::vector<int>& limits) {
  std::vector<DraftModel::Request> requests;
  for (size_t i = 0; i < jobs.size(); ++i) {
    DraftModel::Request r;
    r.job = jobs[i]->id;
    r.tokens = jobs[i]->tokens;
    r.count = limits[i];
    r.params = &jobs[i]->request.sampling;
    r.generated = static_cast<int64_t>(jobs[i]->result.tokens.size());
    requests.push_back(r);
  }
  std::vector<DraftModel::Proposal> proposals = draft_->propose(requests);
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& job = *jobs[i];
    job.tokens.insert(job.tokens.end(), proposals[i].tokens.begin(), proposals[i].tokens.end());
    job.proposed_now = static_cast<int>(proposals[i].tokens.size());
    job.draft_probs = std::move(proposals[i].probs);
  }
}

bool Generator::take_token(Job& job, int32_t id, const DeviceTensor& logits, int64_t logit_row) {
  if (job.request.logprobs >= 0) {
    // Only jobs that ask read their row of logits back (one row per token).
    std::vector<float> row(static_cast<size_t>(logits.cols));
    model_.backend().read_into(logits.row(logit_row), 1, row);
    job.result.logprobs.push_back(token_logprobs(row, id, job.request.logprobs));
    if (job.request.on_logprobs) job.request.on_logprobs(job.result.logprobs.back());
  }
  if (job.result.tokens.empty()) {
    job.first_token = Clock::now();
    job.result.prompt_seconds = seconds_between(job.admitted, job.first_token);
  }
  job.result.tokens.push_back(id);
  job.tokens.push_back(id);
  const bool is_eos = std::find(job.request.eos_ids.begin(), job.request.eos_ids.end(), id) !=
                      job.request.eos_ids.end();
  if (is_eos && !job.request.ignore_eos) {
    finish(job, JobEnd::kEos);
    return false;
  }
  emit(job, job.stops->push(job.detokenizer->feed(id)));
  if (job.stops->stopped()) {
    finish(job, JobEnd::kStopString);
  } else if (static_cast<int64_t>(job.result.tokens.size()) >= job.request.max_tokens) {
    finish(job, JobEnd::kLength);
  } else if (static_cast<int64_t>(job.tokens.size()) >= options_.max_seq_len ||
             static_cast<int64_t>(job.tokens.size()) >
                 static_cast<int64_t>(job.pages.size()) * pages_.page_size()) {
    finish(job, JobEnd::kContextFull);
  }
  return !job.done;
}

bool Generator::step() {
  const auto started = Clock::now();
  admit();
  // Cancelled jobs leave before the forward pass.
  for (auto& j : running_) {
    if (j->cancelled) finish(*j, JobEnd::kCancelled);
  }
  std::erase_if(running_, [](const auto& j) { return j->done; });
  if (running_.empty()) return !queued_.empty();

  // Decode steps first (one token each, and the job's proposals when it speculates), then prompt
  // chunks within the token budget.
  BatchDesc batch;
  std::vector<Job*> in_batch;
  std::vector<bool> samples;  // whether the job samples a token from this pass
  int64_t budget = options_.max_batch_tokens;
  auto add = [&](Job& job, int64_t count) {
    SequenceSlice s;
    s.tokens = std::span<const int32_t>(job.tokens)
                   .subspan(static_cast<size_t>(job.cached), static_cast<size_t>(count));
    s.start_pos = static_cast<int32_t>(job.cached);
    s.page_table = job.pages;
    s.all_logits = job.proposed_now > 0;
    s.adapter_weights = job.request.adapter_weights;
    batch.seqs.push_back(s);
    in_batch.push_back(&job);
    samples.push_back(job.cached + count == static_cast<int64_t>(job.tokens.size()));
    budget -= count;
  };
  int64_t decoding = 0;
  for (auto& j : running_) decoding += j->cached >= j->prompt_len ? 1 : 0;
  // Rows left for proposals: within the step-row limit, the token budget and the model's logit
  // rows (every running job takes at least one).
  int64_t spare = 0;
  if (options_.speculation.mode != SpeculationMode::kOff &&
      (!options_.speculation.measured || governor_.allows(decoding))) {
    spare =
        std::min<int64_t>({options_.speculation.max_step_rows - decoding,
                           model_.options().max_logit_rows - static_cast<int64_t>(running_.size()),
                           budget - decoding});
  }
  std::vector<Job*> drafting;
  std::vector<int> draft_counts;
  for (auto& j : running_) {
    j->proposed_now = 0;
    j->draft_probs.clear();
    if (j->cached < j->prompt_len || spare <= 0) continue;
    if (options_.speculation.mode == SpeculationMode::kDraft && !j->drafted) continue;
    const int limit = proposal_limit(*j, spare);
    if (limit <= 0) {
      j->draft_length.skip();
      continue;
    }
    if (options_.speculation.mode == SpeculationMode::kDraft) {
      drafting.push_back(j.get());
      draft_counts.push_back(limit);
      spare -= limit;
      continue;
    }
    const std::vector<int32_t> proposals = propose_from_ngrams(j->tokens, limit);
    if (proposals.empty()) j->draft_length.skip();
    j->tokens.insert(j->tokens.end(), proposals.begin(), proposals.end());
    j->proposed_now = static_cast<int>(proposals.size());
    spare -= j->proposed_now;
  }
  if (!drafting.empty()) propose_with_draft(drafting, draft_counts);
  for (auto& j : running_) {
    if (j->cached >= j->prompt_len && budget > 0) add(*j, 1 + j->proposed_now);
  }
  for (auto& j : running_) {
    if (j->cached < j->prompt_len && budget > 0) {
      add(*j, std::min<int64_t>(budget, j->prompt_len - j->cached));
    }
  }

  const auto forward_start = Clock::now();
  const DeviceTensor logits = model_.forward(batch, cache_);
  const double forward_seconds = seconds_between(forward_start, Clock::now());
  // Tokens the decoding jobs had before this step, proposals aside (for the rates of decode
  // steps). job.tokens, not the result's: a job that ends hands its result over.
  int64_t tokens_before = 0;
  bool speculated = false;
  for (Job* job : in_batch) {
    if (job->cached >= job->prompt_len) {
      tokens_before += static_cast<int64_t>(job->tokens.size()) - job->proposed_now;
      speculated |= job->proposed_now > 0;
    }
  }
  const bool decode_only = static_cast<int64_t>(in_batch.size()) == decoding;

  // One sample request per logit row of a sampling job (a speculating job's rows see the
  // proposals before them as history), in logit-row order.
  std::vector<SampleRequest> requests;
  std::vector<int64_t> rows;
  std::vector<int64_t> first_row(in_batch.size());
  int64_t logit_row = 0;
  for (size_t i = 0; i < in_batch.size(); ++i) {
    Job& job = *in_batch[i];
    first_row[i] = static_cast<int64_t>(requests.size());
    const int64_t own_rows = job.proposed_now + 1;
    if (samples[i]) {
      const auto generated = static_cast<int64_t>(job.result.tokens.size());
      const auto before = static_cast<int64_t>(job.tokens.size()) - job.proposed_now;
      for (int64_t j = 0; j < own_rows; ++j) {
        SampleRequest r;
        r.params = &job.request.sampling;
        r.history = std::span<const int32_t>(job.tokens).first(static_cast<size_t>(before + j));
        r.generated_count = static_cast<int32_t>(generated + j);
        r.draw_index = static_cast<uint64_t>(generated + j);
        if (j < job.proposed_now) {
          // Row j decides proposal j: the backend checks it where the logits are (kept with
          // probability min(1, p/q), greedy: kept when it is the argmax). A draft model's
          // proposals come with its distribution q; a lookup's are certain.
          r.proposed = job.tokens[static_cast<size_t>(before + j)];
          if (static_cast<size_t>(j) < job.draft_probs.size()) {
            r.draft_probs = job.draft_probs[static_cast<size_t>(j)];
          }
        }
        requests.push_back(r);
        rows.push_back(logit_row + j);
      }
    }
    logit_row += own_rows;
  }
  std::vector<int32_t> ids;
  const auto sample_start = Clock::now();
  if (!requests.empty()) {
    // Rows of logits whose jobs sample; the others (mid-prompt chunks) are skipped by sampling
    // only a prefix when they trail, else by sampling row by row.
    bool contiguous = true;
    for (size_t i = 0; i < rows.size(); ++i)
      contiguous = contiguous && rows[i] == static_cast<int64_t>(i);
    if (contiguous) {
      ids = model_.backend().sample(logits, requests);
    } else {
      ids.resize(requests.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        ids[i] = model_.backend().sample(logits.row(rows[i]), std::span(&requests[i], 1))[0];
      }
    }
  }
  const double sample_seconds = seconds_between(sample_start, Clock::now());

  for (size_t i = 0; i < in_batch.size(); ++i) {
    Job& job = *in_batch[i];
    const int64_t in_slice = static_cast<int64_t>(batch.seqs[i].tokens.size());
    if (!samples[i]) {  // a prompt chunk before the last
      job.cached += in_slice;
      publish_full_pages(job);
      continue;
    }
    const auto sampled = std::span<const int32_t>(ids).subspan(
        static_cast<size_t>(first_row[i]), static_cast<size_t>(job.proposed_now + 1));
    const int64_t row0 = rows[static_cast<size_t>(first_row[i])];
    if (job.proposed_now == 0) {
      job.cached += in_slice;
      publish_full_pages(job);
      take_token(job, sampled[0], logits, row0);
      continue;
    }
    // Speculation: the cache now holds the last token and every proposal. Each proposal's row
    // came back as the proposal when it was kept, else as its replacement: keep the proposals
    // up to the first replacement, which is the next token (or, every one kept, the last row's
    // own sample). The output is what sampling each position would give (greedy: the same
    // tokens; sampled: the same distribution).
    const int64_t k = job.proposed_now;
    const std::vector<int32_t> proposals(job.tokens.end() - k, job.tokens.end());
    int64_t kept = 0;
    while (kept < k && sampled[static_cast<size_t>(kept)] == proposals[static_cast<size_t>(kept)]) {
      ++kept;
    }
    const int32_t next = sampled[static_cast<size_t>(kept)];
    job.tokens.resize(job.tokens.size() - static_cast<size_t>(k));
    job.result.proposed_tokens += k;
    job.result.accepted_tokens += kept;
    job.draft_length.record(static_cast<int>(k), static_cast<int>(kept));
    job.cached = static_cast<int64_t>(job.tokens.size());
    if (draft_) draft_->settle(job.id, job.cached + kept);
    publish_full_pages(job);
    bool going = true;
    for (int64_t j = 0; j < kept && going; ++j) {
      going = take_token(job, proposals[static_cast<size_t>(j)], logits, row0 + j);
      if (going) {
        ++job.cached;  // the kept proposal's keys and values are in the cache
        publish_full_pages(job);
      }
    }
    if (going) take_token(job, next, logits, row0 + kept);
  }
  if (decode_only && decoding > 0) {
    int64_t tokens_after = 0;
    for (Job* job : in_batch) tokens_after += static_cast<int64_t>(job->tokens.size());
    const auto now = Clock::now();
    if (options_.speculation.mode != SpeculationMode::kOff) {
      governor_.record(seconds_between(started, now), tokens_after - tokens_before, decoding,
                       speculated);
    }
    ++step_times_.steps;
    step_times_.tokens += tokens_after - tokens_before;
    step_times_.wall_seconds += seconds_between(started, now);
    step_times_.forward_seconds += forward_seconds;
    step_times_.sample_seconds += sample_seconds;
  }
  std::erase_if(running_, [](const auto& j) { return j->done; });
  return true;
}

}  // namespace hearth
