// How split-K decode attention cuts a sequence's cache: tiles of 64 positions, the tiles into at
// most kDecodeMaxSplits splits, a function of the sequence's own length only (so results do not
// depend on the batch). Shared by the 16-bit and the quantized decode kernels.
#pragma once

#include "kernels/common.cuh"

namespace hearth::kernels {

constexpr int kDecodeTile = 64;

struct DecodeSplit {
  int used;   // splits this sequence uses
  int begin;  // first position of this split
  int end;    // one past its last position
};

__device__ __forceinline__ DecodeSplit split_of(int kv_len, int split) {
  const int tiles = (kv_len + kDecodeTile - 1) / kDecodeTile;
  const int splits = min(kDecodeMaxSplits, tiles);
  const int per_split = (tiles + splits - 1) / splits;
  DecodeSplit s;
  s.used = (tiles + per_split - 1) / per_split;
  s.begin = split * per_split * kDecodeTile;
  s.end = min(kv_len, (split + 1) * per_split * kDecodeTile);
  return s;
}

}  // namespace hearth::kernels
