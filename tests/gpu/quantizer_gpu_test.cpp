// The quantizer's GPU linear algebra (cuBLAS syrk, blocked Cholesky + trsm) against the CPU
// reference (hessian.cpp, cholesky.cpp), and a whole tiny EXL2/GPTQ job on the CUDA backend
// against the same job on the CPU. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/thread_pool.h"
#include "engine/quantizer/cholesky.h"
#include "engine/quantizer/cuda_quant_math.h"
#include "engine/quantizer/gptq_solver.h"
#include "engine/quantizer/group_quantizer.h"
#include "engine/quantizer/hessian.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/quantize_job.h"
#include "kernels/quantizer_kernels.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

namespace hearth::quantizer {
namespace {

#define REQUIRE_GPU() \
  if (cuda_device_count() == 0) GTEST_SKIP() << "skipped: no GPU"

std::vector<float> random_rows(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (auto& v : x) v = d(rng);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t i = 1; i < k; ++i) x[t * k + i] += 0.5f * x[t * k + i - 1];
  }
  return x;
}

TEST(QuantizerGpu, GramSumMatchesCpu) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  ThreadPool pool(0);
  for (int64_t k : {1, 31, 576, 1536}) {
    // Batches of different sizes, summed on the device and downloaded once.
    const std::vector<int64_t> batches = {777, 1, 300};
    HessianAccumulator cpu(k);
    auto sum = gpu.gram_sum(k);
    uint32_t seed = static_cast<uint32_t>(k);
    for (int64_t rows : batches) {
      const auto x = random_rows(rows, k, seed++);
      cpu.add(x.data(), rows, pool);
      sum->add(x.data(), rows);
    }
    EXPECT_EQ(sum->tokens(), cpu.tokens());
    const auto a = cpu.finish(), b = sum->finish();
    double scale = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, std::fabs(double(a[i])));
      diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    }
    EXPECT_LT(diff / scale, 1e-5) << "k = " << k;
    // Symmetric, as finish() promises.
    for (int64_t i = 0; i < k; i += 7) {
      for (int64_t j = 0; j < i; j += 5) ASSERT_EQ(b[i * k + j], b[j * k + i]);
    }
  }
}

TEST(QuantizerGpu, InverseCholeskyMatchesCpu) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  ThreadPool pool(0);
  for (int64_t n : {1, 64, 130, 600, 1536}) {  // one and several Cholesky blocks
    const auto x = random_rows(4 * n + 16, n, 100 + static_cast<uint32_t>(n));
    HessianAccumulator acc(n);
    acc.add(x.data(), 4 * n + 16, pool);
    std::vector<float> h = acc.finish();
    for (int64_t i = 0; i < n; ++i) h[i * n + i] += 0.01f;
    std::vector<float> uc, ug;
    ASSERT_TRUE(inverse_upper_cholesky(h, n, pool, uc));
    ASSERT_TRUE(gpu.inverse_upper_cholesky(h, n, ug));
    double scale = 0, diff = 0;
    for (size_t i = 0; i < uc.size(); ++i) {
      scale = std::max(scale, std::fabs(double(uc[i])));
      diff = std::max(diff, std::fabs(double(uc[i]) - ug[i]));
    }
    EXPECT_LT(diff / scale, 1e-3) << "n = " << n;
  }
  // Not positive definite: both refuse.
  std::vector<float> bad(16 * 16, 0.0f);
  for (int i = 0; i < 16; ++i) bad[i * 16 + i] = i == 3 ? -1.0f : 1.0f;
  std::vector<float> u;
  EXPECT_FALSE(gpu.inverse_upper_cholesky(bad, 16, u));
}

// The size of Llama-3-8B's down projection (k = 14336): the factor is right (Uᵀ·U·h·v = v for
// random v, checked with host products) and the blocked factorization, whose diagonal blocks
// cross to the host, stays far below the seconds a layer's GPTQ takes.
TEST(QuantizerGpu, InverseCholeskyOfALargeHessian) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  const int64_t n = 14336;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> h(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) h[i * n + j] = h[j * n + i] = 0.01f * d(rng);
    h[i * n + i] = 2.0f + d(rng);  // diagonally dominant: positive definite
  }
  std::vector<float> u;
  std::vector<float> identity(256 * 256, 0.0f);
  for (int i = 0; i < 256; ++i) identity[i * 256 + i] = 1.0f;
  ASSERT_TRUE(gpu.inverse_upper_cholesky(identity, 256, u));  // warm-up: cuBLAS, kernels
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(gpu.inverse_upper_cholesky(h, n, u));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("inverse_upper_cholesky n = %lld: %.3f s\n", static_cast<long long>(n), seconds);
  EXPECT_LT(seconds, 5.0);
  std::vector<double> v(n), hv(n, 0.0), uhv(n, 0.0), r(n, 0.0);
  for (auto& x : v) x = d(rng);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) hv[i] += double(h[i * n + j]) * v[j];
  }
  for (int64_t i = 0; i < n; ++i) {  // U·(h·v), U upper
    for (int64_t j = i; j < n; ++j) uhv[i] += double(u[i * n + j]) * hv[j];
  }
  for (int64_t i = 0; i < n; ++i) {  // Uᵀ·(U·h·v)
    for (int64_t j = 0; j <= i; ++j) r[i] += double(u[j * n + i]) * uhv[j];
  }
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err = std::max(err, std::fabs(r[i] - v[i]));
    norm = std::max(norm, std::fabs(v[i]));
  }
  EXPECT_LT(err / norm, 1e-3);
}

// GPTQ on the device against the CPU solver on the same inputs: the loss identity holds and
// the reconstructions agree up to the order of float updates.
TEST(QuantizerGpu, GptqMatchesCpu) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  ThreadPool pool(0);
  const int64_t K = 256, N = 320;
  const auto x = random_rows(1024, K, 5);
  HessianAccumulator acc(K);
  acc.add(x.data(), 1024, pool);
  const PreparedHessian h = prepare_hessian(acc.finish(), K, {}, "x", pool);
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w0(static_cast<size_t>(K * N));
  for (auto& v : w0) v = d(rng);
  std::vector<GptqGroupSpec> groups = {{0, 64, 8}, {64, 64, 6}, {128, 128, 4}};
  for (GroupQuantizerKind kind : {GroupQuantizerKind::kExl2, GroupQuantizerKind::kGptqSymmetric,
                                  GroupQuantizerKind::kGptqAsymmetric}) {
    std::vector<float> wc = w0, wg = w0;
    FindParams find = [kind](const float* p, int64_t rows, int64_t n, int bits) {
      return kind == GroupQuantizerKind::kExl2
                 ? exl2_find_params(p, rows, n, n, bits)
                 : gptq_find_params(p, rows, n, n, bits,
                                    kind == GroupQuantizerKind::kGptqSymmetric);
    };
    const GptqResult c = gptq_quantize(wc, K, N, h.hinv_upper, groups, find, pool);
    const GptqResult g = gpu.gptq(wg, K, N, h.hinv_upper, groups, kind);
    ASSERT_EQ(g.dequantized.size(), c.dequantized.size());
    EXPECT_NEAR(g.proxy_error, c.proxy_error, 0.05 * c.proxy_error);
    int64_t differ = 0;
    for (size_t i = 0; i < c.codes.size(); ++i) differ += c.codes[i] != g.codes[i];
    // Rounding decisions near a tie may flip (and an EXL2 group may pick a neighbouring grid
    // multiplier); most codes agree.
    EXPECT_LT(differ, static_cast<int64_t>(c.codes.size() / 10)) << static_cast<int>(kind);
  }
}

// The whole-linear entry (the transposes, the padding and the cached factor on the device)
// against the plain device GPTQ on the same inputs transposed on the host: bit for bit.
TEST(QuantizerGpu, LinearOnDeviceEqualsHostTransposes) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  ThreadPool pool(0);
  const int64_t K = 384, N = 200, n_pad = 224;  // N not a multiple of 32: padded columns
  std::vector<PreparedHessian> hs;
  for (uint32_t seed : {7u, 8u}) {
    const auto x = random_rows(900, K, seed);
    HessianAccumulator acc(K);
    acc.add(x.data(), 900, pool);
    hs.push_back(prepare_hessian(acc.finish(), K, {}, "x", pool));
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<LinearWeights> ws(2);
  for (auto& lw : ws) {
    lw.name = "x";
    lw.out_features = N;
    lw.in_features = K;
    lw.weight.resize(static_cast<size_t>(N * K));  // [N, K]
    for (auto& v : lw.weight) v = d(rng);
    lw.id = next_weights_id();
  }
  const std::vector<GptqGroupSpec> groups = {{0, 128, 5}, {128, 96, 4}, {224, 160, 3}};
  // Alternating Hessians and weights exercise the copies kept on the device and their
  // replacement.
  for (int round = 0; round < 4; ++round) {
    const PreparedHessian& h = hs[static_cast<size_t>(round % 2)];
    const LinearWeights& lw = ws[static_cast<size_t>(round / 2)];
    const std::vector<float>& w = lw.weight;
    for (GroupQuantizerKind kind :
         {GroupQuantizerKind::kExl2, GroupQuantizerKind::kGptqAsymmetric}) {
      const GptqLinearResult a = gpu.gptq_linear(lw, n_pad, h, groups, kind, true);
      std::vector<float> wp(static_cast<size_t>(K * n_pad), 0.0f);
      for (int64_t s = 0; s < K; ++s) {
        for (int64_t c = 0; c < N; ++c) wp[s * n_pad + c] = w[c * K + h.perm[s]];
      }
      const GptqResult b = gpu.gptq(wp, K, n_pad, h.hinv_upper, groups, kind);
      ASSERT_EQ(a.codes, b.codes) << "round " << round;
      EXPECT_EQ(a.proxy_error, b.proxy_error);
      ASSERT_EQ(a.reconstruction.size(), static_cast<size_t>(N * K));
      for (int64_t s = 0; s < K; ++s) {
        for (int64_t c = 0; c < N; ++c) {
          ASSERT_EQ(a.reconstruction[c * K + h.perm[s]], b.dequantized[s * n_pad + c])
              << "output " << c << ", input " << h.perm[s];
        }
      }
    }
  }
  // Without codes asked for, none come back.
  EXPECT_TRUE(
      gpu.gptq_linear(ws[0], n_pad, hs[0], groups, GroupQuantizerKind::kExl2, false).codes.empty());
}

// The EXL2 group parameters found on the device equal the host's computation bit for bit.
TEST(QuantizerGpu, Exl2GroupParamsMatchHost) {
  REQUIRE_GPU();
  const int64_t n = 1000;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> base(static_cast<size_t>(n));
  for (auto& v : base) v = 1e-3f + u(rng) * u(rng) * 0.2f;
  std::vector<float> err(static_cast<size_t>(exl2_grid_size()));
  for (auto& v : err) v = 1.0f + u(rng);
  err[61] = 0.5f;
  err[70] = 0.5f;  // a tie: the first index wins, as on the host
  float *d_base, *d_scale, *d_err, *d_out, *d_zero, *d_copy;
  uint8_t* d_qs;
  ASSERT_EQ(cudaMalloc(&d_base, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_scale, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_zero, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_copy, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_err, err.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, 2 * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_qs, n), cudaSuccess);
  cudaMemcpy(d_base, base.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d_err, err.data(), err.size() * 4, cudaMemcpyHostToDevice);
  ASSERT_EQ(kernels::quantizer_exl2_candidates(nullptr, d_base, n, d_qs, d_scale, d_out),
            cudaSuccess);
  const Exl2ScaleCandidates host = exl2_scale_candidates(base);
  std::vector<uint8_t> qs(static_cast<size_t>(n));
  std::vector<float> scale(static_cast<size_t>(n)), zero(static_cast<size_t>(n));
  float smax = 0;
  cudaMemcpy(qs.data(), d_qs, n, cudaMemcpyDeviceToHost);
  cudaMemcpy(scale.data(), d_scale, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(&smax, d_out, 4, cudaMemcpyDeviceToHost);
  EXPECT_EQ(smax, host.smax);
  EXPECT_EQ(qs, host.qscale);
  EXPECT_EQ(scale, host.scale);
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    ASSERT_EQ(kernels::quantizer_exl2_params(nullptr, d_err, d_out, d_qs, n, bits, d_scale, d_zero,
                                             d_copy, d_out + 1),
              cudaSuccess);
    const GroupParams want = exl2_params_from(host, 61, bits);
    float qmax = 0;
    cudaMemcpy(scale.data(), d_scale, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(zero.data(), d_zero, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&qmax, d_out + 1, 4, cudaMemcpyDeviceToHost);
    EXPECT_EQ(qmax, want.qscale_max) << bits;
    EXPECT_EQ(scale, want.scale) << bits;
    EXPECT_EQ(zero, want.zero) << bits;
  }
  for (void* p :
       std::initializer_list<void*>{d_base, d_scale, d_zero, d_copy, d_err, d_out, d_qs}) {
    cudaFree(p);
  }
}

TEST(QuantizerGpu, TinyJobOnCudaMatchesCpu) {
  REQUIRE_GPU();
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "hearth_quantizer_gpu_test";
  fs::remove_all(root);
  test::TinySpec spec;
  spec.tied = false;
  test::write_tiny_model(root / "tiny", spec);
  {
    std::ofstream out(root / "calib.txt");
    for (int i = 0; i < 60; ++i) out << "Line " << i << " of calibration text, more or less.\n\n";
  }
  for (QuantizeFormat f : {QuantizeFormat::kExl2, QuantizeFormat::kGptq}) {
    QuantizeResult r[2];
    for (int d = 0; d < 2; ++d) {
      QuantizeOptions o;
      o.source = root / "tiny";
      o.output = root / (std::string(quantize_format_name(f)) + (d ? "_cuda" : "_cpu"));
      o.format = f;
      o.calibration_file = root / "calib.txt";
      o.rows = 3;
      o.length = 48;
      o.measure_rows = 2;
      o.device = d ? DeviceKind::kCuda : DeviceKind::kCpu;
      o.evaluate = true;
      o.eval_file = root / "calib.txt";
      o.eval_ctx = 64;
      r[d] = quantize_model(o);
    }
    ASSERT_TRUE(r[0].evaluation && r[1].evaluation);
    // fp16 activations on the GPU, fp32 on the CPU: close, not identical.
    EXPECT_NEAR(r[0].bits_per_weight, r[1].bits_per_weight, 0.5);
    EXPECT_NEAR(r[0].evaluation->kl_mean, r[1].evaluation->kl_mean,
                0.5 * r[0].evaluation->kl_mean + 0.05);
  }
}

}  // namespace
}  // namespace hearth::quantizer
