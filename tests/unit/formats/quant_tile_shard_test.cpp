// Tensor-parallel shards of the tile layout, emulated on the CPU: column shards side by side are
// the whole layer's outputs bit for bit, and so are gathered columns in any order, for every
// width and format; row shards over a partition of the inputs sum to the whole product
// (in-order layouts without sharing a chunk, act-order ones overlapping unless the partition
// follows the stored row order); a shard dequantizes to its part of the whole matrix; bad ranges
// are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/backend/tensor_parallel_split.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/core/error.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quant_tile_shard.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/gguf_block_weight.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth::test {
namespace {

std::shared_ptr<const QuantizedWeight> exl2_layer(int64_t k, int64_t n, double bpw = 4.0) {
  std::map<std::string, HostTensor, std::less<>> t;
  make_exl2_layer(t, "l", k, n, exl2_recipe_for_bpw(bpw), 11);
  MemoryTensorSource src(std::move(t));
  QuantizedLinearOptions o;
  o.out_features = n;
  return load_quantized_linear(src, "l", o);
}

std::shared_ptr<const QuantizedWeight> gptq_layer(int64_t k, int64_t n, bool act_order,
                                                  int bits = 4, bool sym = true) {
  std::map<std::string, HostTensor, std::less<>> t;
  const GptqRecipe r{bits, 64, act_order, sym, false};
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

TEST(QuantTileShard, GatheredColumnsAreThoseOutputsBitForBit) {
  std::vector<std::shared_ptr<const QuantizedWeight>> layers;
  // EXL2 at these rates mixes every width, 2 to 8 bits; GPTQ symmetric and with zeros.
  for (double bpw : {2.5, 3.5, 4.5, 5.5, 6.5, 8.0}) layers.push_back(exl2_layer(256, 200, bpw));
  layers.push_back(gptq_layer(256, 192, true, 3, false));
  layers.push_back(gptq_layer(256, 192, true, 8, true));
  // GGUF: a minimum per block, sub-scales with minimums, and halves; IQ4's codebook indices.
  std::vector<RandomGguf> files;
  files.reserve(6);
  for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ2_K,
                        GgmlType::kIQ4_NL, GgmlType::kIQ4_XS}) {
    files.emplace_back(type, 256, 160, 7);
    layers.push_back(std::make_shared<GgufBlockWeight>(files.back().file, files.back().tensor(),
                                                       std::vector<int32_t>{}));
  }
  std::mt19937 rng(5);
  for (const auto& w : layers) {
    const QuantTileLayout L = build_quant_tile_layout(*w, 1);
    const int64_t R = 2, N = L.out_features;
    const std::vector<float> x = random_x(R, L.in_features);
    const std::vector<float> whole = product(L, x, R);
    // A shuffled subset that is not a whole number of 32-output blocks.
    std::vector<int64_t> columns(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) columns[static_cast<size_t>(n)] = n;
    std::shuffle(columns.begin(), columns.end(), rng);
    columns.resize(static_cast<size_t>(N / 2 + 5));
    const QuantTileLayout G = gather_tile_columns(L, columns, 2);
    ASSERT_EQ(G.out_features, static_cast<int64_t>(columns.size()));
    const std::vector<float> y = product(G, x, R);
    for (int64_t r = 0; r < R; ++r) {
      for (size_t i = 0; i < columns.size(); ++i) {
        ASSERT_EQ(y[r * G.out_features + i], whole[r * N + columns[i]])
            << w->format() << " row " << r << " output " << columns[i];
      }
    }
  }
}

TEST(QuantTileShard, RowShardsInStoredOrderTakeWholeChunks) {
  for (const auto& w : {exl2_layer(512, 96), gptq_layer(512, 64, true)}) {
    const QuantTileLayout L = build_quant_tile_layout(*w, 1);
    const int64_t R = 2, K = L.in_features, N = L.out_features;
    const std::vector<int64_t> order = stored_feature_order(L);
    ASSERT_EQ(static_cast<int64_t>(order.size()), K);
    ASSERT_FALSE(std::is_sorted(order.begin(), order.end())) << "an act-order layout";
    const std::vector<int64_t> first(order.begin(), order.begin() + 256),
        second(order.begin() + 256, order.end());
    const QuantTileLayout a = slice_tile_rows(L, first), b = slice_tile_rows(L, second);
    EXPECT_EQ(a.chunks + b.chunks, L.chunks) << "no chunk in both shards";
    EXPECT_TRUE(a.rows_in_order && b.rows_in_order);
    // Each shard multiplies its features in the listed order.
    const std::vector<float> x = random_x(R, K);
    const std::vector<float> whole = product(L, x, R);
    std::vector<float> xa, xb;
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t f : first) xa.push_back(x[r * K + f]);
      for (int64_t f : second) xb.push_back(x[r * K + f]);
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
  const std::vector<int64_t> twice{3, 3}, outside{300};
  EXPECT_THROW(slice_tile_rows(L, twice), Error);
  EXPECT_THROW(slice_tile_rows(L, outside), Error);
  EXPECT_THROW(gather_tile_columns(L, std::vector<int64_t>{200}), Error);
  EXPECT_THROW(gather_tile_columns(L, std::vector<int64_t>{}), Error);
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
