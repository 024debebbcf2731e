#include "engine/formats/quant_tile_shard.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
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

// The pair of a lane that holds rows 2q, 2q + 1 (of its row set) of its output slot j.
int slot_pair(int j, int q) {
  return ((j >> 1) << 3) | (q << 1) | (j & 1);
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

QuantTileLayout gather_tile_columns(const QuantTileLayout& L, std::span<const int64_t> columns,
                                    int threads) {
  for (int64_t n : columns) {
    if (n < 0 || n >= L.out_features) {
      fail(ErrorCode::kInvalidArgument, L.name + ": output " + std::to_string(n) +
                                            " is not one of its " + std::to_string(L.out_features));
    }
  }
  if (columns.empty()) fail(ErrorCode::kInvalidArgument, L.name + ": no outputs to gather");
  QuantTileLayout S = L;  // chunk facts, row order and per-group values stay as they are
  S.out_features = static_cast<int64_t>(columns.size());
  S.blocks = (S.out_features + kOut - 1) / kOut;
  S.qweight.assign(static_cast<size_t>(S.blocks * L.lines * 32), 0);
  // Per-output records, [blocks][per_block]: an output i + 8j of a block is entry i·4 + j of each
  // group's (or super-block's) 32, or nibble j of entry i of EXL2's 8 scale codes.
  auto fresh = [&](auto& v, const auto& from) {
    v.assign(from.empty() ? 0 : from.size() / static_cast<size_t>(L.blocks) * S.blocks, 0);
  };
  fresh(S.scale_codes, L.scale_codes);
  fresh(S.scales, L.scales);
  fresh(S.zeros, L.zeros);
  fresh(S.super_records, L.super_records);
  fresh(S.sub_records, L.sub_records);
  auto move_records = [&](auto& to, const auto& from, int64_t per_block, int64_t sb, int si,
                          int64_t db, int di) {
    if (from.empty()) return;
    for (int64_t r = 0; r < per_block; ++r) {
      to[static_cast<size_t>((db * per_block + r) * 32 + (di % 8) * 4 + di / 8)] =
          from[static_cast<size_t>((sb * per_block + r) * 32 + (si % 8) * 4 + si / 8)];
    }
  };

  ThreadPool pool(threads);
  pool.parallel_for(S.blocks, 1, [&](int64_t b0, int64_t b1) {
    uint32_t codes[32][2 * qtile::kPairs], words[8], lane_codes[2 * qtile::kPairs];
    for (int64_t db = b0; db < b1; ++db) {
      const int outs = static_cast<int>(std::min<int64_t>(kOut, S.out_features - db * kOut));
      for (int64_t c = 0; c < L.chunks; ++c) {
        const int width = qtile::chunk_width(L.chunk_info[static_cast<size_t>(c)]);
        const int bits = qtile::width_bits(width);
        const int64_t line = L.chunk_line[static_cast<size_t>(c)];
        std::fill(&codes[0][0], &codes[0][0] + 32 * 2 * qtile::kPairs, 0u);
        for (int di = 0; di < outs; ++di) {
          const int64_t src = columns[static_cast<size_t>(db * kOut + di)];
          const int64_t sb = src / kOut;
          const int si = static_cast<int>(src % kOut);
          // Output i + 8j sits in slot j of lanes 4i .. 4i + 3 (one per row quarter t).
          for (int t = 0; t < 4; ++t) {
            const int lane = 4 * (si % 8) + t;
            for (int w = 0; w < bits; ++w) {
              words[w] = L.qweight[static_cast<size_t>((sb * L.lines + line + w) * 32 + lane)];
            }
            qtile::decode_lane_codes(width, words, lane_codes);
            uint32_t* to = codes[4 * (di % 8) + t];
            for (int q = 0; q < 4; ++q) {
              const int ps = slot_pair(si / 8, q), pd = slot_pair(di / 8, q);
              to[2 * pd] = lane_codes[2 * ps];
              to[2 * pd + 1] = lane_codes[2 * ps + 1];
            }
          }
        }
        for (int lane = 0; lane < 32; ++lane) {
          qtile::encode_lane_bits(width, codes[lane], words);
          for (int w = 0; w < bits; ++w) {
            S.qweight[static_cast<size_t>((db * L.lines + line + w) * 32 + lane)] = words[w];
          }
        }
      }
      for (int di = 0; di < outs; ++di) {
        const int64_t src = columns[static_cast<size_t>(db * kOut + di)];
        const int64_t sb = src / kOut;
        const int si = static_cast<int>(src % kOut);
        for (int64_t g = 0; g < L.groups && !L.scale_codes.empty(); ++g) {
          const uint16_t nib =
              (L.scale_codes[static_cast<size_t>((sb * L.groups + g) * 8 + si % 8)] >>
               (4 * (si / 8))) &
              15u;
          S.scale_codes[static_cast<size_t>((db * L.groups + g) * 8 + di % 8)] |=
              static_cast<uint16_t>(nib << (4 * (di / 8)));
        }
        move_records(S.scales, L.scales, L.groups, sb, si, db, di);
        move_records(S.zeros, L.zeros, L.groups, sb, si, db, di);
        move_records(S.sub_records, L.sub_records, L.groups, sb, si, db, di);
        move_records(S.super_records, L.super_records, L.supers, sb, si, db, di);
      }
    }
  });
  return S;
}

QuantTileLayout slice_tile_rows(const QuantTileLayout& L, int64_t k_begin, int64_t k_end) {
  if (k_begin < 0 || k_end > L.in_features || k_begin >= k_end) {
    fail(ErrorCode::kInvalidArgument, L.name + ": inputs [" + std::to_string(k_begin) + ", " +
                                          std::to_string(k_end) + ") are not a range of its " +
                                          std::to_string(L.in_features));
  }
  std::vector<int64_t> features(static_cast<size_t>(k_end - k_begin));
  for (size_t i = 0; i < features.size(); ++i) features[i] = k_begin + static_cast<int64_t>(i);
  return slice_tile_rows(L, features);
}

QuantTileLayout slice_tile_rows(const QuantTileLayout& L, std::span<const int64_t> features) {
  // local[f]: the input number feature f gets in the shard, −1 where it is not in it.
  std::vector<int32_t> local(static_cast<size_t>(L.in_features), -1);
  for (size_t i = 0; i < features.size(); ++i) {
    const int64_t f = features[i];
    if (f < 0 || f >= L.in_features || local[static_cast<size_t>(f)] >= 0) {
      fail(ErrorCode::kInvalidArgument, L.name + ": input " + std::to_string(f) +
                                            " is out of range or listed twice in a row shard");
    }
    local[static_cast<size_t>(f)] = static_cast<int32_t>(i);
  }
  if (features.empty()) fail(ErrorCode::kInvalidArgument, L.name + ": a row shard without inputs");
  auto local_of = [&](int32_t src) { return src < 0 ? -1 : local[static_cast<size_t>(src)]; };
  std::vector<int64_t> kept;
  for (int64_t c = 0; c < L.chunks; ++c) {
    for (int64_t r = 0; r < kRows; ++r) {
      if (local_of(L.row_src[static_cast<size_t>(c * kRows + r)]) >= 0) {
        kept.push_back(c);
        break;
      }
    }
  }
  QuantTileLayout S = L;
  S.in_features = static_cast<int64_t>(features.size());
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
      S.row_src.push_back(local_of(L.row_src[static_cast<size_t>(c * kRows + r)]));
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

std::vector<int64_t> stored_feature_order(const QuantTileLayout& L) {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(L.in_features));
  for (int32_t src : L.row_src) {
    if (src >= 0) order.push_back(src);
  }
  return order;
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
