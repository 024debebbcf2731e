// What the two prefill attention kernels share (kernels/attention_prefill.cu on mma.sync,
// kernels/attention_prefill_wgmma.cu on Hopper's warpgroup MMA): a block's rows, q staged in
// shared memory, one 16-row tile's step of the online softmax over a key tile, and its output.
//
// A block's rows are (query, head) pairs of one kv head's group of query heads, the heads of a
// query side by side: row ρ of the sequence is query ρ / G of head kv_head · G + ρ % G (G = heads
// per kv head). Both kernels hold a 16-row tile's scores and outputs in mma.sync's C layout per
// warp (which is also wgmma's accumulator layout): lane (g, t) = (lane / 4, lane % 4) has rows g
// and g + 8, columns 8j + 2t and 8j + 2t + 1 of each 8-column block j.
#pragma once

#include <cfloat>

#include "kernels/common.cuh"

namespace hearth::kernels::prefill {

constexpr int kBlockN = 64;  // keys per tile

// 2^x by the special-function unit alone. exp2f adds a rescaling for results below 2^-126, which
// here only flushes to zero weights that change no fp16 P and no row sum (each row's sum holds
// its maximum's weight, 1).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Shared-memory rows of D elements with 16-byte chunk c of row r stored at c ^ (r % 8), so that
// ldmatrix reads are free of bank conflicts.
template <int D>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// The kernels' grid is (kv heads, row blocks, sequences): the kv heads vary fastest, so the GPU
// starts every head's heaviest row block before any lighter one (a causal sequence's last rows see
// the most keys) and the grid's tail is short blocks. (With the row blocks fastest, all of a few
// heads' blocks, light ones too, went first and the other heads' heaviest blocks formed a second
// wave.) A block's part of its sequence: kBlockM rows from r0.
struct BlockRows {
  int q_begin = 0;    // the sequence's first row in q and out
  int q_rows = 0;     // its (query, head) rows of this kv head
  int r0 = 0;         // the block's first row
  int kv_len = 0;     // cached positions, this step's included
  int start_pos = 0;  // position of the sequence's first new token
  int n_tiles = 0;    // key tiles the block's last row reaches
  __device__ bool empty() const { return r0 >= q_rows; }
};

template <int kBlockM>
__device__ __forceinline__ BlockRows block_rows(const BatchView& batch, int seq, int group) {
  BlockRows b;
  b.q_begin = batch.seq_q_start[seq];
  const int q_len = batch.seq_q_start[seq + 1] - b.q_begin;
  b.q_rows = q_len * group;
  b.r0 = (gridDim.y - 1 - blockIdx.y) * kBlockM;
  if (b.empty()) return b;
  b.kv_len = batch.seq_kv_len[seq];
  b.start_pos = b.kv_len - q_len;
  const int kv_end = min(b.kv_len, b.start_pos + (min(b.r0 + kBlockM, b.q_rows) - 1) / group + 1);
  b.n_tiles = (kv_end + kBlockN - 1) / kBlockN;
  return b;
}

// Row ρ's q (and output) at token q_begin + ρ / G, column (kv_head · G + ρ % G) · D, so
// consecutive rows read consecutive heads of one token.
template <int D>
__device__ __forceinline__ int64_t row_offset(const BlockRows& b, int rho, int kv_head, int group,
                                              int num_heads) {
  return int64_t(b.q_begin + rho / group) * (int64_t(num_heads) * D) +
         int64_t(kv_head * group + rho % group) * D;
}

// Issues the copies of the block's kBlockM rows of q into s_q (swizzled; rows past the sequence
// zero-filled). The caller commits them.
template <class T, int D, int kBlockM, int kThreads>
__device__ __forceinline__ void stage_q(T* s_q, const T* q, const BlockRows& b, int kv_head,
                                        int group, int num_heads) {
  constexpr int kChunks = D / 8;
  for (int c = threadIdx.x; c < kBlockM * kChunks; c += kThreads) {
    const int row = c / kChunks;
    const int ch = c % kChunks;
    const bool valid = b.r0 + row < b.q_rows;
    const T* src = valid ? q + row_offset<D>(b, b.r0 + row, kv_head, group, num_heads) + ch * 8 : q;
    cp_async16(s_q + swizzle<D>(row, ch), src, valid);
  }
}

// Issues the copies of one cache position's 16-byte chunk `chunk` of this kv head's key and value
// (a 16-bit cache; the position is slot `slot` of the sequence's page_index-th page) to dk and dv;
// past the sequence (valid false) they are zero-filled and nothing is read.
template <class T, int D>
__device__ __forceinline__ void copy_kv_chunk(T* dk, T* dv, const T* cache, const KvLayerView& kv,
                                              const int32_t* page_table, int page_index,
                                              int64_t head_offset, int slot, int chunk,
                                              bool valid) {
  const T* src_k = cache;
  const T* src_v = cache;
  if (valid) {
    const int64_t offset =
        page_table[page_index] * kv.page_stride + (head_offset + slot) * D + chunk * 8;
    src_k = cache + offset;
    src_v = cache + kv.v_offset + offset;
  }
  cp_async16(dk, src_k, valid);
  cp_async16(dv, src_v, valid);
}

// Moves a position `step` places on through its sequence's pages: one division for the first
// position of a tile, then additions.
__device__ __forceinline__ void advance_slot(int& page_index, int& slot, int step, int page_size) {
  slot += step;
  while (slot >= page_size) {
    slot -= page_size;
    ++page_index;
  }
}

// q's A fragments for k columns 16·kk .. 16·kk + 15 of the 16 rows from `row` of s_q.
template <int D, class T>
__device__ __forceinline__ void load_q(uint32_t frag[4], const T* s_q, int row, int kk) {
  const int lane = threadIdx.x & 31;
  ldmatrix_x4(frag, s_q + swizzle<D>(row + (lane & 15), 2 * kk + (lane >> 4)));
}

// The online softmax of one 16-row tile (the thread's rows g and g + 8) over a key tile, in base 2.
struct TileSoftmax {
  float row_max[2];
  float row_sum[2];
  int q_pos[2];    // positions of rows g and g + 8
  int tile_first;  // position of the tile's first row

  // `row`: the tile's first row in the sequence.
  __device__ __forceinline__ void start(const BlockRows& b, int row, int group) {
    const int g = (threadIdx.x & 31) >> 2;
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.0f;
    q_pos[0] = b.start_pos + (row + g) / group;
    q_pos[1] = b.start_pos + (row + g + 8) / group;
    tile_first = b.start_pos + row / group;
  }

  // The softmax of a key tile: masks the scores s of keys key0 .. key0 + 63 (causal, and keys
  // past kv_len) into a copy (s itself is only read, so it may be the accumulator of an MMA still
  // in flight), takes the online softmax over the unscaled scores (the scale is positive, so their
  // maximum is the scaled scores' too; each weight is 2^(s·scale − max·scale), one fma before the
  // ex2), and leaves P in T as the A fragments of P·V and the factor o must be scaled by before
  // P·V is added to it (rescale).
  template <class T>
  __device__ __forceinline__ void weigh(const float (&s)[8][4], uint32_t (&p)[4][4],
                                        float (&corr)[2], int key0, int kv_len, float scale_log2) {
    float no_o[1][4];
    softmax<T, false>(s, no_o, p, corr, key0, kv_len, scale_log2);
  }

  // Scales the DT 8-column blocks of o (rows g and g + 8) by weigh's factors.
  template <int DT>
  __device__ __forceinline__ static void rescale(float (&o)[DT][4], const float (&corr)[2]) {
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      o[dt][0] *= corr[0];
      o[dt][1] *= corr[0];
      o[dt][2] *= corr[1];
      o[dt][3] *= corr[1];
    }
  }

  // weigh and rescale in one, o scaled as soon as the factors are known.
  template <class T, int DT>
  __device__ __forceinline__ void step(const float (&s)[8][4], float (&o)[DT][4],
                                       uint32_t (&p)[4][4], int key0, int kv_len,
                                       float scale_log2) {
    float corr[2];
    softmax<T, true>(s, o, p, corr, key0, kv_len, scale_log2);
  }

  // Writes the tile's rows of o / row sum (rows past the sequence are skipped); `row` as in start.
  template <class T, int D>
  __device__ __forceinline__ void store(const float (&o)[D / 8][4], const BlockRows& b, int row,
                                        int kv_head, int group, int num_heads, T* out) const {
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2;
    const int t = lane & 3;
    float inv[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float sum = row_sum[i];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      inv[i] = sum > 0.0f ? 1.0f / sum : 0.0f;
    }
    const int row_a = row + g;
    const int row_b = row_a + 8;
    T* out_a = out + (row_a < b.q_rows ? row_offset<D>(b, row_a, kv_head, group, num_heads) : 0);
    T* out_b = out + (row_b < b.q_rows ? row_offset<D>(b, row_b, kv_head, group, num_heads) : 0);
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const int d = dt * 8 + 2 * t;
      if (row_a < b.q_rows) {
        *reinterpret_cast<uint32_t*>(out_a + d) = pack2<T>(o[dt][0] * inv[0], o[dt][1] * inv[0]);
      }
      if (row_b < b.q_rows) {
        *reinterpret_cast<uint32_t*>(out_b + d) = pack2<T>(o[dt][2] * inv[1], o[dt][3] * inv[1]);
      }
    }
  }

 private:
  template <class T, bool kRescale, int DT>
  __device__ __forceinline__ void softmax(const float (&s)[8][4], float (&o)[DT][4],
                                          uint32_t (&p)[4][4], float (&corr)[2], int key0,
                                          int kv_len, float scale_log2) {
    const int t = threadIdx.x & 3;
    float w[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) w[nt][c] = s[nt][c];
    }
    if (key0 + kBlockN - 1 > tile_first || key0 + kBlockN > kv_len) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int key = key0 + nt * 8 + 2 * t + (c & 1);
          if (key > q_pos[c >= 2 ? 1 : 0] || key >= kv_len) w[nt][c] = -INFINITY;
        }
      }
    }
    float new_max[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      new_max[0] = fmaxf(new_max[0], fmaxf(w[nt][0], w[nt][1]));
      new_max[1] = fmaxf(new_max[1], fmaxf(w[nt][2], w[nt][3]));
    }
    float base[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      new_max[i] = fmaxf(new_max[i], __shfl_xor_sync(0xffffffffu, new_max[i], 1));
      new_max[i] = fmaxf(new_max[i], __shfl_xor_sync(0xffffffffu, new_max[i], 2));
      base[i] = new_max[i] == -INFINITY ? 0.0f : new_max[i] * scale_log2;
      corr[i] = exp2_ftz(row_max[i] * scale_log2 - base[i]);
      row_max[i] = new_max[i];
      row_sum[i] *= corr[i];
    }
    if constexpr (kRescale) rescale(o, corr);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      w[nt][0] = exp2_ftz(fmaf(w[nt][0], scale_log2, -base[0]));
      w[nt][1] = exp2_ftz(fmaf(w[nt][1], scale_log2, -base[0]));
      w[nt][2] = exp2_ftz(fmaf(w[nt][2], scale_log2, -base[1]));
      w[nt][3] = exp2_ftz(fmaf(w[nt][3], scale_log2, -base[1]));
      row_sum[0] += w[nt][0] + w[nt][1];
      row_sum[1] += w[nt][2] + w[nt][3];
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      p[kk][0] = pack2<T>(w[2 * kk][0], w[2 * kk][1]);
      p[kk][1] = pack2<T>(w[2 * kk][2], w[2 * kk][3]);
      p[kk][2] = pack2<T>(w[2 * kk + 1][0], w[2 * kk + 1][1]);
      p[kk][3] = pack2<T>(w[2 * kk + 1][2], w[2 * kk + 1][3]);
    }
  }
};

}  // namespace hearth::kernels::prefill
