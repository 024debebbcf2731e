// Causal grouped-query attention over the paged KV cache, one (token, head) pair per work item:
// scores in fp32, softmax with the maximum subtracted, then the weighted sum of values.
// A quantized cache is read back once per (sequence, kv head) as rotated rows, and attention
// runs in the rotated space (engine/backend/kv_cache_quant.h): q is rotated, and so is the
// weighted sum of the values at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/backend/cpu/cpu_backend_impl.h"
#include "engine/backend/cpu/cpu_math.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"

namespace hearth::cpu {

void CpuBackend::attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& storage,
                           const AttentionParams& p, DeviceTensor out) {
  auto& cache = static_cast<CpuKvCache&>(storage);
  const KvCacheSpec& spec = cache.spec();
  const int64_t T = static_cast<int64_t>(batch_.tokens.size());
  const int64_t S = static_cast<int64_t>(batch_.page_tables.size());
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
      const float* k_row = static_cast<const float*>(k.data) + t * k.cols + h * D;
      const float* v_row = static_cast<const float*>(v.data) + t * v.cols + h * D;
      if (cache.quantized()) {
        cache.store_rotated(p.layer, page, slot, h, false, k_row);
        cache.store_rotated(p.layer, page, slot, h, true, v_row);
      } else {
        std::copy_n(k_row, D, cache.key(p.layer, page, slot, h));
        std::copy_n(v_row, D, cache.value(p.layer, page, slot, h));
      }
    }
  }

  const bool rotated = cache.quantized();
  std::vector<int64_t> seq_len(static_cast<size_t>(S), 0);
  for (int64_t t = 0; t < T; ++t) {
    int64_t& len = seq_len[static_cast<size_t>(batch_.token_seq[t])];
    len = std::max<int64_t>(len, batch_.positions[t] + 1);
  }
  // Rotated rows of a quantized cache: [seq][kv head][position][D].
  std::vector<std::vector<float>> seq_keys(rotated ? S : 0), seq_values(rotated ? S : 0);
  if (rotated) {
    for (int64_t s = 0; s < S; ++s) {
      const size_t n = static_cast<size_t>(p.num_kv_heads * seq_len[s] * D);
      seq_keys[s].resize(n);
      seq_values[s].resize(n);
    }
    pool_.parallel_for(S * p.num_kv_heads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t s = item / p.num_kv_heads;
        const int64_t h = item % p.num_kv_heads;
        const int64_t len = seq_len[s];
        for (int64_t j = 0; j < len; ++j) {
          const int64_t page = page_of(s, j);
          const size_t at = static_cast<size_t>((h * len + j) * D);
          cache.load_rotated(p.layer, page, j % spec.page_size, h, false, seq_keys[s].data() + at);
          cache.load_rotated(p.layer, page, j % spec.page_size, h, true, seq_values[s].data() + at);
        }
      }
    });
  }

  pool_.parallel_for(T * p.num_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    std::vector<float> acc(static_cast<size_t>(D));
    std::vector<float> q_rotated(static_cast<size_t>(D));
    std::vector<int64_t> pages;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / p.num_heads;
      const int64_t h = item % p.num_heads;
      const int64_t kvh = h / group;
      const int64_t seq = batch_.token_seq[t];
      const int64_t len = batch_.positions[t] + 1;  // causal: positions 0..pos
      const float* qv = static_cast<const float*>(q.data) + t * q.cols + h * D;
      if (rotated) {
        std::copy_n(qv, D, q_rotated.data());
        hadamard_rotate(q_rotated.data(), D);
        qv = q_rotated.data();
      }
      auto key_row = [&](int64_t j) -> const float* {
        if (rotated) return seq_keys[seq].data() + (kvh * seq_len[seq] + j) * D;
        return cache.key(p.layer, pages[j / spec.page_size], j % spec.page_size, kvh);
      };
      auto value_row = [&](int64_t j) -> const float* {
        if (rotated) return seq_values[seq].data() + (kvh * seq_len[seq] + j) * D;
        return cache.value(p.layer, pages[j / spec.page_size], j % spec.page_size, kvh);
      };

      scores.resize(static_cast<size_t>(len));
      pages.resize(static_cast<size_t>((len + spec.page_size - 1) / spec.page_size));
      for (size_t i = 0; i < pages.size(); ++i) {
        pages[i] = page_of(seq, static_cast<int64_t>(i) * spec.page_size);
      }
      float max_score = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) {
        scores[j] = dot(qv, key_row(j), D) * p.scale;
        max_score = std::max(max_score, scores[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < len; ++j) axpy(scores[j], value_row(j), acc.data(), D);
      const float inv = 1.0f / sum;
      for (int64_t d = 0; d < D; ++d) acc[d] *= inv;
      if (rotated) hadamard_rotate(acc.data(), D);
      std::copy_n(acc.data(), D, static_cast<float*>(out.data) + t * out.cols + h * D);
    }
  });
}

}  // namespace hearth::cpu
