// What the split-K decode kernels (16-bit on CUDA cores and on tensor cores, quantized) share:
// how a sequence's cache is cut (tiles of 64 positions, the tiles into at most kDecodeMaxSplits
// splits, a function of the sequence's own length only, so results do not depend on the batch),
// which splits a block takes, the online-softmax update of a step, the merge of a block's lane
// groups or warps through shared memory, the L2 prefetch of a block's splits and the last block's
// merge of the splits' partials.
#pragma once

#include "kernels/common.cuh"

namespace hearth::kernels {

constexpr int kDecodeTile = 64;

// Blocks per (sequence, kv head) of a decode launch (attention_decode.cu): every split a block
// while the batch is small, fewer once its (sequence, kv head) pairs fill the GPU blocks_per_sm
// times.
int decode_blocks_per_head(int heads_of_batch, int blocks_per_sm, bool one_block_per_sm);

// The 16-bit cache's decode on the tensor cores (attention_decode_mma.cu), for head_dim 64 or
// 128 and at most 8 query heads per kv head.
bool attention_decode_tensor_cores_supported(int head_dim, int num_heads, int num_kv_heads);
cudaError_t attention_decode_tensor_cores(const Launch& l, Elem t, const void* q, const void* k,
                                          const void* v, const BatchView& batch,
                                          const KvLayerView& kv, int num_heads, float scale,
                                          void* out, const DecodeScratch& scratch,
                                          const DecodeShape& shape, const DecodeRope& rope);

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

// Element offset of position `pos` of kv head `kv_head` in a 16-bit cache layer, through the
// sequence's page table.
__device__ __forceinline__ int64_t cache_offset(const KvLayerView& kv, const int32_t* page_table,
                                                int kv_head, int pos, int D) {
  const int64_t page = page_table[pos / kv.page_size];
  return page * kv.page_stride + (int64_t(kv_head) * kv.page_size + pos % kv.page_size) * D;
}

// The splits of its (sequence, kv head) a decode block takes: blockIdx.x, then every gridDim.x-th
// after it. The block with the last split also stores the step's new key and value.
struct DecodeBlockSplits {
  int kv_len;        // the sequence's positions once this step's is stored
  int used;          // the sequence's splits
  int first;         // the block's first split
  int stride;        // from one of the block's splits to the next
  int newest;        // the new position
  bool owns_newest;  // the block has the last split
};
// False when block (blockIdx.x) has nothing to do: an empty sequence, or more blocks than splits.
__device__ __forceinline__ bool decode_block_splits(const BatchView& batch, int seq,
                                                    DecodeBlockSplits& b) {
  b.kv_len = batch.seq_kv_len[seq];
  if (b.kv_len <= 0) return false;
  b.used = split_of(b.kv_len, 0).used;
  b.first = static_cast<int>(blockIdx.x);
  b.stride = static_cast<int>(gridDim.x);
  if (b.first >= b.used) return false;
  b.newest = b.kv_len - 1;
  b.owns_newest = (b.used - 1) % b.stride == b.first;
  return true;
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

// Tid 0 asks L2 for the keys and values of a block's splits (first_split, then every
// stride-th), all but the first `skip` positions of the first (loaded by then) and the newest
// (not in the cache yet).
template <class T>
__device__ __forceinline__ void prefetch_splits_l2(const T* cache, const KvLayerView& kv,
                                                   const int32_t* page_table, int kv_head,
                                                   int kv_len, int first_split, int split_stride,
                                                   int D, int skip) {
  const int used = split_of(kv_len, 0).used;
  const int newest = kv_len - 1;
  for (int split = first_split; split < used; split += split_stride) {
    const DecodeSplit sp = split_of(kv_len, split);
    const int end = min(sp.end, newest);
    for (int pos = sp.begin + (split == first_split ? skip : 0); pos < end;) {
      const int run = min(kv.page_size - pos % kv.page_size, end - pos);
      const T* start = cache + cache_offset(kv, page_table, kv_head, pos, D);
      prefetch_l2(start, static_cast<unsigned>(run * D * sizeof(T)));
      prefetch_l2(start + kv.v_offset, static_cast<unsigned>(run * D * sizeof(T)));
      pos += run;
    }
  }
}

// The end of a decode block that stored split partials: the last of the `arriving_blocks` blocks
// of a (sequence, kv head) to arrive adds its splits' partials in split order and writes the heads'
// outputs (row `row` of out), then resets the counter for the next launch. Each thread's values of
// the first kEarly splits (registers) and the splits' maxima and sums (shared memory) are all
// requested before any is used; each head's split weights are then computed once. Splits beyond
// kEarly (long sequences) are read in batches of independent loads afterwards.
template <class T, int GM, int D, int kThreads>
__device__ __forceinline__ void merge_split_partials(
    const float* partials, int32_t* counters, int seq, int num_heads, int num_kv_heads, int kv_head,
    int group, int kv_len, int arriving_blocks, int row, int64_t q_cols, T* out,
    float (&sm_split_max)[kDecodeMaxSplits][GM], float (&sm_split_sum)[kDecodeMaxSplits][GM]) {
  const int tid = threadIdx.x;
  const int work = group * D;
  const int64_t slot_floats = D + 2;
  const DecodeSplit sp = split_of(kv_len, 0);  // sp.used: the splits the merge adds
  int32_t* counter = counters + int64_t(seq) * num_kv_heads + kv_head;
  if (!last_to_arrive(counter, arriving_blocks)) return;
  constexpr int kElems = (GM * D + kThreads - 1) / kThreads;  // outputs per thread
  constexpr int kEarly = 64 / kElems < kDecodeMaxSplits ? 64 / kElems : kDecodeMaxSplits;
  const float* head_slots = partials + (int64_t(seq) * num_heads + int64_t(kv_head) * group) *
                                           kDecodeMaxSplits * slot_floats;
  float early[kElems][kEarly];
#pragma unroll
  for (int k = 0; k < kElems; ++k) {
    const int e = tid + k * kThreads;
    const float* slots = head_slots + int64_t(e / D) * kDecodeMaxSplits * slot_floats + e % D;
#pragma unroll
    for (int u = 0; u < kEarly; ++u) {
      early[k][u] = e < work && u < sp.used ? __ldcg(slots + u * slot_floats) : 0.0f;
    }
  }
  for (int i = tid; i < sp.used * group; i += kThreads) {
    const int s = i / group;
    const int h = i % group;
    const float* slot = head_slots + (int64_t(h) * kDecodeMaxSplits + s) * slot_floats;
    sm_split_max[s][h] = __ldcg(slot + D);
    sm_split_sum[s][h] = __ldcg(slot + D + 1);
  }
  __syncthreads();
  if (tid < group) {
    const int h = tid;
    float mx = -INFINITY;
    for (int s = 0; s < sp.used; ++s) mx = fmaxf(mx, sm_split_max[s][h]);
    float sum = 0.0f;
    for (int s = 0; s < sp.used; ++s) {
      const float w = exp2f(sm_split_max[s][h] - mx);
      sm_split_max[s][h] = w;  // now the split's weight
      sum += sm_split_sum[s][h] * w;
    }
    sm_split_sum[0][h] = sum;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kElems; ++k) {
    const int e = tid + k * kThreads;
    if (e >= work) break;
    const int h = e / D;
    const int d = e % D;
    float a = 0.0f;
#pragma unroll
    for (int u = 0; u < kEarly; ++u) {
      if (u < sp.used) a += early[k][u] * sm_split_max[u][h];
    }
    const float* slots = head_slots + int64_t(h) * kDecodeMaxSplits * slot_floats + d;
    for (int s0 = kEarly; s0 < sp.used; s0 += 8) {
      float v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        v[u] = s0 + u < sp.used ? __ldcg(slots + (s0 + u) * slot_floats) : 0.0f;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        if (s0 + u < sp.used) a += v[u] * sm_split_max[s0 + u][h];
      }
    }
    const int head = kv_head * group + h;
    out[int64_t(row) * q_cols + int64_t(head) * D + d] = from_f<T>(a / sm_split_sum[0][h]);
  }
  if (tid == 0) *counter = 0;
}

}  // namespace hearth::kernels
