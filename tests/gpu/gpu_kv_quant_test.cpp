// The CUDA kernels that write a quantized KV cache store the CPU reference's exact bytes
// (engine/backend/kv_cache_quant.h), and the rotation kernel is the reference's rotation.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "engine/backend/kv_cache_quant.h"
#include "engine/core/dtype.h"
#include "kernels/kernels.h"
#include "tests/gpu/gpu_test_util.h"

namespace hearth {
namespace {

using gpu_test::random_values;

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
            cudaSuccess);
  return p;
}

std::vector<uint16_t> to_half(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = float_to_half(x[i]);
  return h;
}

// Rows of several sequences (one a pad row) stored by kv_store into a two-layer cache with
// scattered pages, without and with key offsets; the whole pool (the fp16 first key of the
// sequence that starts at position 0 included) is compared byte for byte with the reference's
// layout.
TEST(GpuKvQuant, StoredBytesAreTheReferencesBytes) {
  HEARTH_REQUIRE_GPU();
  for (KvCacheType type : {KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    for (const auto& [D, offsets] :
         {std::pair<int64_t, bool>{64, false}, {128, false}, {64, true}, {128, true}}) {
      const int64_t kv_heads = 3, page = 16, layers = 2, layer = 1;
      const KvCacheSpec spec{layers, kv_heads, D, page, 6, type};
      const KvQuantLayout layout = KvQuantLayout::of(spec);
      // Sequence 0: positions 0..20 (pages 4, 1); sequence 1: positions 5..9 (page 2); a pad row.
      const std::vector<int32_t> positions = [] {
        std::vector<int32_t> p;
        for (int i = 0; i < 21; ++i) p.push_back(i);
        for (int i = 5; i < 10; ++i) p.push_back(i);
        p.push_back(-1);
        return p;
      }();
      const int32_t T = static_cast<int32_t>(positions.size());
      std::vector<int32_t> token_seq(static_cast<size_t>(T), 0);
      for (int i = 21; i < 26; ++i) token_seq[i] = 1;
      token_seq[26] = -1;
      const std::vector<int32_t> pages = {4, 1, 2}, seq_pages = {0, 2};
      // Values of several magnitudes, rounded to fp16 (what the GPU stores from), and an outlier.
      std::vector<float> k = random_values(static_cast<size_t>(T * kv_heads * D), 11, 3.0f);
      std::vector<float> v = random_values(static_cast<size_t>(T * kv_heads * D), 12, 0.01f);
      k[7] = 60.0f;
      // This layer's key offsets (rotated), taken from each rotated key before quantizing.
      const std::vector<float> mu = offsets
                                        ? random_values(static_cast<size_t>(kv_heads * D), 13, 2.0f)
                                        : std::vector<float>(static_cast<size_t>(kv_heads * D));

      std::vector<uint8_t> expected(spec.bytes(), 0);
      for (int32_t t = 0; t < T; ++t) {
        if (positions[t] < 0) continue;
        const int64_t pg = pages[seq_pages[token_seq[t]] + positions[t] / page];
        const int64_t slot = positions[t] % page;
        for (int64_t h = 0; h < kv_heads; ++h) {
          for (int is_v = 0; is_v < 2; ++is_v) {
            std::vector<float> row((is_v ? v : k).begin() + (t * kv_heads + h) * D,
                                   (is_v ? v : k).begin() + (t * kv_heads + h + 1) * D);
            hadamard_rotate(row.data(), D);
            if (!is_v) {
              for (int64_t j = 0; j < D; ++j) row[j] -= mu[h * D + j];
            }
            const int64_t block = (pg * layers + layer) * layout.layer_page_bytes;
            const int64_t r = h * page + slot;
            uint16_t scales[4];
            quantize_kv_row(
                row.data(), D, layout.bits,
                expected.data() + block + (is_v ? layout.v_codes : 0) + r * layout.row_bytes,
                scales);
            std::memcpy(expected.data() + block + (is_v ? layout.v_scales : layout.k_scales) +
                            r * layout.scales_per_row * 2,
                        scales, static_cast<size_t>(layout.scales_per_row) * 2);
            if (positions[t] == 0 && !is_v) {  // a sequence's first key, also in fp16
              std::vector<uint16_t> first(static_cast<size_t>(D));
              store_first_key(row.data(), D, first.data());
              std::memcpy(expected.data() + block + layout.first_keys + h * D * 2, first.data(),
                          static_cast<size_t>(D) * 2);
            }
          }
        }
      }

      uint8_t* pool = nullptr;
      ASSERT_EQ(cudaMalloc(&pool, spec.bytes()), cudaSuccess);
      ASSERT_EQ(cudaMemset(pool, 0, spec.bytes()), cudaSuccess);
      kernels::KvLayerView view;
      view.base = pool + layer * layout.layer_page_bytes;
      view.page_stride = layers * layout.layer_page_bytes;
      view.v_offset = layout.v_codes;
      view.k_scales = layout.k_scales;
      view.v_scales = layout.v_scales;
      view.first_keys = layout.first_keys;
      view.bits = layout.bits;
      view.page_size = static_cast<int32_t>(page);
      view.num_kv_heads = static_cast<int32_t>(kv_heads);
      view.head_dim = static_cast<int32_t>(D);
      view.num_pages = static_cast<int32_t>(spec.num_pages);
      float* d_mu = device_copy(mu);
      if (offsets) view.key_offsets = d_mu;
      kernels::BatchView batch;
      int32_t* d_positions = device_copy(positions);
      int32_t* d_token_seq = device_copy(token_seq);
      int32_t* d_pages = device_copy(pages);
      int32_t* d_seq_pages = device_copy(seq_pages);
      uint16_t* d_k = device_copy(to_half(k));
      uint16_t* d_v = device_copy(to_half(v));
      batch.positions = d_positions;
      batch.token_seq = d_token_seq;
      batch.pages = d_pages;
      batch.seq_pages = d_seq_pages;
      batch.num_tokens = T;
      batch.num_seqs = 2;
      ASSERT_EQ(kernels::kv_store(kernels::Launch{}, kernels::Elem::kF16, d_k, d_v, batch, view),
                cudaSuccess);
      std::vector<uint8_t> got(spec.bytes());
      ASSERT_EQ(cudaMemcpy(got.data(), pool, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      size_t differ = 0, first = got.size();
      for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] != expected[i]) {
          ++differ;
          first = std::min(first, i);
        }
      }
      EXPECT_EQ(differ, 0u) << kv_cache_type_name(type) << " D " << D << " offsets " << offsets
                            << ": first at byte " << first;
      for (void* p : {static_cast<void*>(pool), static_cast<void*>(d_positions),
                      static_cast<void*>(d_token_seq), static_cast<void*>(d_pages),
                      static_cast<void*>(d_seq_pages), static_cast<void*>(d_k),
                      static_cast<void*>(d_v), static_cast<void*>(d_mu)}) {
        cudaFree(p);
      }
    }
  }
}

TEST(GpuKvQuant, HadamardHeadsIsTheReferenceRotation) {
  HEARTH_REQUIRE_GPU();
  for (int D : {64, 128}) {
    const int64_t rows = 5, cols = 3 * D;
    const std::vector<float> x = random_values(static_cast<size_t>(rows * cols), 21, 2.0f);
    uint16_t* d_x = device_copy(to_half(x));
    ASSERT_EQ(kernels::hadamard_heads(kernels::Launch{}, kernels::Elem::kF16, d_x, rows, cols, D),
              cudaSuccess);
    std::vector<uint16_t> got(x.size());
    ASSERT_EQ(cudaMemcpy(got.data(), d_x, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t head = 0; head < rows * cols / D; ++head) {
      std::vector<float> ref(x.begin() + head * D, x.begin() + (head + 1) * D);
      hadamard_rotate(ref.data(), D);
      for (int i = 0; i < D; ++i) {
        EXPECT_EQ(got[head * D + i], float_to_half(ref[i])) << "D " << D << " head " << head;
      }
    }
    cudaFree(d_x);
  }
}

}  // namespace
}  // namespace hearth
