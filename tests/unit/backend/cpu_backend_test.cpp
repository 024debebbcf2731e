// The CPU backend's ops against plain double-precision loops written from the definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace hearth {
namespace {

class CpuBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = create_cpu_backend(2);
  std::mt19937 rng{42};

  std::vector<float> random(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
  }
  DeviceTensor make(int64_t rows, int64_t cols, const std::vector<float>& values) {
    DeviceTensor t = backend->alloc_activation(rows, cols);
    std::copy(values.begin(), values.end(), static_cast<float*>(t.data));
    return t;
  }
  std::vector<float> get(DeviceTensor t) { return backend->read(t, t.rows); }
  // A batch of one sequence per entry of `lengths`, each starting at `starts`.
  BatchDesc batch_of(const std::vector<int>& lengths, const std::vector<int>& starts,
                     std::vector<std::vector<int32_t>>& token_store,
                     std::vector<std::vector<int32_t>>& page_store, int64_t page_size) {
    BatchDesc b;
    token_store.clear();
    page_store.clear();
    int32_t next_page = 0;
    for (size_t s = 0; s < lengths.size(); ++s) {
      token_store.emplace_back(lengths[s], static_cast<int32_t>(s + 1));
      const int64_t pages = (starts[s] + lengths[s] + page_size - 1) / page_size;
      std::vector<int32_t> table;
      // Pages handed out in a scrambled order, to catch page-table indexing bugs.
      for (int64_t p = 0; p < pages; ++p)
        table.push_back(next_page + static_cast<int32_t>(pages - 1 - p));
      next_page += static_cast<int32_t>(pages);
      page_store.push_back(table);
    }
    for (size_t s = 0; s < lengths.size(); ++s) {
      SequenceSlice slice;
      slice.tokens = token_store[s];
      slice.start_pos = starts[s];
      slice.page_table = page_store[s];
      b.seqs.push_back(slice);
    }
    return b;
  }
};

TEST_F(CpuBackendTest, LinearMatchesDoubleReferenceForEveryWeightType) {
  const int64_t R = 5, K = 67, N = 37;  // odd sizes exercise the remainder paths
  const auto x = random(R * K);
  const auto wf = random(N * K, 0.1f);
  const auto bias = random(N);
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    HostTensor w = HostTensor::allocate(dt, {N, K});
    std::vector<float> w_exact(N * K);
    for (int64_t i = 0; i < N * K; ++i) {
      if (dt == DType::kF32) {
        static_cast<float*>(w.mutable_data())[i] = wf[i];
        w_exact[i] = wf[i];
      } else if (dt == DType::kF16) {
        static_cast<uint16_t*>(w.mutable_data())[i] = float_to_half(wf[i]);
        w_exact[i] = half_to_float(float_to_half(wf[i]));
      } else {
        static_cast<uint16_t*>(w.mutable_data())[i] = float_to_bf16(wf[i]);
        w_exact[i] = bf16_to_float(float_to_bf16(wf[i]));
      }
    }
    LinearSource src;
    src.name = "test";
    src.weight = w;
    src.bias = HostTensor::from_floats(bias, {N});
    auto lw = backend->upload_linear(src);
    DeviceTensor xt = make(R, K, x);
    DeviceTensor yt = backend->alloc_activation(R, N);
    backend->linear(*lw, xt, yt);
    const auto y = get(yt);
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t n = 0; n < N; ++n) {
        double ref = bias[n];
        for (int64_t k = 0; k < K; ++k)
          ref += static_cast<double>(x[r * K + k]) * w_exact[n * K + k];
        EXPECT_NEAR(y[r * N + n], ref, 1e-5 * (1 + std::fabs(ref))) << "dtype " << dtype_name(dt);
      }
    }
  }
}

TEST_F(CpuBackendTest, AddRmsNormAddsResidualThenNormalises) {
  const int64_t R = 3, H = 50;
  const auto res = random(R * H), delta = random(R * H), w = random(H);
  auto wt = backend->upload(HostTensor::from_floats(w, {H}));
  DeviceTensor rt = make(R, H, res), dt = make(R, H, delta), out = backend->alloc_activation(R, H);
  backend->add_rms_norm(rt, dt, *wt, 1e-5f, out);
  const auto got_res = get(rt), got = get(out);
  for (int64_t r = 0; r < R; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) {
      const double s = static_cast<double>(res[r * H + i]) + delta[r * H + i];
      EXPECT_NEAR(got_res[r * H + i], s, 1e-6);
      ss += s * s;
    }
    const double inv = 1.0 / std::sqrt(ss / H + 1e-5);
    for (int64_t i = 0; i < H; ++i) {
      const double s = static_cast<double>(res[r * H + i]) + delta[r * H + i];
      EXPECT_NEAR(got[r * H + i], w[i] * s * inv, 1e-5);
    }
  }
}

TEST_F(CpuBackendTest, RopeRotatesHalvesAtEachTokensPosition) {
  std::vector<std::vector<int32_t>> toks, pages;
  BatchDesc b = batch_of({2, 3}, {5, 0}, toks, pages, 16);
  backend->prepare_batch(b);
  const int64_t heads = 2, kv_heads = 1, D = 8, T = 5;
  const std::vector<float> inv_freq = {1.0f, 0.1f, 0.01f, 0.001f};
  auto inv = backend->upload(HostTensor::from_floats(inv_freq, {4}));
  const auto q0 = random(T * heads * D), k0 = random(T * kv_heads * D);
  DeviceTensor q = make(T, heads * D, q0), k = make(T, kv_heads * D, k0);
  RopeParams p{inv.get(), 1.5f, D, D};
  backend->rope(q, k, p);
  const auto q1 = get(q);
  const int positions[] = {5, 6, 0, 1, 2};
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < 4; ++i) {
        const double a = positions[t] * static_cast<double>(inv_freq[i]);
        const double c = std::cos(a) * 1.5, s = std::sin(a) * 1.5;
        const double x1 = q0[t * heads * D + h * D + i], x2 = q0[t * heads * D + h * D + i + 4];
        EXPECT_NEAR(q1[t * heads * D + h * D + i], x1 * c - x2 * s, 1e-5);
        EXPECT_NEAR(q1[t * heads * D + h * D + i + 4], x2 * c + x1 * s, 1e-5);
      }
    }
  }
}

// Causal GQA attention over pages, across several forward passes: the second pass must see the
// keys stored by the first.
// Two passes over two sequences: a prompt each (crossing page boundaries), then a decode step
// for one and a longer chunk for the other. The lengths take the fast mode's matrix-product
// attention (32 new tokens and more, in blocks of 64) as well as its per-token loop. Returns the
// inputs and each pass's outputs.
struct AttentionRun {
  std::vector<std::vector<float>> q, k, v, out;
};

AttentionRun run_attention(Backend& backend, KvCacheType type, const std::vector<float>& seed_q,
                           int64_t heads, int64_t kv_heads, int64_t D) {
  const int64_t page = 4;
  auto cache = backend.create_kv_cache({1, kv_heads, D, page, 40, type});
  const AttentionParams ap{0, heads, kv_heads, D, 0.25f};
  // Pages handed out in a scrambled order, to catch page-table indexing bugs.
  std::vector<int32_t> table0, table1;
  for (int32_t p = 0; p < 40; ++p) (p % 3 == 1 ? table0 : table1).push_back((p * 17) % 40);
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> passes = {
      {{40, 3}, {0, 0}},
      {{1, 70}, {40, 3}},
  };
  AttentionRun run;
  size_t drawn = 0;
  auto draw = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = seed_q[drawn++ % seed_q.size()] * (1.0f + 0.001f * (drawn % 7));
    return v;
  };
  for (const auto& [lengths, starts] : passes) {
    std::vector<std::vector<int32_t>> toks;
    BatchDesc b;
    for (size_t s = 0; s < lengths.size(); ++s) toks.emplace_back(lengths[s], int32_t(s + 1));
    for (size_t s = 0; s < lengths.size(); ++s) {
      b.seqs.push_back(
          {toks[s], starts[s],
           s == 0 ? std::span<const int32_t>(table0) : std::span<const int32_t>(table1)});
    }
    backend.prepare_batch(b);
    const int64_t T = b.total_tokens();
    run.q.push_back(draw(T * heads * D));
    run.k.push_back(draw(T * kv_heads * D));
    run.v.push_back(draw(T * kv_heads * D));
    auto make = [&](int64_t cols, const std::vector<float>& values) {
      DeviceTensor t = backend.alloc_activation(T, cols);
      std::copy(values.begin(), values.end(), static_cast<float*>(t.data));
      return t;
    };
    DeviceTensor q = make(heads * D, run.q.back()), k = make(kv_heads * D, run.k.back()),
                 v = make(kv_heads * D, run.v.back());
    DeviceTensor out = backend.alloc_activation(T, heads * D);
    backend.attention(q, k, v, *cache, ap, out);
    run.out.push_back(backend.read(out, T));
  }
  return run;
}

TEST_F(CpuBackendTest, PagedAttentionMatchesDenseReference) {
  const int64_t heads = 4, kv_heads = 2, D = 16;
  const std::vector<float> seed = random(997);
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> passes = {
      {{40, 3}, {0, 0}},
      {{1, 70}, {40, 3}},
  };
  for (CpuLinears mode : {CpuLinears::kExact, CpuLinears::kFast}) {
    SCOPED_TRACE(cpu_linears_name(mode));
    auto cpu = create_cpu_backend(2, mode);
    const AttentionRun run = run_attention(*cpu, KvCacheType::kF32, seed, heads, kv_heads, D);
    // All keys/values ever written per sequence, for the reference.
    std::vector<std::vector<float>> all_k(2), all_v(2);
    for (size_t pass = 0; pass < passes.size(); ++pass) {
      const auto& [lengths, starts] = passes[pass];
      const auto& qv = run.q[pass];
      int64_t row = 0;
      for (size_t s = 0; s < lengths.size(); ++s) {
        for (int i = 0; i < lengths[s]; ++i, ++row) {
          const auto& kv = run.k[pass];
          const auto& vv = run.v[pass];
          all_k[s].insert(all_k[s].end(), kv.begin() + row * kv_heads * D,
                          kv.begin() + (row + 1) * kv_heads * D);
          all_v[s].insert(all_v[s].end(), vv.begin() + row * kv_heads * D,
                          vv.begin() + (row + 1) * kv_heads * D);
        }
      }
      const auto& o = run.out[pass];
      row = 0;
      for (size_t s = 0; s < lengths.size(); ++s) {
        for (int i = 0; i < lengths[s]; ++i, ++row) {
          const int pos = starts[s] + i;
          for (int64_t h = 0; h < heads; ++h) {
            const int64_t g = h / (heads / kv_heads);
            std::vector<double> w(pos + 1);
            double mx = -1e300;
            for (int j = 0; j <= pos; ++j) {
              double d = 0;
              for (int64_t e = 0; e < D; ++e) {
                d += static_cast<double>(qv[row * heads * D + h * D + e]) *
                     all_k[s][(j * kv_heads + g) * D + e];
              }
              w[j] = d * 0.25;
              mx = std::max(mx, w[j]);
            }
            double sum = 0;
            for (auto& x : w) sum += (x = std::exp(x - mx));
            for (int64_t e = 0; e < D; ++e) {
              double ref = 0;
              for (int j = 0; j <= pos; ++j)
                ref += w[j] / sum * all_v[s][(j * kv_heads + g) * D + e];
              ASSERT_NEAR(o[row * heads * D + h * D + e], ref, 1e-5)
                  << "seq " << s << " pos " << pos;
            }
          }
        }
      }
    }
  }
}

// With a quantized cache both modes attend in the rotated space over the same stored codes: the
// fast mode's matrix products give the exact mode's values up to the order of the fp32 sums.
TEST_F(CpuBackendTest, FastAttentionMatchesExactWithAQuantizedCache) {
  const std::vector<float> seed = random(997);
  auto exact = create_cpu_backend(2, CpuLinears::kExact);
  auto fast = create_cpu_backend(2, CpuLinears::kFast);
  for (KvCacheType type : {KvCacheType::kQ8, KvCacheType::kQ4}) {
    const AttentionRun a = run_attention(*exact, type, seed, 6, 2, 64);
    const AttentionRun b = run_attention(*fast, type, seed, 6, 2, 64);
    for (size_t pass = 0; pass < a.out.size(); ++pass) {
      ASSERT_EQ(a.out[pass].size(), b.out[pass].size());
      for (size_t i = 0; i < a.out[pass].size(); ++i) {
        ASSERT_NEAR(a.out[pass][i], b.out[pass][i], 1e-5) << kv_cache_type_name(type) << " " << i;
      }
    }
  }
}

// Positions copied between pages (prefix reuse of a partly shared page) read back as the ones
// they were copied from, for every layer, in the F32 cache and the quantized ones: a decode step
// over the copies gives the same bits as over the originals.
TEST_F(CpuBackendTest, CopiedCachePositionsReadBackAsTheOriginals) {
  const int64_t heads = 4, kv_heads = 2, D = 64, page = 16, len = 20;
  for (KvCacheType type : {KvCacheType::kF32, KvCacheType::kQ8, KvCacheType::kQ4}) {
    SCOPED_TRACE(kv_cache_type_name(type));
    auto cache = backend->create_kv_cache({2, kv_heads, D, page, 5, type});
    ASSERT_TRUE(cache->copies_positions());
    // Positions 0..19 of both layers, in pages 1 and 2.
    auto step = [&](int64_t start, int64_t n, std::vector<int32_t> table, int64_t layer,
                    uint32_t seed) {
      std::vector<int32_t> tokens(static_cast<size_t>(n), 1);
      BatchDesc b;
      SequenceSlice slice;
      slice.tokens = tokens;
      slice.start_pos = static_cast<int32_t>(start);
      slice.page_table = table;
      b.seqs.push_back(slice);
      backend->prepare_batch(b);
      rng.seed(seed);
      DeviceTensor out = backend->alloc_activation(n, heads * D);
      const auto q = random(static_cast<size_t>(n * heads * D));
      const auto k = random(static_cast<size_t>(n * kv_heads * D), 2.0f);
      const auto v = random(static_cast<size_t>(n * kv_heads * D));
      backend->attention(make(n, heads * D, q), make(n, kv_heads * D, k), make(n, kv_heads * D, v),
                         *cache, {layer, heads, kv_heads, D, 0.125f}, out);
      return get(out);
    };
    for (int64_t layer = 0; layer < 2; ++layer) step(0, len, {1, 2}, layer, 7 + layer);
    cache->copy_positions(1, 3, page);  // a whole page
    cache->copy_positions(2, 0, 4);     // the leading 4 positions of the next
    for (int64_t layer = 0; layer < 2; ++layer) {
      // Position 20 goes to slot 4 of the second page: each run writes its own page.
      EXPECT_EQ(step(len, 1, {1, 2}, layer, 99), step(len, 1, {3, 0}, layer, 99))
          << "layer " << layer;
    }
    EXPECT_THROW(cache->copy_positions(0, 5, 1), Error);
    EXPECT_THROW(cache->copy_positions(0, 1, page + 1), Error);
  }
}

TEST_F(CpuBackendTest, EmbedSiluAndLogitRows) {
  std::vector<std::vector<int32_t>> toks, pages;
  BatchDesc b = batch_of({3, 2}, {0, 0}, toks, pages, 8);
  toks[0] = {4, 0, 2};
  toks[1] = {1, 3};
  b.seqs[0].tokens = toks[0];
  b.seqs[1].tokens = toks[1];
  b.seqs[1].all_logits = true;
  const PreparedBatch p = backend->prepare_batch(b);
  EXPECT_EQ(p.tokens, 5);
  EXPECT_EQ(p.logit_rows, 3);  // last of seq 0, both of seq 1
  const auto table = random(5 * 6);
  auto tw = backend->upload(HostTensor::from_floats(table, {5, 6}));
  DeviceTensor x = backend->alloc_activation(5, 6);
  backend->embed(*tw, x);
  const auto xv = get(x);
  const int ids[] = {4, 0, 2, 1, 3};
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(xv[r * 6 + c], table[ids[r] * 6 + c]);
  DeviceTensor g = backend->alloc_activation(3, 6);
  backend->gather_logit_rows(x, g);
  const auto gv = get(g);
  const int rows[] = {2, 3, 4};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(gv[r * 6 + c], xv[rows[r] * 6 + c]);

  const auto a = random(12), u = random(12);
  DeviceTensor at = make(2, 6, a), ut = make(2, 6, u), ot = backend->alloc_activation(2, 6);
  backend->silu_mul(at, ut, ot);
  const auto ov = get(ot);
  for (int i = 0; i < 12; ++i)
    EXPECT_NEAR(ov[i], a[i] / (1 + std::exp(-static_cast<double>(a[i]))) * u[i], 1e-6);
}

TEST_F(CpuBackendTest, SquaredDistanceSumsTheFirstRows) {
  const auto a = random(3 * 5), b = random(3 * 5);
  DeviceTensor at = make(3, 5, a), bt = make(3, 5, b);
  for (int64_t rows : {0, 2, 3}) {
    double want = 0;
    for (int64_t i = 0; i < rows * 5; ++i) {
      const double d = static_cast<double>(a[i]) - b[i];
      want += d * d;
    }
    EXPECT_EQ(backend->squared_distance(at, bt, rows), want) << rows << " rows";
  }
  EXPECT_EQ(backend->squared_distance(at, at, 3), 0.0);
  EXPECT_THROW(backend->squared_distance(at, backend->alloc_activation(3, 4), 3), Error);
  EXPECT_THROW(backend->squared_distance(at, bt, 4), Error);
}

TEST_F(CpuBackendTest, RejectsUnsupportedWeights) {
  HostTensor t = HostTensor::allocate(DType::kI32, {4});
  EXPECT_THROW(backend->upload(t), Error);
  LinearSource src;
  src.name = "bad";
  src.weight = HostTensor::allocate(DType::kF32, {4});  // 1-D
  EXPECT_THROW(backend->upload_linear(src), Error);
}

}  // namespace
}  // namespace hearth
