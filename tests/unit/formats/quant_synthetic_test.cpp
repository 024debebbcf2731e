// Synthetic EXL2 / GPTQ layers and models (the GPU tests' and the benchmark's inputs): they must
// pass the loader's validation, decode consistently through the tile layout, and run a forward
// pass on the CPU backend with finite logits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_weight.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/model/llama_model.h"

namespace hearth::test {
namespace {

// Layout emulation (the kernels' decoding) against the reference dequantizer on one layer.
void check_layer(const QuantizedWeight& w) {
  const QuantTileLayout L = build_quant_tile_layout(w, 2);
  const int64_t K = w.in_features(), N = w.out_features(), R = 2;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(R * K));
  for (auto& v : x) v = half_to_float(float_to_half(u(rng)));
  std::vector<float> y(static_cast<size_t>(R * N)), W(static_cast<size_t>(N * K));
  emulate_quant_tile_gemm(L, x.data(), R, y.data());
  w.dequantize_rows(0, N, W.data());
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += double(x[r * K + k]) * W[n * K + k];
        mag += std::fabs(double(x[r * K + k]) * W[n * K + k]);
      }
      ASSERT_LE(std::fabs(y[r * N + n] - ref), 1e-5 * mag + 1e-30) << "n " << n << " r " << r;
    }
  }
}

TEST(QuantSynthetic, Exl2LayersOfEveryRecipeAndOddShapes) {
  struct Case {
    int64_t k, n;
    double bpw;
  };
  for (const Case& c : {Case{576, 200, 2.5}, Case{1000, 96, 3.0}, Case{256, 1001, 4.0},
                        Case{1056, 64, 5.0}, Case{320, 40, 6.0}, Case{128, 32, 8.0}}) {
    std::map<std::string, HostTensor, std::less<>> t;
    make_exl2_layer(t, "l", c.k, c.n, exl2_recipe_for_bpw(c.bpw), 42, true);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions o;
    o.out_features = c.n;
    const auto w = load_quantized_linear(src, "l", o);
    EXPECT_EQ(w->out_features(), c.n);
    if (c.n >= 200) {  // narrow layers pay for padding and the permutation
      EXPECT_NEAR(w->bits_per_weight(), c.bpw, c.bpw * 0.15 + 0.4) << c.k << "x" << c.n;
    }
    check_layer(*w);
  }
  std::map<std::string, HostTensor, std::less<>> t;
  make_exl2_layer(t, "head", 576, 1001, exl2_head_recipe(), 7);
  MemoryTensorSource src(std::move(t));
  const auto w = Exl2Weight::load(src, "head", 1001);
  EXPECT_EQ(w->padded_out_features(), 1024);
  check_layer(*w);
}

TEST(QuantSynthetic, GptqLayersOfEveryFlavour) {
  struct Case {
    int64_t k, n;
    GptqRecipe r;
  };
  const std::vector<Case> cases = {
      {512, 64, {4, 128, true, true, false}},  {1000, 96, {4, 100, false, true, false}},
      {256, 32, {3, 64, true, false, true}},   {192, 48, {2, 32, false, true, false}},
      {320, 40, {8, -1, false, false, false}}, {576, 128, {4, 32, true, false, false}},
  };
  for (const Case& c : cases) {
    std::map<std::string, HostTensor, std::less<>> t;
    make_gptq_layer(t, "l", c.k, c.n, c.r, 9);
    MemoryTensorSource src(std::move(t));
    QuantizedLinearOptions o;
    o.quantization_config_json = gptq_config_json(c.r);
    const auto w = load_quantized_linear(src, "l", o);
    const auto& g = dynamic_cast<const GptqWeight&>(*w);
    EXPECT_EQ(g.bits(), c.r.bits);
    EXPECT_EQ(g.symmetric(), c.r.sym);
    EXPECT_EQ(g.zero_format(), c.r.v2 ? GptqZeros::kV2 : GptqZeros::kV1);
    check_layer(*w);
  }
}

void run_tiny_model(const std::string& config_name, const SyntheticQuantSource::Options& o) {
  ModelConfig config = synthetic_model_config(config_name);
  SyntheticQuantSource weights(config, o);
  config.quantization_config_json = weights.quantization_config_json();
  auto backend = create_cpu_backend(2);
  LlamaModelOptions mo;
  mo.max_seq_len = 64;
  mo.max_batch_tokens = 16;
  mo.max_logit_rows = 16;
  LlamaModel model(config, *backend, weights, mo);
  auto cache = backend->create_kv_cache(model.kv_cache_spec(1, 64));
  std::vector<int32_t> tokens = {1, 5, 9, 200, 7};
  const std::vector<int32_t> pages = {0};
  BatchDesc batch;
  SequenceSlice s;
  s.tokens = tokens;
  s.page_table = pages;
  s.all_logits = true;
  batch.seqs.push_back(s);
  const DeviceTensor logits = model.forward(batch, *cache);
  EXPECT_EQ(logits.cols, config.vocab_size);
  const auto v = backend->read(logits, 5);
  double spread = 0;
  for (float f : v) {
    ASSERT_TRUE(std::isfinite(f));
    spread = std::max(spread, std::fabs(double(f)));
  }
  EXPECT_GT(spread, 0.0);
}

TEST(QuantSynthetic, TinyModelsRunOnTheCpu) {
  SyntheticQuantSource::Options e;
  e.format = "exl2";
  for (double bpw : {2.5, 4.0, 8.0}) {
    e.bpw = bpw;
    run_tiny_model("tiny-odd", e);  // vocab 1001: a padded head; K = 1000 for down_proj
  }
  SyntheticQuantSource::Options g;
  g.format = "gptq";
  run_tiny_model("tiny", g);
  g.gptq.sym = false;
  g.gptq.act_order = false;
  run_tiny_model("tiny", g);
}

}  // namespace
}  // namespace hearth::test
