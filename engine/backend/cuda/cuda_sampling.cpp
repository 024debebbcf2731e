// Sampling on the GPU. The host turns each request into a few numbers (the draws, the filters,
// a speculative proposal) and the list of logit adjustments (penalties and bias) the CPU sampler
// applies too; the GPU applies them to an f32 copy of the logits, then takes the first maximum
// (greedy) or sorts every row and draws, or checks the row's proposal. Only the chosen token ids
// come back (a draft model's probabilities, when a proposal has them, go up first).
#include <algorithm>
#include <cstring>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/error.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/speculative_sampling.h"

namespace hearth::cuda {
namespace {

size_t align_up(size_t n) {
  return (n + 255) / 256 * 256;
}

}  // namespace

std::vector<int32_t> CudaBackend::sample(DeviceTensor logits,
                                         std::span<const SampleRequest> requests) {
  DeviceGuard guard(options_.device);
  flush_linears();
  const auto rows = static_cast<int64_t>(requests.size());
  if (rows == 0) return {};
  HEARTH_CHECK(logits.data != nullptr && rows <= logits.rows, "sample: more requests than rows");
  const int64_t vocab = logits.cols;
  HEARTH_CHECK(vocab > 0 && rows * vocab < (int64_t(1) << 31), "sample: logits too large");

  std::vector<kernels::SampleRowParams> params(static_cast<size_t>(rows));
  std::vector<kernels::PenaltyEntry> penalties;
  std::vector<std::span<const float>> draft_rows;  // probabilities of proposals that have them
  bool all_greedy = true;
  for (int64_t i = 0; i < rows; ++i) {
    const SampleRequest& r = requests[static_cast<size_t>(i)];
    HEARTH_CHECK(r.params != nullptr, "sample request without params");
    const SamplingParams& p = *r.params;
    kernels::SampleRowParams& q = params[static_cast<size_t>(i)];
    q.temperature = p.temperature;
    q.top_k = p.top_k;
    q.top_p = p.top_p;
    q.min_p = p.min_p;
    q.uniform = sampling_uniform(p.seed, r.draw_index);
    if (r.proposed >= 0) {
      HEARTH_CHECK(r.proposed < vocab, "sample: proposed token outside the vocabulary");
      HEARTH_CHECK(r.draft_probs.empty() || static_cast<int64_t>(r.draft_probs.size()) == vocab,
                   "sample: draft probabilities do not cover the vocabulary");
      const SpeculativeUniforms u = speculative_uniforms(p.seed, r.draw_index);
      q.proposed = r.proposed;
      q.accept_uniform = u.accept;
      q.residual_uniform = u.residual;
      if (!r.draft_probs.empty()) {
        q.draft_row = static_cast<int32_t>(draft_rows.size());
        draft_rows.push_back(r.draft_probs);
      }
    }
    all_greedy = all_greedy && (p.temperature <= 0.0f || p.top_k == 1);
    // The same adjustments the CPU sampler makes (engine/sampling/sampler.h).
    for (const LogitAdjustment& a : logit_adjustments(r, vocab)) {
      penalties.push_back({static_cast<int32_t>(i), a.token, a.repetition, a.subtract});
    }
  }

  // Small inputs and the result travel through one pinned block and one device block.
  const size_t params_bytes = align_up(params.size() * sizeof(kernels::SampleRowParams));
  const size_t penalty_bytes = align_up(penalties.size() * sizeof(kernels::PenaltyEntry));
  const size_t ids_bytes = align_up(static_cast<size_t>(rows) * sizeof(int32_t));
  const size_t small = params_bytes + penalty_bytes + ids_bytes;
  if (sample_small_.size() < small) {
    sample_small_ = DeviceBuffer(std::max(small, size_t(1) << 16), MemoryCategory::kWorkspace,
                                 counters_, "sampling parameters");
  }
  if (sample_host_.size() < small) sample_host_ = PinnedBuffer(std::max(small, size_t(1) << 16));
  auto* host = static_cast<std::byte*>(sample_host_.get());
  std::memcpy(host, params.data(), params.size() * sizeof(kernels::SampleRowParams));
  std::memcpy(host + params_bytes, penalties.data(),
              penalties.size() * sizeof(kernels::PenaltyEntry));
  auto* device = static_cast<std::byte*>(sample_small_.get());
  const auto* params_dev = reinterpret_cast<const kernels::SampleRowParams*>(device);
  const auto* penalties_dev = reinterpret_cast<const kernels::PenaltyEntry*>(device + params_bytes);
  auto* ids_dev = reinterpret_cast<int32_t*>(device + params_bytes + penalty_bytes);
  check_cuda(
      cudaMemcpyAsync(device, host, params_bytes + penalty_bytes, cudaMemcpyHostToDevice, stream_),
      "sending sampling parameters");

  const float* draft_dev = nullptr;
  if (!draft_rows.empty()) {
    const size_t row_bytes = static_cast<size_t>(vocab) * sizeof(float);
    const size_t bytes = draft_rows.size() * row_bytes;
    if (sample_draft_.size() < bytes) {
      sample_draft_ =
          DeviceBuffer(bytes, MemoryCategory::kWorkspace, counters_, "draft probabilities");
    }
    if (sample_draft_host_.size() < bytes) sample_draft_host_ = PinnedBuffer(bytes);
    auto* staged = static_cast<std::byte*>(sample_draft_host_.get());
    for (size_t i = 0; i < draft_rows.size(); ++i) {
      std::memcpy(staged + i * row_bytes, draft_rows[i].data(), row_bytes);
    }
    check_cuda(cudaMemcpyAsync(sample_draft_.get(), staged, bytes, cudaMemcpyHostToDevice, stream_),
               "sending draft probabilities");
    draft_dev = sample_draft_.as<float>();
  }

  const size_t logit_bytes = static_cast<size_t>(rows * vocab) * sizeof(float);
  if (sample_logits_.size() < logit_bytes) {
    sample_logits_ =
        DeviceBuffer(logit_bytes, MemoryCategory::kWorkspace, counters_, "sampling logits");
  }
  const kernels::Launch l = launch_plain();
  auto* f32 = sample_logits_.as<float>();
  check_launch(kernels::logits_to_f32(l, to_elem(logits.dtype), logits.data, rows, vocab, f32),
               "logits_to_f32");
  check_launch(kernels::apply_penalties(l, f32, vocab, penalties_dev,
                                        static_cast<int64_t>(penalties.size())),
               "apply_penalties");
  if (all_greedy) {
    check_launch(kernels::argmax_rows(l, f32, rows, vocab, ids_dev), "argmax_rows");
  } else {
    const size_t ids = static_cast<size_t>(rows * vocab) * sizeof(int32_t);
    if (sample_sorted_.size() < logit_bytes) {
      sample_sorted_ =
          DeviceBuffer(logit_bytes, MemoryCategory::kWorkspace, counters_, "sorted logits");
    }
    if (sample_ids_in_.size() < ids) {
      sample_ids_in_ = DeviceBuffer(ids, MemoryCategory::kWorkspace, counters_, "token ids");
      sample_ids_out_ = DeviceBuffer(ids, MemoryCategory::kWorkspace, counters_, "token ids");
    }
    const size_t offsets = static_cast<size_t>(rows + 1) * sizeof(int32_t);
    if (sample_offsets_.size() < offsets) {
      sample_offsets_ = DeviceBuffer(std::max(offsets, size_t(4096)), MemoryCategory::kWorkspace,
                                     counters_, "row offsets");
    }
    const size_t scratch = kernels::sort_rows_scratch_bytes(rows, vocab);
    if (sample_scratch_.size() < scratch) {
      sample_scratch_ =
          DeviceBuffer(scratch, MemoryCategory::kWorkspace, counters_, "sort scratch");
    }
    check_launch(
        kernels::sort_rows_desc(l, f32, sample_sorted_.as<float>(), sample_ids_in_.as<int32_t>(),
                                sample_ids_out_.as<int32_t>(), sample_offsets_.as<int32_t>(), rows,
                                vocab, sample_scratch_.get(), sample_scratch_.size()),
        "sort_rows_desc");
    check_launch(
        kernels::sample_sorted(l, sample_sorted_.as<float>(), sample_ids_out_.as<int32_t>(), rows,
                               vocab, params_dev, draft_dev, ids_dev),
        "sample_sorted");
  }
  auto* ids_host = reinterpret_cast<int32_t*>(host + params_bytes + penalty_bytes);
  check_cuda(cudaMemcpyAsync(ids_host, ids_dev, static_cast<size_t>(rows) * sizeof(int32_t),
                             cudaMemcpyDeviceToHost, stream_),
             "reading sampled tokens");
  check_cuda(cudaStreamSynchronize(stream_), "sampling");
  return std::vector<int32_t>(ids_host, ids_host + rows);
}

}  // namespace hearth::cuda
