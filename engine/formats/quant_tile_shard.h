// Parts of a quantized layer's tile layout, for tensor parallelism: a column shard keeps some of
// the 32-output blocks (the outputs one device computes), a row shard the chunks that multiply
// some input features (a device's share of a sum that an all-reduce completes). Both are cut from
// the built layout, so every format with a tile layout (EXL2, GPTQ, GGUF) shards alike.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/quantized_weight.h"
#include "engine/formats/quant_tile_layout.h"

namespace hearth {

// Outputs [n_begin, n_end) of `layout`; n_begin must be a multiple of 32 (a block boundary) and
// n_end one too unless it is the layout's last output. Throws Error(kInvalidArgument) otherwise.
QuantTileLayout slice_tile_columns(const QuantTileLayout& layout, int64_t n_begin, int64_t n_end);

// Outputs `columns` of `layout` in that order (columns[i] becomes output i), any of them: each
// output's codes are moved to its new place in the tiles with its scales, so the values stay
// exact. Tensor parallelism uses it to give a device the MLP features that down's stored rows
// group together. Work is spread over `threads` threads (<= 0: one per hardware thread).
QuantTileLayout gather_tile_columns(const QuantTileLayout& layout, std::span<const int64_t> columns,
                                    int threads = 0);

// The share of `layout` that multiplies input features [k_begin, k_end), as a layout of
// k_end − k_begin inputs (feature k_begin becomes 0): every chunk holding a row of the range, with
// its other rows made padding. Summing the shards of a partition of the inputs gives the whole
// product. Where stored rows follow the inputs (no act-order) the shards share no chunk; an
// act-order layout's rows are scattered, so its shards overlap and each is nearly whole.
QuantTileLayout slice_tile_rows(const QuantTileLayout& layout, int64_t k_begin, int64_t k_end);
// The same for any input features, features[i] becoming input i. Listed in the layout's stored
// row order (its row_src without padding), a share takes whole consecutive chunks and its rows
// are in order: act-order shards that do not overlap.
QuantTileLayout slice_tile_rows(const QuantTileLayout& layout, std::span<const int64_t> features);

// The input features in the order the layout stores their rows (row_src without padding).
std::vector<int64_t> stored_feature_order(const QuantTileLayout& layout);

// A layout that is already built (a shard), offered where a QuantizedWeight is taken: the tile
// layout builder returns it as it is, and dequantize_rows() decodes it as the kernels do.
class TileLayoutWeight final : public QuantizedWeight {
 public:
  explicit TileLayoutWeight(QuantTileLayout layout, double bits_per_weight)
      : layout_(std::move(layout)), bits_per_weight_(bits_per_weight) {}
  std::string_view format() const override { return "tile"; }
  int64_t in_features() const override { return layout_.in_features; }
  int64_t out_features() const override { return layout_.out_features; }
  double bits_per_weight() const override { return bits_per_weight_; }
  void dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const override;
  const QuantTileLayout& layout() const { return layout_; }

 private:
  QuantTileLayout layout_;
  double bits_per_weight_;
};

}  // namespace hearth
