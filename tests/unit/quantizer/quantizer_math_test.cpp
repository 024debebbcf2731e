// The quantizer's numerical core against independent computations: bits-per-weight figures of
// the tables in docs/FORMATS.md (§1.10, Appendix A), Cholesky factors against a double-precision
// Gauss-Jordan inverse, GPTQ's exact loss identity, and packed layers read back through Hearth's
// readers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/quantizer/cholesky.h"
#include "engine/quantizer/cpu_blas.h"
#include "engine/quantizer/exl2_optimizer.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/hessian.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/phase_times.h"

namespace hearth::quantizer {
namespace {

double bpw(const Exl2QParams& qp, int64_t k, int64_t n) {
  return static_cast<double>(exl2_total_bits(qp, k, n)) / static_cast<double>(k * n);
}

// FORMATS.md §1.10 and Appendix A (figures computed by exllamav2's QParams.total_bits).
TEST(Exl2QParams, BitsPerWeightMatchTheSpecTables) {
  EXPECT_NEAR(bpw(exl2_attention_ladder()[6][0], 4096, 4096), 4.039, 5e-4);
  EXPECT_NEAR(bpw(exl2_head_qparams(6), 4096, 32000), 6.345, 5e-4);
  EXPECT_NEAR(bpw(exl2_head_qparams(6), 4096, 128256), 6.344, 5e-4);
  // Llama-2-7B attention rows: q, k, v, o all 4096x4096.
  const double attn7b[] = {2.133, 2.215, 2.426, 2.672, 3.164, 3.168, 4.039, 4.047, 4.086, 4.133,
                           4.168, 4.194, 4.403, 4.459, 5.383, 5.459, 6.039, 6.633, 8.039};
  ASSERT_EQ(exl2_attention_ladder().size(), 19u);
  for (size_t r = 0; r < 19; ++r) {
    int64_t bits = 0;
    for (const auto& qp : exl2_attention_ladder()[r]) bits += exl2_total_bits(qp, 4096, 4096);
    EXPECT_NEAR(static_cast<double>(bits) / (4.0 * 4096 * 4096), attn7b[r], 6e-4) << "row " << r;
  }
  // Llama-2-7B MLP rows: gate/up 4096 -> 11008 (K = 4096), down K = 11008.
  const double mlp7b[] = {2.248, 2.326, 2.597, 2.913, 3.285, 3.368, 3.620, 4.139, 4.200,
                          4.267, 4.351, 5.250, 5.333, 6.072, 6.303, 6.869, 8.036};
  ASSERT_EQ(exl2_mlp_ladder().size(), 17u);
  for (size_t r = 0; r < 17; ++r) {
    const auto& row = exl2_mlp_ladder()[r];
    const int64_t bits = exl2_total_bits(row[0], 4096, 11008) +
                         exl2_total_bits(row[1], 4096, 11008) +
                         exl2_total_bits(row[2], 11008, 4096);
    EXPECT_NEAR(static_cast<double>(bits) / (3.0 * 4096 * 11008), mlp7b[r], 6e-4) << "row " << r;
  }
}

// FORMATS.md §1.2.5: 35 groups and Q = 262 for this mixed setting at K = 2048.
TEST(Exl2QParams, WorkedExampleLayout) {
  Exl2QParams qp;
  qp.parts = {{8, 0.05, 32}, {6, 0.1, 64},  {5, 0.15, 32},
              {4, 0.2, 128}, {3, 0.25, 64}, {2, 0.25, 64}};
  const auto groups = exl2_group_layout(qp, 2048);
  EXPECT_EQ(groups.size(), 35u);
  int64_t q = 0;
  for (const auto& g : groups) q += g.rows * g.bits / 32;
  EXPECT_EQ(q, 262);
  EXPECT_THROW(exl2_head_qparams(7), Error);
}

std::vector<float> random_spd(int64_t n, uint32_t seed, int64_t tokens) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(tokens * n));
  for (auto& v : x) v = d(rng);
  // Correlate the features a little, as real activations are.
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 1; i < n; ++i) x[t * n + i] += 0.5f * x[t * n + i - 1];
  }
  ThreadPool pool(2);
  HessianAccumulator acc(n);
  acc.add(x.data(), tokens, pool);
  return acc.finish();
}

// Gauss-Jordan inverse in double, for reference.
std::vector<double> invert(const std::vector<float>& a, int64_t n) {
  std::vector<double> m(static_cast<size_t>(n * 2 * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) m[i * 2 * n + j] = a[i * n + j];
    m[i * 2 * n + n + i] = 1.0;
  }
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r) {
      if (std::fabs(m[r * 2 * n + c]) > std::fabs(m[p * 2 * n + c])) p = r;
    }
    for (int64_t j = 0; j < 2 * n; ++j) std::swap(m[c * 2 * n + j], m[p * 2 * n + j]);
    const double piv = m[c * 2 * n + c];
    for (int64_t j = 0; j < 2 * n; ++j) m[c * 2 * n + j] /= piv;
    for (int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r * 2 * n + c];
      for (int64_t j = 0; j < 2 * n; ++j) m[r * 2 * n + j] -= f * m[c * 2 * n + j];
    }
  }
  std::vector<double> inv(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) inv[i * n + j] = m[i * 2 * n + n + j];
  }
  return inv;
}

// Each size on both paths: the loops, and LAPACK where this build has BLAS.
std::vector<std::pair<CpuMathPath, int64_t>> factor_cases() {
  std::vector<std::pair<CpuMathPath, int64_t>> cases;
  for (CpuMathPath path : {CpuMathPath::kLoops, CpuMathPath::kBlas}) {
    if (path == CpuMathPath::kBlas && !cpu_blas_available()) continue;
    for (int64_t n : {1, 7, 64, 65, 150}) cases.emplace_back(path, n);
  }
  return cases;
}

TEST(Cholesky, InverseUpperFactorMatchesDoubleInverse) {
  for (const auto& [path, n] : factor_cases()) {
    std::vector<float> h = random_spd(n, 3 + static_cast<uint32_t>(n), 4 * n + 8);
    for (int64_t i = 0; i < n; ++i) h[i * n + i] += 0.01f;
    ThreadPool pool(2);
    std::vector<float> u;
    ASSERT_TRUE(inverse_upper_cholesky(h, n, pool, u, path)) << n;
    const std::vector<double> inv = invert(h, n);
    double max_rel = 0, scale = 0;
    for (double v : inv) scale = std::max(scale, std::fabs(v));
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_GT(u[i * n + i], 0.0f);
      for (int64_t j = 0; j < i; ++j) EXPECT_EQ(u[i * n + j], 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;  // (UᵀU)[i][j]
        for (int64_t k = 0; k <= std::min(i, j); ++k) {
          s += static_cast<double>(u[k * n + i]) * u[k * n + j];
        }
        max_rel = std::max(max_rel, std::fabs(s - inv[i * n + j]) / scale);
      }
    }
    EXPECT_LT(max_rel, 2e-4) << "n = " << n << ", path " << static_cast<int>(path);
  }
}

TEST(Cholesky, ResultDoesNotDependOnThreads) {
  const int64_t n = 130;
  std::vector<float> h = random_spd(n, 11, 300);
  ThreadPool one(1), two(2);
  std::vector<float> a, b;
  ASSERT_TRUE(inverse_upper_cholesky(h, n, one, a));
  ASSERT_TRUE(inverse_upper_cholesky(h, n, two, b));
  EXPECT_EQ(a, b);
}

TEST(Hessian, NonPositiveDefiniteGetsDampedOrAClearError) {
  const int64_t n = 16;
  ThreadPool pool(2);
  // Slightly indefinite: one damping step is not enough, a few are.
  std::vector<float> h(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) h[i * n + i] = 1.0f;
  h[5 * n + 5] = -0.2f;
  std::vector<std::string> warnings;
  HessianOptions opt;
  opt.damp_fraction = 0.12;
  PreparedHessian p = prepare_hessian(h, n, opt, "layer.x", pool, &warnings);
  EXPECT_GT(p.extra_damping, 0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("layer.x"), std::string::npos);
  // Strongly indefinite: no amount of the allowed damping helps.
  h[5 * n + 5] = -1000.0f;
  try {
    prepare_hessian(h, n, opt, "model.layers.3.mlp.down_proj", pool);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.3.mlp.down_proj"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos);
  }
}

LinearWeights random_linear(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.05f);
  LinearWeights w;
  w.name = "model.layers.0.mlp.up_proj";
  w.out_features = n;
  w.in_features = k;
  w.weight.resize(static_cast<size_t>(n * k));
  for (auto& v : w.weight) v = d(rng);
  w.weight[3] = 0.4f;  // an outlier
  return w;
}

// tr(ΔW·H·ΔWᵀ) in double, H the damped, permuted-back Hessian the solver used.
double output_error(const LinearWeights& w, const std::vector<float>& rec,
                    const std::vector<float>& h, double damp) {
  const int64_t K = w.in_features, N = w.out_features;
  double total = 0;
  std::vector<double> dw(static_cast<size_t>(K));
  for (int64_t r = 0; r < N; ++r) {
    for (int64_t i = 0; i < K; ++i)
      dw[i] = static_cast<double>(w.weight[r * K + i]) - rec[r * K + i];
    for (int64_t i = 0; i < K; ++i) {
      double s = damp * dw[i];
      for (int64_t j = 0; j < K; ++j) s += static_cast<double>(h[i * K + j]) * dw[j];
      total += dw[i] * s;
    }
  }
  return total;
}

double rtn_error(const LinearWeights& w, const std::vector<float>& h, double damp, int bits) {
  // Round-to-nearest with per-column symmetric min/max scales over groups of 32 (reference).
  LinearWeights q = w;
  const int64_t K = w.in_features;
  const double maxq = (1 << bits) - 1;
  for (int64_t r = 0; r < w.out_features; ++r) {
    for (int64_t g = 0; g < K; g += 32) {
      double m = 0;
      for (int64_t i = g; i < g + 32; ++i) m = std::max(m, std::fabs(double(w.weight[r * K + i])));
      const double s = 2 * m / maxq;
      for (int64_t i = g; i < g + 32; ++i) {
        const double c =
            std::clamp(std::nearbyint(w.weight[r * K + i] / s) + (maxq + 1) / 2, 0.0, maxq);
        q.weight[r * K + i] = static_cast<float>((c - (maxq + 1) / 2) * s);
      }
    }
  }
  return output_error(w, q.weight, h, damp);
}

TEST(Gptq, LossIdentityAndBetterThanRounding) {
  const int64_t N = 96, K = 128;
  LinearWeights w = random_linear(N, K, 5);
  const std::vector<float> h = random_spd(K, 9, 512);
  ThreadPool pool(2);
  for (bool act_order : {false, true}) {
    HessianOptions ho;
    ho.act_order = act_order;
    ho.damp_fraction = 0.01;
    const PreparedHessian p = prepare_hessian(h, K, ho, w.name, pool);
    GptqSettings s;
    s.bits = 4;
    s.group_size = 32;
    const QuantizedLinear q = quantize_linear_gptq(w, p, s, true, pool);
    const double direct = output_error(w, q.reconstruction, h, p.damp);
    // ΔW = E·U exactly, so tr(ΔW H ΔWᵀ) = Σ‖e‖² (float rounding aside).
    EXPECT_NEAR(q.proxy_error, direct, 2e-3 * direct) << act_order;
    EXPECT_LT(direct, 0.8 * rtn_error(w, h, p.damp, 4)) << act_order;
  }
}

TEST(Gptq, Exl2LayerPacksAndReadsBackExactly) {
  const int64_t K = 256;
  ThreadPool pool(2);
  const std::vector<float> h = random_spd(K, 21, 600);
  HessianOptions ho;
  const PreparedHessian p = prepare_hessian(h, K, ho, "x", pool);
  // N = 200 is padded to 224 in the file; every width of the worked example (FORMATS.md §1.2.5).
  LinearWeights w = random_linear(200, K, 8);
  w.name = "lm_head";
  w.bias = std::vector<float>(200, 0.25f);
  Exl2QParams qp;
  qp.parts = {{8, 0.125, 32}, {6, 0.125, 32}, {5, 0.125, 32},
              {4, 0.25, 64},  {3, 0.125, 32}, {2, 0.25, 16}};
  const QuantizedLinear q = quantize_linear_exl2(w, p, qp, true, pool);  // verifies read-back
  ASSERT_FALSE(q.tensors.empty());
  EXPECT_NEAR(q.proxy_error, output_error(w, q.reconstruction, h, p.damp), 2e-3 * q.proxy_error);
  EXPECT_LT(relative_weight_error(w.weight, q.reconstruction), 0.3);
  for (int b : {2, 3, 4, 8}) {
    GptqSettings s;
    s.bits = b;
    s.group_size = 64;
    LinearWeights g = random_linear(64, K, 30 + b);
    const QuantizedLinear gq = quantize_linear_gptq(g, p, s, true, pool);
    EXPECT_LT(relative_weight_error(g.weight, gq.reconstruction), b == 2 ? 0.7 : 0.3) << b;
  }
}

TEST(Gptq, ResultDoesNotDependOnThreads) {
  const int64_t K = 128;
  const std::vector<float> h = random_spd(K, 4, 400);
  LinearWeights w = random_linear(600, K, 2);
  ThreadPool one(1), two(2);
  const PreparedHessian p1 = prepare_hessian(h, K, {}, "x", one);
  const PreparedHessian p2 = prepare_hessian(h, K, {}, "x", two);
  const QuantizedLinear a = quantize_linear_exl2(w, p1, exl2_attention_ladder()[4][0], false, one);
  const QuantizedLinear b = quantize_linear_exl2(w, p2, exl2_attention_ladder()[4][0], false, two);
  EXPECT_EQ(a.reconstruction, b.reconstruction);
}

// A reused buffer (the measurement recycles evicted reconstructions) changes nothing: every
// element is written. Also the tiled, threaded transposes against one thread.
TEST(Gptq, ReusedStorageGivesTheSameReconstruction) {
  const int64_t K = 160;
  const std::vector<float> h = random_spd(K, 9, 500);
  LinearWeights w = random_linear(333, K, 12);  // N and K not multiples of the 64-wide tiles
  ThreadPool one(1), two(2);
  const PreparedHessian p = prepare_hessian(h, K, {}, "x", two);
  const Exl2QParams& qp = exl2_attention_ladder()[9][0];
  const QuantizedLinear a = quantize_linear_exl2(w, p, qp, false, one);
  std::vector<float> junk(w.weight.size(), std::nanf(""));
  const QuantizedLinear b = quantize_linear_exl2(w, p, qp, false, two, {}, nullptr, junk);
  EXPECT_EQ(a.reconstruction, b.reconstruction);
}

TEST(Hessian, FinishIsSymmetricAndThreadIndependent) {
  const int64_t K = 150, rows = 90;  // K not a multiple of the 64-wide tiles
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * K));
  for (auto& v : x) v = d(rng);
  ThreadPool two(2);
  HessianAccumulator acc(K);
  acc.add(x.data(), rows, two);
  const std::vector<float> a = acc.finish(), b = acc.finish(&two);
  EXPECT_EQ(a, b);
  for (int64_t i = 0; i < K; ++i) {
    double want = 0;
    for (int64_t t = 0; t < rows; ++t) want += double(x[t * K + i]) * x[t * K + 3];
    EXPECT_NEAR(a[i * K + 3], 2.0 * want / rows, 1e-4) << i;
    for (int64_t j = 0; j < K; ++j) ASSERT_EQ(a[i * K + j], a[j * K + i]);
  }
}

// Non-finite input is a clear error, wherever it sits (the checks run in parallel chunks).
TEST(Gptq, NonFiniteWeightsOrHessianAreRefused) {
  const int64_t K = 96;
  ThreadPool two(2);
  std::vector<float> h = random_spd(K, 5, 300);
  const PreparedHessian p = prepare_hessian(h, K, {}, "x", two);
  LinearWeights w = random_linear(70, K, 6);
  w.weight.back() = std::numeric_limits<float>::infinity();
  try {
    quantize_linear_exl2(w, p, exl2_attention_ladder()[6][0], false, two);
    ADD_FAILURE() << "an infinite weight was quantized";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
  }
  h[static_cast<size_t>(K * K / 2)] = std::nanf("");
  try {
    prepare_hessian(h, K, {}, "layer.x", two);
    ADD_FAILURE() << "a NaN Hessian was prepared";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("layer.x"), std::string::npos);
  }
}

TEST(PhaseTimes, SumsPhasesAndKeepsPartsOutOfTheTotal) {
  PhaseTimes t;
  t.add("gptq", 2.0);
  t.add("forward", 1.0, 3);
  t.add("gptq", 1.0);
  t.add("gptq: copies", 0.5, 2);
  EXPECT_DOUBLE_EQ(t.seconds("gptq"), 3.0);
  EXPECT_EQ(t.count("gptq"), 2);
  EXPECT_EQ(t.count("forward"), 3);
  EXPECT_DOUBLE_EQ(t.total(), 4.0);  // "gptq: copies" is part of "gptq"
  EXPECT_EQ(t.summary(), "gptq 3.0 s (2), forward 1.0 s (3), gptq: copies 0.5 s (2)");
  {
    auto scope = time_phase(&t, "scoped");
    scope.stop();
    scope.stop();  // once only
  }
  EXPECT_EQ(t.count("scoped"), 1);
  { auto none = time_phase(nullptr, "ignored"); }
  EXPECT_EQ(t.count("ignored"), 0);
  t.clear();
  EXPECT_EQ(t.summary(), "");
}

// The DP against brute force over every combination: never over budget, and at least as good
// as the best combination that fits a budget smaller by the cost grid's rounding.
TEST(Exl2Optimizer, MatchesBruteForce) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int64_t> cost(1000, 100000);
  std::uniform_real_distribution<double> err(0.0, 0.2);
  for (int trial = 0; trial < 20; ++trial) {
    const int S = 5, O = 4;
    std::vector<std::vector<SlotOption>> slots(S);
    for (auto& s : slots) {
      for (int o = 0; o < O; ++o) s.push_back({cost(rng), err(rng)});
    }
    int64_t lo = 0, hi = 0;
    for (auto& s : slots) {
      int64_t a = INT64_MAX, b = 0;
      for (auto& o : s) a = std::min(a, o.cost), b = std::max(b, o.cost);
      lo += a;
      hi += b;
    }
    const int64_t budget = lo + (hi - lo) / 2;
    const OptimizerResult r = optimize_exl2(slots, budget);
    EXPECT_LE(r.cost, budget);
    double best = 1e9;
    const int64_t slack = S * (budget / 20000 + 1);
    for (int code = 0; code < 1024; ++code) {
      int64_t c = 0;
      double e = 0;
      for (int s = 0, x = code; s < S; ++s, x /= O) {
        c += slots[s][x % O].cost;
        e += slots[s][x % O].error;
      }
      if (c <= budget - slack) best = std::min(best, e);
    }
    EXPECT_LE(r.sum_error, best + 1e-12) << "trial " << trial;
  }
  std::vector<std::vector<SlotOption>> tight = {{{100, 0.1}}, {{100, 0.1}}};
  EXPECT_THROW(optimize_exl2(tight, 150), Error);
}

}  // namespace
}  // namespace hearth::quantizer
