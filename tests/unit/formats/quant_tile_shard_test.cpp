// Tensor-parallel shards of the tile layout, emulated on the CPU: column shards side by side are
// the whole layer's outputs bit for bit; row shards over a partition of the inputs sum to the
// whole product (in-order layouts without sharing a chunk, act-order ones overlapping); a shard
// dequantizes to its part of the whole matrix; bad ranges are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backend/tensor_parallel_split.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/core/error.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quant_tile_shard.h"
#include "engine/formats/quantized_linear_loader.h"

namespace hearth::test {
namespace {

std::shared_ptr<const QuantizedWeight> exl2_layer(int64_t k, int64_t n) {
  std::map<std::string, HostTensor, std::less<>> t;
  make_exl2_layer(t, "l", k, n, exl2_recipe_for_bpw(4.0), 11);
  MemoryTensorSource src(std::move(t));
  QuantizedLinearOptions o;
  o.out_features = n;
  return load_quantized_linear(src, "l", o);
}

std::shared_ptr<const QuantizedWeight> gptq_layer(int64_t k, int64_t n, bool act_order) {
  std::map<std::string, HostTensor, std::less<>> t;
  const GptqRecipe r{4, 64, act_order, true, false};
  make_gptq_layer(t, "l", k, n, r, 13);
  MemoryTensorSource src(std::move(t));
  QuantizedLinearOptions o;
  o.quantization_config_json = gptq_config_json(r);
  return load_quantized_linear(src, "l", o);
}

std::vector<float> random_x(int64_t rows, int64_t k) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (float& v : x) v = u(rng);
  return x;
}

std::vector<float> product(const QuantTileLayout& L, const std::vector<float>& x, int64_t rows) {
  std::vector<float> y(static_cast<size_t>(rows * L.out_features));
  emulate_quant_tile_gemm(L, x.data(), rows, y.data());
  return y;
}

TEST(QuantTileShard, ColumnShardsSideBySideAreTheWholeLayer) {
  for (const auto& w : {exl2_layer(256, 200), gptq_layer(256, 192, true)}) {
    const QuantTileLayout L = build_quant_tile_layout(*w, 1);
    const int64_t R = 3, N = L.out_features;
    const std::vector<float> x = random_x(R, L.in_features);
    const std::vector<float> whole = product(L, x, R);
    const int64_t cut = 96;
    const QuantTileLayout a = slice_tile_columns(L, 0, cut), b = slice_tile_columns(L, cut, N);
    EXPECT_EQ(a.out_features, cut);
    EXPECT_EQ(b.out_features, N - cut);
    EXPECT_EQ(a.device_bytes() + b.device_bytes(),
              L.device_bytes() + L.chunk_line.size() * 4 + L.chunk_info.size() * 4 +
                  L.row_src.size() * 4 + L.scale_max.size() * 2);
    const std::vector<float> ya = product(a, x, R), yb = product(b, x, R);
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t n = 0; n < N; ++n) {
        const float got = n < cut ? ya[r * cut + n] : yb[r * (N - cut) + n - cut];
        ASSERT_EQ(got, whole[r * N + n]) << "row " << r << " output " << n;
      }
    }
  }
}

TEST(QuantTileShard, RowShardsSumToTheWholeProduct) {
  struct Case {
    std::shared_ptr<const QuantizedWeight> w;
    bool in_order;
  };
  for (const Case& c : {Case{gptq_layer(512, 64, false), true},
                        Case{gptq_layer(512, 64, true), false}, Case{exl2_layer(512, 96), false}}) {
    const QuantTileLayout L = build_quant_tile_layout(*c.w, 1);
    const int64_t R = 2, K = L.in_features, N = L.out_features;
    const std::vector<float> x = random_x(R, K);
    const std::vector<float> whole = product(L, x, R);
    const int64_t cut = 192;
    const QuantTileLayout a = slice_tile_rows(L, 0, cut), b = slice_tile_rows(L, cut, K);
    EXPECT_EQ(a.in_features, cut);
    if (c.in_order) {
      EXPECT_EQ(a.chunks + b.chunks, L.chunks) << "in-order shards share no chunk";
      EXPECT_TRUE(a.rows_in_order && b.rows_in_order);
    }
    std::vector<float> xa, xb;
    for (int64_t r = 0; r < R; ++r) {
      xa.insert(xa.end(), x.begin() + r * K, x.begin() + r * K + cut);
      xb.insert(xb.end(), x.begin() + r * K + cut, x.begin() + (r + 1) * K);
    }
    const std::vector<float> ya = product(a, xa, R), yb = product(b, xb, R);
    for (int64_t i = 0; i < R * N; ++i) {
      ASSERT_NEAR(ya[i] + yb[i], whole[i], 1e-4 * (1 + std::fabs(whole[i]))) << i;
    }
  }
}

TEST(QuantTileShard, AShardDequantizesToItsPartOfTheMatrix) {
  const auto w = gptq_layer(256, 96, true);
  const QuantTileLayout L = build_quant_tile_layout(*w, 1);
  const int64_t K = w->in_features();
  TileLayoutWeight shard(slice_tile_columns(L, 32, 96), w->bits_per_weight());
  EXPECT_TRUE(has_quant_tile_layout(shard));
  std::vector<float> whole(static_cast<size_t>(96 * K)), part(static_cast<size_t>(64 * K));
  w->dequantize_rows(0, 96, whole.data());
  shard.dequantize_rows(0, 64, part.data());
  for (int64_t i = 0; i < 64 * K; ++i) ASSERT_EQ(part[i], whole[32 * K + i]) << i;
  EXPECT_EQ(build_quant_tile_layout(shard).qweight, shard.layout().qweight);
}

TEST(QuantTileShard, RefusesRangesOffTheTiles) {
  const QuantTileLayout L = build_quant_tile_layout(*exl2_layer(256, 200), 1);
  EXPECT_THROW(slice_tile_columns(L, 16, 200), Error);
  EXPECT_THROW(slice_tile_columns(L, 0, 100), Error);
  EXPECT_THROW(slice_tile_columns(L, 64, 64), Error);
  EXPECT_THROW(slice_tile_rows(L, 0, 300), Error);
  EXPECT_THROW(slice_tile_rows(L, 10, 10), Error);
}

TEST(TensorParallelSplit, DividesHeadsAndMlpFeaturesEvenly) {
  const TensorParallelSplit s = tensor_parallel_split({32, 8, 128, 14336}, 2);
  EXPECT_EQ(s.kv_heads, (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(s.mlp, (std::vector<int64_t>{0, 7168, 14336}));
  EXPECT_EQ(s.q_width(1), 16 * 128);
  EXPECT_EQ(s.q_begin(1), 16 * 128);
  EXPECT_EQ(s.kv_begin(1), 4 * 128);
  // SmolLM2: three key/value heads over two GPUs go 2 + 1; 1536 features 768 each.
  const TensorParallelSplit odd = tensor_parallel_split({9, 3, 64, 1536}, 2);
  EXPECT_EQ(odd.kv_heads, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(odd.q_width(0), 6 * 64);
  EXPECT_EQ(odd.mlp, (std::vector<int64_t>{0, 768, 1536}));
  // Widths that are not whole 32-feature blocks divide feature by feature.
  EXPECT_EQ(tensor_parallel_split({9, 3, 64, 1000}, 2).mlp, (std::vector<int64_t>{0, 500, 1000}));
  EXPECT_EQ(tensor_parallel_split({64, 8, 128, 28672}, 4).mlp.back(), 28672);
}

TEST(TensorParallelSplit, RefusesWhatCannotBeDivided) {
  EXPECT_THROW(tensor_parallel_split({8, 2, 64, 1408}, 3), Error);  // 2 kv heads, 3 GPUs
  EXPECT_THROW(tensor_parallel_split({8, 2, 64, 1408}, 1), Error);
  EXPECT_THROW(tensor_parallel_split({9, 2, 64, 1408}, 2), Error);
}

}  // namespace
}  // namespace hearth::test
