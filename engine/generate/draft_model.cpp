#include "engine/generate/draft_model.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/sampling/sampler.h"

namespace hearth {

namespace {
// The draft's own draws: apart from the streams of sampling and of the acceptance test.
constexpr uint64_t kDraftStream = 0x27d4eb2f165667c5ull;
constexpr int64_t kShortCatchUp = 8;
}  // namespace

DraftModel::DraftModel(LlamaModel& model, KvCacheStorage& cache)
    : model_(model), cache_(cache), pages_(cache.spec().num_pages, cache.spec().page_size) {}

bool DraftModel::attach(int64_t job, int64_t positions) {
  HEARTH_CHECK(!attached(job), "draft: job attached twice");
  auto pages = pages_.allocate(pages_.pages_for(std::max<int64_t>(positions, 1)));
  if (!pages) return false;
  seqs_[job].pages = std::move(*pages);
  return true;
}

void DraftModel::detach(int64_t job) {
  auto it = seqs_.find(job);
  if (it == seqs_.end()) return;
  pages_.release(it->second.pages);
  seqs_.erase(it);
}

void DraftModel::settle(int64_t job, int64_t valid) {
  auto it = seqs_.find(job);
  if (it != seqs_.end()) it->second.cached = std::min(it->second.cached, valid);
}

std::vector<int32_t> DraftModel::sample_rows(const DeviceTensor& logits,
                                             std::span<const int64_t> rows,
                                             std::span<const SampleRequest> requests,
                                             std::vector<float>* probs) {
  Backend& backend = model_.backend();
  std::vector<int32_t> ids(requests.size());
  bool contiguous = true;
  for (size_t i = 0; i < rows.size(); ++i) contiguous &= rows[i] == static_cast<int64_t>(i);
  if (contiguous) {
    ids = backend.sample(logits, requests);
  } else {
    for (size_t i = 0; i < rows.size(); ++i)
      ids[i] = backend.sample(logits.row(rows[i]), requests.subspan(i, 1))[0];
  }
  // A sampled job draws from q itself (the backend's draw would be the same token for the same
  // seed and index as the main model's: not an independent proposal).
  std::vector<float> row;
  for (size_t i = 0; i < requests.size(); ++i) {
    probs[i].clear();
    if (is_greedy(*requests[i].params)) continue;
    row.resize(static_cast<size_t>(logits.cols));
    backend.read_into(logits.row(rows[i]), 1, row);
    const TokenDistribution q = sampling_distribution(row, requests[i]);
    probs[i].assign(row.size(), 0.0f);
    for (size_t t = 0; t < q.tokens.size(); ++t)
      probs[i][static_cast<size_t>(q.tokens[t])] = static_cast<float>(q.probs[t]);
    const double u =
        sampling_uniform(requests[i].params->seed ^ kDraftStream, requests[i].draw_index);
    double cum = 0;
    ids[i] = q.tokens.back();
    for (size_t t = 0; t < q.tokens.size(); ++t) {
      cum += q.probs[t];
      if (u < cum) {
        ids[i] = q.tokens[t];
        break;
      }
    }
  }
  return ids;
}

std::vector<DraftModel::Proposal> DraftModel::propose(std::span<const Request> requests) {
  const size_t n = requests.size();
  std::vector<Proposal> out(n);
  // Each job's text with its proposals so far (the draft feeds those back to itself).
  std::vector<std::vector<int32_t>> text(n);
  std::vector<Sequence*> seq(n);
  for (size_t i = 0; i < n; ++i) {
    auto it = seqs_.find(requests[i].job);
    HEARTH_CHECK(it != seqs_.end(), "draft: job not attached");
    seq[i] = &it->second;
    text[i].assign(requests[i].tokens.begin(), requests[i].tokens.end());
    HEARTH_CHECK(seq[i]->cached < static_cast<int64_t>(text[i].size()), "draft: nothing to feed");
    HEARTH_CHECK(static_cast<int64_t>(text[i].size()) + requests[i].count - 1 <=
                     static_cast<int64_t>(seq[i]->pages.size()) * pages_.page_size(),
                 "draft: proposals beyond the job's pages");
  }
  const int64_t budget = model_.options().max_batch_tokens;
  const int64_t max_rows = model_.options().max_logit_rows;
  std::vector<std::vector<float>> probs(n);
  // Round r feeds every job still proposing what its draft cache lacks (the catch-up and the
  // last token in round 0, the previous proposal after) and samples its next proposal. A round
  // that cannot take every job's catch-up within the budget runs in several passes.
  int max_count = 0;
  for (const Request& r : requests) max_count = std::max(max_count, r.count);
  for (int round = 0; round < max_count; ++round) {
    std::vector<size_t> pending;
    for (size_t i = 0; i < n; ++i) {
      if (requests[i].count > round) pending.push_back(i);
    }
    while (!pending.empty()) {
      BatchDesc batch;
      std::vector<size_t> fed, sampled;
      std::vector<int64_t> rows;
      int64_t left = budget;
      int64_t logit_rows = 0;
      for (size_t i : pending) {
        if (left <= 0 || logit_rows >= max_rows) break;
        const auto size = static_cast<int64_t>(text[i].size());
        const int64_t count = std::min(left, size - seq[i]->cached);
        SequenceSlice s;
        s.tokens = std::span<const int32_t>(text[i]).subspan(static_cast<size_t>(seq[i]->cached),
                                                             static_cast<size_t>(count));
        s.start_pos = static_cast<int32_t>(seq[i]->cached);
        s.page_table = seq[i]->pages;
        // A short catch-up (the tokens kept since the last step) asks for every row's logits:
        // the batch then stays a decode-shaped step on backends that run such steps as decode
        // rows (CUDA graphs), at the price of a few more rows of the output layer.
        s.all_logits = count > 1 && count <= kShortCatchUp && logit_rows + count <= max_rows;
        const int64_t slice_rows = s.all_logits ? count : 1;
        batch.seqs.push_back(s);
        if (seq[i]->cached + count == size) {
          sampled.push_back(i);
          rows.push_back(logit_rows + slice_rows - 1);
        }
        fed.push_back(i);
        left -= count;
        logit_rows += slice_rows;
      }
      const DeviceTensor logits = model_.forward(batch, cache_);
      for (size_t b = 0; b < fed.size(); ++b)
        seq[fed[b]]->cached += static_cast<int64_t>(batch.seqs[b].tokens.size());
      std::vector<SampleRequest> sample_requests;
      std::vector<std::vector<float>> row_probs(sampled.size());
      for (size_t i : sampled) {
        SampleRequest r;
        r.params = requests[i].params;
        r.history = text[i];
        r.generated_count = static_cast<int32_t>(requests[i].generated + round);
        r.draw_index = static_cast<uint64_t>(requests[i].generated + round);
        sample_requests.push_back(r);
      }
      const std::vector<int32_t> ids = sample_rows(logits, rows, sample_requests, row_probs.data());
      for (size_t s = 0; s < sampled.size(); ++s) {
        const size_t i = sampled[s];
        out[i].tokens.push_back(ids[s]);
        if (!row_probs[s].empty()) out[i].probs.push_back(std::move(row_probs[s]));
        text[i].push_back(ids[s]);
      }
      std::erase_if(pending, [&](size_t i) {
        return std::find(sampled.begin(), sampled.end(), i) != sampled.end();
      });
    }
  }
  return out;
}

}  // namespace hearth
