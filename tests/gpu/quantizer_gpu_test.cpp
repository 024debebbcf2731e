// The quantizer's GPU linear algebra (cuBLAS syrk, cuSOLVER potrf + trsm) against the CPU
// reference (hessian.cpp, cholesky.cpp), and a whole tiny EXL2/GPTQ job on the CUDA backend
// against the same job on the CPU. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/thread_pool.h"
#include "engine/quant/quantizer/cholesky.h"
#include "engine/quant/quantizer/cuda_quant_math.h"
#include "engine/quant/quantizer/gptq_solver.h"
#include "engine/quant/quantizer/group_quantizer.h"
#include "engine/quant/quantizer/hessian.h"
#include "engine/quant/quantizer/quantize_job.h"
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

TEST(QuantizerGpu, GramMatchesCpu) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  ThreadPool pool(0);
  for (int64_t k : {1, 31, 576, 1536}) {
    const int64_t rows = 777;
    const auto x = random_rows(rows, k, static_cast<uint32_t>(k));
    HessianAccumulator cpu(k), dev(k);
    cpu.add(x.data(), rows, pool);
    dev.add_sum(gpu.gram(x.data(), rows, k), rows);
    const auto a = cpu.finish(), b = dev.finish();
    double scale = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, std::fabs(double(a[i])));
      diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    }
    EXPECT_LT(diff / scale, 1e-5) << "k = " << k;
  }
}

TEST(QuantizerGpu, InverseCholeskyMatchesCpu) {
  REQUIRE_GPU();
  CudaQuantMath gpu(0);
  ThreadPool pool(0);
  for (int64_t n : {1, 64, 130, 1536}) {
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
