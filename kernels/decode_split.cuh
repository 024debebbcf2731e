// What the 16-bit and the quantized split-K decode kernels share: how a sequence's cache is cut
// (tiles of 64 positions, the tiles into at most kDecodeMaxSplits splits, a function of the
// sequence's own length only, so results do not depend on the batch), the online-softmax update
// of a step, and the merge of a block's lane groups through shared memory.
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

// One step's online-softmax update for GM heads: sc holds the step's kLoads scores of this lane
// group (positions base + i·groups + lg; those at or past `end` are clamped duplicates and get
// weight 0). Turns sc into the positions' weights, updates the running max m and sum l, and
// returns in corr what the accumulators must be multiplied by.
template <int GM, int kLoads>
__device__ __forceinline__ void online_softmax_step(float (&sc)[GM][kLoads], float (&m)[GM],
                                                    float (&l)[GM], float (&corr)[GM], int base,
                                                    int groups, int lg, int end) {
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    float mx = m[h];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      if (base + i * groups + lg >= end) sc[h][i] = -INFINITY;  // clamped duplicates
      mx = fmaxf(mx, sc[h][i]);
    }
    const float ref = mx == -INFINITY ? 0.0f : mx;  // nothing seen yet: weights stay 0
    corr[h] = exp2f(m[h] - ref);
    m[h] = mx;
    float step_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      sc[h][i] = exp2f(sc[h][i] - ref);  // now the position's weight
      step_sum += sc[h][i];
    }
    l[h] = l[h] * corr[h] + step_sum;
  }
}

// A split's result for head `head`, dim d of a sequence: the weighted value, and with dim 0 the
// split's max and sum, in the slot (D + 2 floats per split) that the sequence's last block merges.
__device__ __forceinline__ void store_split_partial(float* partials, int seq, int num_heads,
                                                    int head, int split, int D, int d, float mx,
                                                    float sum, float value) {
  float* slot = partials + ((int64_t(seq) * num_heads + head) * kDecodeMaxSplits + split) * (D + 2);
  slot[d] = value;
  if (d == 0) {
    slot[D] = mx;
    slot[D + 1] = sum;
  }
}

// A block's lane groups hand their running max, sum and 8 accumulated dims per head to shared
// memory; then, for head h and dim d, merged() gives the block's max, sum and weighted value.
template <int GM, int D, int kGroups>
struct LaneGroupMerge {
  float max[kGroups][GM];
  float sum[kGroups][GM];
  float acc[kGroups][GM][D];

  __device__ __forceinline__ void store(const float (&m)[GM], const float (&l)[GM],
                                        const float (&a)[GM][8], int group, int lg, int gl) {
#pragma unroll
    for (int h = 0; h < GM; ++h) {
      if (h >= group) continue;
      if (gl == 0) {
        max[lg][h] = m[h];
        sum[lg][h] = l[h];
      }
#pragma unroll
      for (int d = 0; d < 8; ++d) acc[lg][h][gl * 8 + d] = a[h][d];
    }
  }

  struct Merged {
    float max, sum, value;
  };
  __device__ __forceinline__ Merged merged(int h, int d) const {
    float mx = -INFINITY;
    for (int i = 0; i < kGroups; ++i) mx = fmaxf(mx, max[i][h]);
    float s = 0.0f, a = 0.0f;
    for (int i = 0; i < kGroups; ++i) {
      const float w = exp2f(max[i][h] - mx);  // 0 for groups that saw nothing
      s += sum[i][h] * w;
      a += acc[i][h][d] * w;
    }
    return {mx, s, a};
  }
};

}  // namespace hearth::kernels
