// Causal grouped-query attention over the paged KV cache, one (token, head) pair per work item:
// scores in fp32, softmax with the maximum subtracted, then the weighted sum of values. In the
// fast mode a sequence with a prompt's worth of new tokens instead takes blocks of its tokens
// against its keys and values as matrix products on BLAS (cpu_gemm.h): the same sums in
// another order.
// A quantized cache is read back once per (sequence, kv head) as rotated rows, and attention
// runs in the rotated space (engine/backend/kv_cache_quant.h): q is rotated, and so is the
// weighted sum of the values at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/backend/cpu/cpu_backend_impl.h"
#include "engine/backend/cpu/cpu_gemm.h"
#include "engine/backend/cpu/cpu_math.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"

namespace hearth::cpu {
namespace {

// The fast mode's BLAS attention: sequences with at least this many new tokens, in blocks of
// this many tokens (their scores, tokens × query heads of a group × positions, stay small).
constexpr int64_t kBlasAttentionMinTokens = 32;
constexpr int64_t kBlasAttentionTokens = 64;

}  // namespace

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
        cache.store_rotated(p.layer, page, slot, h, false, k_row, pos == 0);
        cache.store_rotated(p.layer, page, slot, h, true, v_row, pos == 0);
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
          cache.load_rotated(p.layer, page, j % spec.page_size, h, false, seq_keys[s].data() + at,
                             j == 0);
          cache.load_rotated(p.layer, page, j % spec.page_size, h, true, seq_values[s].data() + at,
                             j == 0);
        }
      }
    });
  }

  // Sequences whose new tokens go through matrix products, and those tokens in batch order.
  std::vector<std::vector<int64_t>> seq_tokens(static_cast<size_t>(S));
  for (int64_t t = 0; t < T; ++t) seq_tokens[static_cast<size_t>(batch_.token_seq[t])].push_back(t);
  std::vector<char> by_blas(static_cast<size_t>(S), 0);
  struct BlasItem {
    int64_t seq, kv_head, first;
  };
  std::vector<BlasItem> blas_items;
  if (linears_ == CpuLinears::kFast && cpu_gemm_available()) {
    for (int64_t s = 0; s < S; ++s) {
      const auto n = static_cast<int64_t>(seq_tokens[static_cast<size_t>(s)].size());
      if (n < kBlasAttentionMinTokens) continue;
      by_blas[static_cast<size_t>(s)] = 1;
      for (int64_t h = 0; h < p.num_kv_heads; ++h) {
        for (int64_t first = 0; first < n; first += kBlasAttentionTokens) {
          blas_items.push_back({s, h, first});
        }
      }
    }
  }
  if (!blas_items.empty()) {
    pool_.parallel_for(static_cast<int64_t>(blas_items.size()), 1, [&](int64_t begin, int64_t end) {
      std::vector<float> keys, values, queries, scores, acc;
      for (int64_t i = begin; i < end; ++i) {
        const BlasItem& item = blas_items[static_cast<size_t>(i)];
        const std::vector<int64_t>& tokens = seq_tokens[static_cast<size_t>(item.seq)];
        const int64_t n =
            std::min(kBlasAttentionTokens, static_cast<int64_t>(tokens.size()) - item.first);
        // Keys and values up to the block's last position, contiguous.
        int64_t len = 0;
        for (int64_t j = 0; j < n; ++j) {
          len = std::max<int64_t>(len, batch_.positions[tokens[item.first + j]] + 1);
        }
        const float* K;
        const float* V;
        if (rotated) {
          const int64_t at = item.kv_head * seq_len[item.seq] * D;
          K = seq_keys[item.seq].data() + at;
          V = seq_values[item.seq].data() + at;
        } else {
          keys.resize(static_cast<size_t>(len * D));
          values.resize(static_cast<size_t>(len * D));
          for (int64_t j = 0; j < len; ++j) {
            const int64_t page = page_of(item.seq, j), slot = j % spec.page_size;
            std::copy_n(cache.key(p.layer, page, slot, item.kv_head), D, keys.data() + j * D);
            std::copy_n(cache.value(p.layer, page, slot, item.kv_head), D, values.data() + j * D);
          }
          K = keys.data();
          V = values.data();
        }
        // Row r = token j of the block × query head g of the group.
        const int64_t rows = n * group;
        queries.resize(static_cast<size_t>(rows * D));
        for (int64_t j = 0; j < n; ++j) {
          const int64_t t = tokens[item.first + j];
          for (int64_t g = 0; g < group; ++g) {
            float* row = queries.data() + (j * group + g) * D;
            std::copy_n(
                static_cast<const float*>(q.data) + t * q.cols + (item.kv_head * group + g) * D, D,
                row);
            if (rotated) hadamard_rotate(row, D);
          }
        }
        scores.resize(static_cast<size_t>(rows * len));
        gemm_x_wt(queries.data(), rows, D, K, len, scores.data(), len);
        std::vector<float> sums(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t visible = batch_.positions[tokens[item.first + r / group]] + 1;
          float* row = scores.data() + r * len;
          float max_score = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < visible; ++j) {
            row[j] *= p.scale;
            max_score = std::max(max_score, row[j]);
          }
          float sum = 0;
          for (int64_t j = 0; j < visible; ++j) {
            row[j] = std::exp(row[j] - max_score);
            sum += row[j];
          }
          std::fill(row + visible, row + len, 0.0f);  // causal: later positions
          sums[static_cast<size_t>(r)] = sum;
        }
        acc.resize(static_cast<size_t>(rows * D));
        gemm_x_w(scores.data(), rows, len, V, D, acc.data(), D);
        for (int64_t r = 0; r < rows; ++r) {
          float* row = acc.data() + r * D;
          const float inv = 1.0f / sums[static_cast<size_t>(r)];
          for (int64_t d = 0; d < D; ++d) row[d] *= inv;
          if (rotated) hadamard_rotate(row, D);
          const int64_t t = tokens[item.first + r / group];
          const int64_t h = item.kv_head * group + r % group;
          std::copy_n(row, D, static_cast<float*>(out.data) + t * out.cols + h * D);
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
      if (by_blas[static_cast<size_t>(seq)]) continue;
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
