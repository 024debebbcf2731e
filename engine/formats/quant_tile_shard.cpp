#include "engine/formats/quant_tile_shard.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/quant_tile_codec.cuh"

namespace hearth {
namespace {

constexpr int64_t kRows = qtile::kChunkRows;
constexpr int64_t kOut = qtile::kTileOutputs;

// Copies the records of blocks [b0, b1) out of an array laid out [blocks][per_block].
template <class T>
std::vector<T> blocks_of(const std::vector<T>& all, int64_t blocks, int64_t b0, int64_t b1) {
  if (all.empty()) return {};
  const auto per_block = static_cast<int64_t>(all.size()) / blocks;
  return {all.begin() + b0 * per_block, all.begin() + b1 * per_block};
}

}  // namespace

QuantTileLayout slice_tile_columns(const QuantTileLayout& L, int64_t n_begin, int64_t n_end) {
  if (n_begin < 0 || n_end > L.out_features || n_begin >= n_end || n_begin % kOut != 0 ||
      (n_end % kOut != 0 && n_end != L.out_features)) {
    fail(ErrorCode::kInvalidArgument, L.name + ": outputs [" + std::to_string(n_begin) + ", " +
                                          std::to_string(n_end) +
                                          ") do not fall on 32-output blocks");
  }
  const int64_t b0 = n_begin / kOut, b1 = (n_end + kOut - 1) / kOut;
  QuantTileLayout S = L;  // chunk facts, row order and per-group values stay as they are
  S.out_features = n_end - n_begin;
  S.blocks = b1 - b0;
  S.qweight = blocks_of(L.qweight, L.blocks, b0, b1);
  S.scale_codes = blocks_of(L.scale_codes, L.blocks, b0, b1);
  S.scales = blocks_of(L.scales, L.blocks, b0, b1);
  S.zeros = blocks_of(L.zeros, L.blocks, b0, b1);
  S.super_records = blocks_of(L.super_records, L.blocks, b0, b1);
  S.sub_records = blocks_of(L.sub_records, L.blocks, b0, b1);
  return S;
}

QuantTileLayout slice_tile_rows(const QuantTileLayout& L, int64_t k_begin, int64_t k_end) {
  if (k_begin < 0 || k_end > L.in_features || k_begin >= k_end) {
    fail(ErrorCode::kInvalidArgument, L.name + ": inputs [" + std::to_string(k_begin) + ", " +
                                          std::to_string(k_end) + ") are not a range of its " +
                                          std::to_string(L.in_features));
  }
  std::vector<int64_t> kept;
  for (int64_t c = 0; c < L.chunks; ++c) {
    for (int64_t r = 0; r < kRows; ++r) {
      const int32_t src = L.row_src[static_cast<size_t>(c * kRows + r)];
      if (src >= k_begin && src < k_end) {
        kept.push_back(c);
        break;
      }
    }
  }
  QuantTileLayout S = L;
  S.in_features = k_end - k_begin;
  S.chunks = static_cast<int64_t>(kept.size());
  S.chunk_info.clear();
  S.row_src.clear();
  S.chunk_line.assign(1, 0);
  S.bits_mask = 0;
  for (int64_t c : kept) {
    const uint32_t info = L.chunk_info[static_cast<size_t>(c)];
    const int bits = qtile::chunk_bits(info);
    S.chunk_info.push_back(info);
    S.chunk_line.push_back(S.chunk_line.back() + bits);
    S.bits_mask |= 1u << (bits - 1);
    for (int64_t r = 0; r < kRows; ++r) {
      const int32_t src = L.row_src[static_cast<size_t>(c * kRows + r)];
      S.row_src.push_back(src >= k_begin && src < k_end ? static_cast<int32_t>(src - k_begin) : -1);
    }
  }
  S.lines = S.chunk_line.back();
  S.qweight.assign(static_cast<size_t>(S.blocks * S.lines * 32), 0);
  for (int64_t nb = 0; nb < S.blocks; ++nb) {
    for (size_t i = 0; i < kept.size(); ++i) {
      const int64_t c = kept[i];
      const int64_t bits =
          L.chunk_line[static_cast<size_t>(c + 1)] - L.chunk_line[static_cast<size_t>(c)];
      const auto from =
          L.qweight.begin() + (nb * L.lines + L.chunk_line[static_cast<size_t>(c)]) * 32;
      std::copy(from, from + bits * 32, S.qweight.begin() + (nb * S.lines + S.chunk_line[i]) * 32);
    }
  }
  S.rows_in_order = true;
  for (int64_t s = 0; s < S.chunks * kRows; ++s) {
    const int32_t want = s < S.in_features ? static_cast<int32_t>(s) : -1;
    if (S.row_src[static_cast<size_t>(s)] != want) S.rows_in_order = false;
  }
  return S;
}

void TileLayoutWeight::dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const {
  HEARTH_CHECK(n_begin >= 0 && n_begin <= n_end && n_end <= layout_.out_features,
               "dequantize_rows: rows out of range");
  // W[n][k] is the product of the one-hot row e_k with the layer, column n.
  const int64_t K = layout_.in_features, N = layout_.out_features;
  constexpr int64_t kStep = 64;
  std::vector<float> x, y;
  for (int64_t k0 = 0; k0 < K; k0 += kStep) {
    const int64_t rows = std::min(kStep, K - k0);
    x.assign(static_cast<size_t>(rows * K), 0.0f);
    for (int64_t r = 0; r < rows; ++r) x[static_cast<size_t>(r * K + k0 + r)] = 1.0f;
    y.resize(static_cast<size_t>(rows * N));
    emulate_quant_tile_gemm(layout_, x.data(), rows, y.data());
    for (int64_t n = n_begin; n < n_end; ++n) {
      for (int64_t r = 0; r < rows; ++r) {
        out[(n - n_begin) * K + k0 + r] = y[static_cast<size_t>(r * N + n)];
      }
    }
  }
}

}  // namespace hearth
