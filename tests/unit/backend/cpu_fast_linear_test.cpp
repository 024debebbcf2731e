// The CPU backend's fast quantized linears (engine/backend/cpu/quant_dot.h) on EXL2, GPTQ and
// every GGUF type: the re-laid weights are the formats' values, every kernel the CPU runs gives
// the portable kernel's sums, and a linear through it stays within the error of 16-bit activations
// of the exact path (which these tests use as the reference: CpuLinears::kExact).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_gemm.h"
#include "engine/backend/cpu/int8_weight.h"
#include "engine/backend/cpu/quant_dot.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/core/dtype.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/gguf_block_weight.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth::test {
namespace {

using cpu::DotKernel;
using cpu::Int8Weight;

struct NamedWeight {
  std::string name;
  std::shared_ptr<const QuantizedWeight> weight;
  std::shared_ptr<const Bytes> image;  // a GGUF weight's file bytes
};

std::vector<NamedWeight> every_format() {
  std::vector<NamedWeight> out;
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_1,
                        GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                        GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS}) {
    auto image = std::make_shared<const Bytes>(random_block_tensor(type, 512, 37, 11));
    auto file =
        std::make_shared<const GgufFile>(GgufFile::parse(std::span<const std::byte>(*image)));
    out.push_back(
        {"gguf type " + std::to_string(static_cast<int>(type)),
         std::make_shared<GgufBlockWeight>(file, file->tensors().at(0), std::vector<int32_t>{}),
         image});
  }
  struct Exl2Case {
    int64_t k, n;
    double bpw;
  };
  for (const Exl2Case& c : {Exl2Case{576, 40, 2.5}, Exl2Case{1000, 33, 3.0}, Exl2Case{256, 48, 4.0},
                            Exl2Case{320, 40, 6.0}, Exl2Case{128, 32, 8.0}}) {
    std::map<std::string, HostTensor, std::less<>> t;
    make_exl2_layer(t, "l", c.k, c.n, exl2_recipe_for_bpw(c.bpw), 42, true);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions o;
    o.out_features = c.n;
    out.push_back({"exl2 " + std::to_string(c.bpw) + " K " + std::to_string(c.k),
                   load_quantized_linear(src, "l", o), nullptr});
  }
  struct GptqCase {
    int64_t k, n;
    GptqRecipe r;
  };
  for (const GptqCase& c : {GptqCase{512, 40, {4, 128, true, true, false}},
                            GptqCase{1000, 24, {4, 100, false, true, false}},
                            GptqCase{256, 32, {3, 64, true, false, true}},
                            GptqCase{192, 48, {2, 32, false, true, false}},
                            GptqCase{320, 40, {8, -1, false, false, false}}}) {
    std::map<std::string, HostTensor, std::less<>> t;
    make_gptq_layer(t, "l", c.k, c.n, c.r, 9);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions o;
    o.quantization_config_json = gptq_config_json(c.r);
    out.push_back({"gptq " + std::to_string(c.r.bits) + "-bit K " + std::to_string(c.k),
                   load_quantized_linear(src, "l", o), nullptr});
  }
  return out;
}

std::vector<float> random_rows(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (float& v : x) v = dist(rng);
  x[3] = 9.0f;  // an outlier, as real activations have
  return x;
}

TEST(CpuFastLinear, ReLaidWeightsAreTheFormatsValues) {
  ThreadPool pool(2);
  for (const NamedWeight& nw : every_format()) {
    SCOPED_TRACE(nw.name);
    const QuantizedWeight& w = *nw.weight;
    ASSERT_TRUE(cpu::has_int8_weight(w));
    const Int8Weight form = cpu::build_int8_weight(w, pool);
    const int64_t K = w.in_features(), N = w.out_features();
    EXPECT_EQ(form.stored_rows % 32, 0);
    std::vector<float> ref(static_cast<size_t>(N * K)), row(static_cast<size_t>(K));
    w.dequantize_rows(0, N, ref.data());
    for (int64_t n = 0; n < N; ++n) {
      cpu::int8_weight_row(form, n, row.data());
      for (int64_t k = 0; k < K; ++k) {
        const float want = ref[n * K + k];
        if (w.format() == "gguf") {
          // GGUF: the same fma dequantize_ggml computes, bit for bit.
          ASSERT_EQ(row[k], want) << "n " << n << " k " << k;
        } else {
          // EXL2/GPTQ round each product to fp16; the fast path keeps it in fp32.
          ASSERT_NEAR(row[k], want, std::fabs(want) * 0x1p-11f + 1e-30f) << "n " << n << " k " << k;
        }
      }
    }
  }
}

// The memory plan's figure for a weight is what the re-layout holds, for every format.
TEST(CpuFastLinear, PlannedBytesAreTheReLaidSize) {
  ThreadPool pool(2);
  for (const NamedWeight& nw : every_format()) {
    EXPECT_EQ(cpu::int8_weight_bytes(*nw.weight), cpu::build_int8_weight(*nw.weight, pool).bytes())
        << nw.name;
  }
}

TEST(CpuFastLinear, FourBitCodesAreStoredAsNibbles) {
  ThreadPool pool(1);
  for (const NamedWeight& nw : every_format()) {
    const Int8Weight form = cpu::build_int8_weight(*nw.weight, pool);
    const bool narrow = nw.name.find("type 2") != std::string::npos ||   // Q4_0
                        nw.name.find("type 3") != std::string::npos ||   // Q4_1
                        nw.name.find("type 20") != std::string::npos ||  // IQ4_NL
                        nw.name.find("type 23") != std::string::npos ||  // IQ4_XS
                        nw.name.find("gptq 4-bit") != std::string::npos;
    if (narrow) {
      EXPECT_TRUE(form.nibbles) << nw.name;
    }
    if (nw.name.find("gguf type 8") != std::string::npos) {  // Q8_0
      EXPECT_FALSE(form.nibbles);
    }
  }
}

TEST(CpuFastLinear, EveryKernelGivesThePortableSums) {
  ThreadPool pool(2);
  std::vector<DotKernel> kernels;
  // cpu_runs() is false for another architecture's kernels (kNeon on x86, AVX on AArch64).
  for (DotKernel k : {DotKernel::kAvx2, DotKernel::kAvx512Vnni, DotKernel::kNeon}) {
    if (cpu::cpu_runs(k)) kernels.push_back(k);
  }
  if (kernels.empty()) GTEST_SKIP() << "this CPU runs only the portable kernel";
  for (const NamedWeight& nw : every_format()) {
    SCOPED_TRACE(nw.name);
    const Int8Weight form = cpu::build_int8_weight(*nw.weight, pool);
    const int64_t K = form.in_features, N = form.out_features;
    for (int64_t rows : {1, 2, 3, 4, 5, 9}) {
      const std::vector<float> x = random_rows(rows, K, 3);
      cpu::QuantizedRows xq;
      cpu::resize_quantized_rows(form, rows, xq);
      cpu::quantize_rows(form, x.data(), 0, rows, xq);
      std::vector<int16_t> scratch;
      std::vector<float> want(static_cast<size_t>(rows * N));
      cpu::quant_dot_outputs(form, xq, 0, N, want.data(), N, DotKernel::kPortable, scratch);
      // The integer sums are equal; the fp32 sums of K / 32 block terms may round apart.
      float largest = 0.0f;
      for (float v : want) largest = std::max(largest, std::fabs(v));
      for (DotKernel kernel : kernels) {
        std::vector<float> got(static_cast<size_t>(rows * N));
        cpu::quant_dot_outputs(form, xq, 0, N, got.data(), N, kernel, scratch);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + largest))
              << cpu::dot_kernel_name(kernel) << " rows " << rows << " at " << i;
        }
      }
    }
  }
}

// ||x − x̂|| / ||x|| for x rounded as the fast path rounds it for `weight`.
double activation_rounding(const QuantizedWeight& weight, const std::vector<float>& x,
                           int64_t rows) {
  ThreadPool pool(1);
  const Int8Weight form = cpu::build_int8_weight(weight, pool);
  cpu::QuantizedRows xq;
  cpu::resize_quantized_rows(form, rows, xq);
  cpu::quantize_rows(form, x.data(), 0, rows, xq);
  double err = 0, norm = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t s = 0; s < form.stored_rows; ++s) {
      const int32_t k = form.row_src[s];
      if (k < 0) continue;
      const float v = x[r * form.in_features + k];
      const float back = xq.d[r * form.stored_rows / 32 + s / 32] * xq.q[r * form.stored_rows + s];
      err += double(v - back) * (v - back);
      norm += double(v) * v;
    }
  }
  return std::sqrt(err / norm);
}

// The relative RMS difference of `source`'s outputs on the fast backend from the exact one's,
// for input rows x [rows, K].
double fast_against_exact(Backend& exact, Backend& fast, const LinearSource& source, int64_t K,
                          int64_t N, const std::vector<float>& x, int64_t rows) {
  std::vector<std::vector<float>> y;
  for (Backend* b : {&exact, &fast}) {
    const auto w = b->upload_linear(source);
    DeviceTensor xt = b->alloc_activation(rows, K);
    DeviceTensor yt = b->alloc_activation(rows, N);
    std::copy(x.begin(), x.end(), static_cast<float*>(xt.data));  // CPU memory
    b->linear(*w, xt, yt);
    y.push_back(b->read(yt, rows));
  }
  double err = 0, norm = 0;
  for (size_t i = 0; i < y[0].size(); ++i) {
    err += (y[1][i] - y[0][i]) * double(y[1][i] - y[0][i]);
    norm += double(y[0][i]) * y[0][i];
  }
  return std::sqrt(err / norm);
}

// Through the backend: the fast linear against the exact one. On random weights its relative
// error follows that of the rounded activations (about 3e-5 with an outlier in the row): with
// a few dozen outputs it lands within 3 times that, plus, for EXL2/GPTQ, the fp16 rounding of
// each product the exact path keeps. The real model's test is HfParityFast.
TEST(CpuFastLinear, LinearStaysCloseToTheExactPath) {
  auto exact = create_cpu_backend(2, CpuLinears::kExact);
  auto fast = create_cpu_backend(2, CpuLinears::kFast);
  EXPECT_NE(fast->name().find("integer-dot"), std::string::npos) << fast->name();
  for (const NamedWeight& nw : every_format()) {
    SCOPED_TRACE(nw.name);
    LinearSource source;
    source.name = nw.name;
    source.quantized = nw.weight;
    const int64_t K = nw.weight->in_features(), N = nw.weight->out_features();
    for (int64_t rows : {1, 7}) {
      const std::vector<float> x = random_rows(rows, K, 17);
      const double rounding = activation_rounding(*nw.weight, x, rows);
      EXPECT_GT(rounding, 0.0);
      const double fp16_products = nw.weight->format() == "gguf" ? 0.0 : 1e-3;
      EXPECT_LT(fast_against_exact(*exact, *fast, source, K, N, x, rows),
                3 * rounding + fp16_products + 1e-6)
          << "rows " << rows;
    }
  }
}

// Prompt-sized inputs in the fast mode multiply the weights' exact values on BLAS: against the
// exact path only the order of the fp32 sums differs, for quantized and dense (fp16, with a bias)
// weights alike. Fewer rows keep the integer dot products (the test above).
TEST(CpuFastLinear, PromptSizedInputsRunOnBlasAtTheExactValues) {
  if (!cpu::cpu_gemm_available()) GTEST_SKIP() << "skipped: this build has no BLAS";
  auto exact = create_cpu_backend(2, CpuLinears::kExact);
  auto fast = create_cpu_backend(2, CpuLinears::kFast);
  EXPECT_NE(fast->name().find("prompts on BLAS"), std::string::npos) << fast->name();
  const std::vector<NamedWeight> weights = every_format();  // (holds the GGUF images they read)
  std::vector<LinearSource> sources;
  for (const NamedWeight& nw : weights) {
    LinearSource s;
    s.name = nw.name;
    s.quantized = nw.weight;
    sources.push_back(s);
  }
  LinearSource dense;
  dense.name = "dense fp16 with a bias";
  const int64_t DK = 300, DN = 200;
  const std::vector<float> wf = random_rows(DN, DK, 23);
  dense.weight = HostTensor::allocate(DType::kF16, {DN, DK});
  for (size_t i = 0; i < wf.size(); ++i) {
    static_cast<uint16_t*>(dense.weight.mutable_data())[i] = float_to_half(wf[i]);
  }
  dense.bias = HostTensor::from_floats(random_rows(1, DN, 29), {DN});
  sources.push_back(dense);
  for (const LinearSource& source : sources) {
    SCOPED_TRACE(source.name);
    const int64_t K = source.quantized ? source.quantized->in_features() : DK;
    const int64_t N = source.quantized ? source.quantized->out_features() : DN;
    const int64_t rows = 40;
    // fp32 sums of a few hundred products in another order: ~1e-7 relative; the integer path's
    // 16-bit activations would give ~3e-5.
    EXPECT_LT(fast_against_exact(*exact, *fast, source, K, N, random_rows(rows, K, 31), rows),
              1e-6);
  }
}

TEST(CpuFastLinear, NonFiniteActivationsReachTheOutput) {
  auto fast = create_cpu_backend(1, CpuLinears::kFast);
  const NamedWeight nw = every_format().front();
  LinearSource source;
  source.name = nw.name;
  source.quantized = nw.weight;
  const auto w = fast->upload_linear(source);
  const int64_t K = nw.weight->in_features(), N = nw.weight->out_features();
  std::vector<float> x = random_rows(1, K, 5);
  x[40] = std::numeric_limits<float>::quiet_NaN();
  DeviceTensor xt = fast->alloc_activation(1, K);
  DeviceTensor yt = fast->alloc_activation(1, N);
  std::copy(x.begin(), x.end(), static_cast<float*>(xt.data));
  fast->linear(*w, xt, yt);
  for (float v : fast->read(yt, 1)) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace hearth::test
