// Causal grouped-query attention over the paged KV cache, one (token, head) pair per work item:
// scores in fp32, softmax with the maximum subtracted, then the weighted sum of values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/backend/cpu/cpu_backend_impl.h"
#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/error.h"

namespace hearth::cpu {

void CpuBackend::attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& storage,
                           const AttentionParams& p, DeviceTensor out) {
  auto& cache = static_cast<CpuKvCache&>(storage);
  const KvCacheSpec& spec = cache.spec();
  const int64_t T = static_cast<int64_t>(batch_.tokens.size());
  const int64_t D = p.head_dim;
  const int64_t group = p.num_heads / p.num_kv_heads;
  HEARTH_CHECK(q.cols == p.num_heads * D && k.cols == p.num_kv_heads * D, "attention shapes");
  HEARTH_CHECK(p.layer >= 0 && p.layer < spec.num_layers, "attention layer");

  auto page_of = [&](int64_t seq, int64_t pos) -> int64_t {
    const auto& table = batch_.page_tables[seq];
    const int64_t index = pos / spec.page_size;
    HEARTH_CHECK(index < static_cast<int64_t>(table.size()), "page table too short");
    const int64_t page = table[index];
    HEARTH_CHECK(page >= 0 && page < spec.num_pages, "page id out of range");
    return page;
  };

  // Store this batch's keys and values first, so every token sees all earlier ones.
  for (int64_t t = 0; t < T; ++t) {
    const int64_t seq = batch_.token_seq[t];
    const int64_t pos = batch_.positions[t];
    const int64_t page = page_of(seq, pos);
    const int64_t slot = pos % spec.page_size;
    for (int64_t h = 0; h < p.num_kv_heads; ++h) {
      std::copy_n(static_cast<const float*>(k.data) + t * k.cols + h * D, D,
                  cache.key(p.layer, page, slot, h));
      std::copy_n(static_cast<const float*>(v.data) + t * v.cols + h * D, D,
                  cache.value(p.layer, page, slot, h));
    }
  }

  pool_.parallel_for(T * p.num_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    std::vector<float> acc(static_cast<size_t>(D));
    std::vector<int64_t> pages;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / p.num_heads;
      const int64_t h = item % p.num_heads;
      const int64_t kvh = h / group;
      const int64_t seq = batch_.token_seq[t];
      const int64_t len = batch_.positions[t] + 1;  // causal: positions 0..pos
      const float* qv = static_cast<const float*>(q.data) + t * q.cols + h * D;

      scores.resize(static_cast<size_t>(len));
      pages.resize(static_cast<size_t>((len + spec.page_size - 1) / spec.page_size));
      for (size_t i = 0; i < pages.size(); ++i) {
        pages[i] = page_of(seq, static_cast<int64_t>(i) * spec.page_size);
      }
      float max_score = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) {
        const float* kv = cache.key(p.layer, pages[j / spec.page_size], j % spec.page_size, kvh);
        scores[j] = dot(qv, kv, D) * p.scale;
        max_score = std::max(max_score, scores[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < len; ++j) {
        const float* vv =
            cache.value(p.layer, pages[j / spec.page_size], j % spec.page_size, kvh);
        axpy(scores[j], vv, acc.data(), D);
      }
      float* o = static_cast<float*>(out.data) + t * out.cols + h * D;
      const float inv = 1.0f / sum;
      for (int64_t d = 0; d < D; ++d) o[d] = acc[d] * inv;
    }
  });
}

}  // namespace hearth::cpu
