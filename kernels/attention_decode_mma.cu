// Split-K flash decoding on the tensor cores: the same work, splits and merges as
// attention_decode.cu's kernel (one new row per sequence; the cache cut into splits by the
// sequence's own length; the last block of a (sequence, kv head) adds the splits' partials), with
// the products of a GQA group done by mma.sync instead of lane shuffles.
//
// A block is 4 warps for one (sequence, kv head) and one split at a time. The group's query
// heads (at most 8) are the rows of the MMAs' 16-row A operand (rows past the group are zero),
// so keys and values are read once per group. Each warp takes every 4th tile of 16 positions of
// the split, copying its keys and values into shared memory with cp.async (two stages: the next
// tile's copy, the block's next split's first included, is in flight while one is computed), then
//   S = Q·Kᵀ     2 × D/16 MMAs, K through ldmatrix as the column-major B operand, as it lies;
//   online softmax of S's rows in fp32 (each row lives in a quad of lanes);
//   O += P·V     D/8 MMAs, P straight from S's fragments, V through ldmatrix.trans.
// The 4 warps are merged in shared memory, in warp order (LaneGroupMerge).
//
// A row's result depends only on its own q, its sequence's cache and its length: no other row
// shares its MMA rows, the splits and tiles follow its length only, and every sum runs in a fixed
// order. So a sequence gets the same bits alone, in any batch, and as a row of a speculative
// check (DecodeShape::one_sequence changes nothing here).
//
// The block that owns the newest position writes the new key (rotated, with DecodeRope) and value
// into the cache and hands them to its own tile through shared memory; the cache copies of the
// tiles skip that position, so they can start before griddepcontrol.wait.
#include "kernels/common.cuh"
#include "kernels/decode_split.cuh"
#include "kernels/rope_math.cuh"

namespace hearth::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kTile = 16;     // positions per warp and stage
constexpr int kMaxGroup = 8;  // query heads per kv head (rows of the A operand in use)
constexpr int kPad = 8;       // elements after each shared row: ldmatrix without bank conflicts

template <class T, int D>
struct MmaDecodeSmem {
  static constexpr int kPitch = D + kPad;
  // [warp][stage][keys, values][position][kPitch]
  T tiles[kWarps][2][2][kTile][kPitch];
  // Apart from the tiles, so that the next split's first tiles are copied during the merge.
  LaneGroupMerge<kMaxGroup, D, kWarps> merge;
  T q[kMaxGroup][kPitch];  // the group's query rows (rotated), zero past the group
  T newest[2][D];          // the new position's key (rotated) and value
};

// Two blocks per multiprocessor, as many as their shared memory (~89 KB each with D = 128)
// allows, so the compiler is not pushed below 255 registers a thread.
template <class T, int D>
__global__ void __launch_bounds__(kThreads, 2)
    attention_decode_mma_kernel(const T* q, const T* k_new, const T* v_new, BatchView batch,
                                KvLayerView kv, int num_heads, int group, float scale_log2, T* out,
                                float* partials, int32_t* counters, DecodeRope rope,
                                bool load_early) {
  constexpr int kPitch = MmaDecodeSmem<T, D>::kPitch;
  constexpr int kLanes = D / 8;  // lanes of 8 dims per row (RoPE's lane layout)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto& sm = *reinterpret_cast<MmaDecodeSmem<T, D>*>(smem_raw);
  auto& merge = sm.merge;
  __shared__ float sm_split_max[kDecodeMaxSplits][kMaxGroup];
  __shared__ float sm_split_sum[kDecodeMaxSplits][kMaxGroup];

  const int kv_head = blockIdx.y;
  const int seq = blockIdx.z;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4;  // the MMA fragments' row (a query head) ...
  const int t = lane % 4;  // ... and column pair

  pdl_launch_dependents();
  DecodeBlockSplits splits;
  if (!decode_block_splits(batch, seq, splits)) return;
  const int kv_len = splits.kv_len, used = splits.used, newest = splits.newest;
  const int first_split = splits.first, split_stride = splits.stride;
  const bool owns_newest = splits.owns_newest;

  const int row = batch.seq_q_start[seq];
  const int64_t q_cols = int64_t(num_heads) * D;
  const int64_t kv_cols = int64_t(kv.num_kv_heads) * D;
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  T* cache = static_cast<T*>(kv.base);

  auto offset_of = [&](int pos) { return cache_offset(kv, page_table, kv_head, pos, D); };
  // A warp's copy of the 16 positions from `base` into a stage: positions at or past `end` are
  // zero-filled (weight 0, and no stale value can make 0·v a NaN); the newest is skipped (its
  // row comes from shared memory). Tiles start at multiples of 16, so with pages a multiple of 16
  // a tile lies in one page: one page-table lookup.
  const bool tile_in_one_page = kv.page_size % kTile == 0;
  auto load_tile = [&](int stage, int base, int end) {
    const int64_t tile_offset = tile_in_one_page && base < end ? offset_of(base) : 0;
#pragma unroll
    for (int c = lane; c < kTile * kLanes; c += 32) {
      const int p = c / kLanes;
      const int chunk = c % kLanes;
      const int pos = base + p;
      if (pos == newest) continue;
      const bool valid = pos < end;
      const int64_t offset =
          valid ? (tile_in_one_page ? tile_offset + int64_t(p) * D : offset_of(pos)) + chunk * 8
                : 0;
      cp_async16(&sm.tiles[warp][stage][0][p][chunk * 8], cache + offset, valid);
      cp_async16(&sm.tiles[warp][stage][1][p][chunk * 8], cache + kv.v_offset + offset, valid);
    }
    cp_async_commit();
  };
  auto tiles_of = [](const DecodeSplit& sp) { return (sp.end - sp.begin + kTile - 1) / kTile; };

  // Before waiting for the previous kernel: the first tile of the first split (earlier positions,
  // written by earlier steps), an L2 prefetch of the block's other positions, the RoPE angles.
  const DecodeSplit first = split_of(kv_len, first_split);
  if (load_early && warp < tiles_of(first)) load_tile(0, first.begin + warp * kTile, first.end);
  if (tid == 0) {
    prefetch_splits_l2(cache, kv, page_table, kv_head, kv_len, first_split, split_stride, D,
                       kWarps * kTile);
  }
  const bool rotate = rope.inv_freq != nullptr;
  const int gl = lane % kLanes;  // this lane's 8 dims of a row, as RoPE's lane layout has them
  rope_math::CosSin angle[8];
  if (rotate) {
    rope_math::lane_angles(max(batch.positions[row], 0), gl, rope.inv_freq, rope.rotary_dim,
                           rope.attention_factor, angle);
  }
  pdl_wait();
  if (!load_early && warp < tiles_of(first)) load_tile(0, first.begin + warp * kTile, first.end);

  // The group's query rows, rotated and rounded as the rope pass stores them; every lane of a
  // warp that enters takes part in the rotation's shuffles.
  for (int base = warp * 32; base < kMaxGroup * kLanes; base += kThreads) {
    const int h = (base + lane) / kLanes;
    float x[8] = {};
    if (h < group) {
      unpack8<T>(load16(q + int64_t(row) * q_cols + int64_t(kv_head * group + h) * D + gl * 8), x);
    }
    if (rotate) rope_math::rotate8<T>(x, gl, rope.rotary_dim, angle);
    *reinterpret_cast<uint4*>(&sm.q[h][gl * 8]) = pack8<T>(x);
  }
  // The new key (warp 0, rotated) and value (warp 1): into shared memory, and the owner block
  // stores them in the cache.
  if (owns_newest && warp < 2) {
    const T* src = (warp == 0 ? k_new : v_new) + int64_t(row) * kv_cols + int64_t(kv_head) * D;
    float x[8] = {};
    if (lane < kLanes) unpack8<T>(load16(src + gl * 8), x);
    if (warp == 0 && rotate) rope_math::rotate8<T>(x, gl, rope.rotary_dim, angle);
    if (lane < kLanes) {
      const uint4 packed = pack8<T>(x);
      *reinterpret_cast<uint4*>(&sm.newest[warp][gl * 8]) = packed;
      *reinterpret_cast<uint4*>(cache + offset_of(newest) + (warp == 1 ? kv.v_offset : 0) +
                                gl * 8) = packed;
    }
  }
  __syncthreads();

  // Q as the A operand: rows g (heads), columns 2t, 2t+1 and 2t+8, 2t+9 of each 16-dim step;
  // rows 8-15 are zero.
  uint32_t qa[D / 16][4];
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    qa[ks][0] = *reinterpret_cast<const uint32_t*>(&sm.q[g][ks * 16 + 2 * t]);
    qa[ks][1] = 0;
    qa[ks][2] = *reinterpret_cast<const uint32_t*>(&sm.q[g][ks * 16 + 2 * t + 8]);
    qa[ks][3] = 0;
  }
  // ldmatrix row addresses: for keys (B of Q·Kᵀ) lane L gives position L%8 + 8·(L/16) and dims
  // +8·(L/8 % 2); for values (B of P·V, transposed) position L%8 + 8·(L/8 % 2), dims +8·(L/16).
  const int k_pos = lane % 8 + 8 * (lane / 16);
  const int k_dim = 8 * (lane / 8 % 2);
  const int v_pos = lane % 8 + 8 * (lane / 8 % 2);
  const int v_dim = 8 * (lane / 16);

  // A warp's tiles, in order: every 4th of each of the block's splits. Only a sequence's last
  // split can have fewer than 4 tiles, so a warp without a tile in a split has none after it.
  // The next tile is copied while this one is computed, across the splits' ends too.
  int stage = 0;
  for (int split = first_split; split < used; split += split_stride) {
    const DecodeSplit sp = split_of(kv_len, split);
    const int tiles = tiles_of(sp);
    const bool has_newest = owns_newest && split == used - 1;
    float m = -INFINITY, l = 0.0f;  // row g's running max and this lane's part of its sum
    float o[D / 8][2] = {};         // O's fragments: row g, dims 8j + 2t, +1
    for (int tile = warp; tile < tiles; tile += kWarps, stage ^= 1) {
      const int base = sp.begin + tile * kTile;
      if (tile + kWarps < tiles) {
        load_tile(stage ^ 1, base + kWarps * kTile, sp.end);
        cp_async_wait<1>();
      } else if (const int next = split + split_stride; next < used) {
        const DecodeSplit following = split_of(kv_len, next);
        if (warp < tiles_of(following)) {
          load_tile(stage ^ 1, following.begin + warp * kTile, following.end);
          cp_async_wait<1>();
        } else {
          cp_async_wait<0>();
        }
      } else {
        cp_async_wait<0>();
      }
      T(*keys)[kPitch] = sm.tiles[warp][stage][0];
      T(*values)[kPitch] = sm.tiles[warp][stage][1];
      if (has_newest && newest >= base && newest < base + kTile) {
        for (int c = lane; c < 2 * kLanes; c += 32) {
          const int which = c / kLanes;  // 0: key, 1: value
          *reinterpret_cast<uint4*>(&sm.tiles[warp][stage][which][newest - base][c % kLanes * 8]) =
              *reinterpret_cast<const uint4*>(&sm.newest[which][c % kLanes * 8]);
        }
      }
      __syncwarp();

      // S = Q·Kᵀ for positions base + 0..7 (s[0]) and base + 8..15 (s[1]).
      float s[2][2] = {};
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        uint32_t kb[4];
        ldmatrix_x4(kb, &keys[k_pos][ks * 16 + k_dim]);
        mma_16816_top<T>(s[0], qa[ks], kb[0], kb[1]);
        mma_16816_top<T>(s[1], qa[ks], kb[2], kb[3]);
      }
      // Row g's scores at positions base + 8n + 2t + i (n, i in {0, 1}), as exp2 arguments.
      float x[4];
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int pos = base + 8 * n + 2 * t + i;
          x[2 * n + i] = pos < sp.end ? s[n][i] * scale_log2 : -INFINITY;
        }
      }
      float mx = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m, mx);
      const float ref = m_new == -INFINITY ? 0.0f : m_new;
      const float corr = exp2f(m - ref);
      m = m_new;
      float p[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) p[i] = exp2f(x[i] - ref);
      l = l * corr + ((p[0] + p[1]) + (p[2] + p[3]));
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        o[j][0] *= corr;
        o[j][1] *= corr;
      }
      // O += P·V: S's fragments of row g are P's A fragment (positions 2t, 2t+1 | 2t+8, 2t+9).
      const uint32_t pa[4] = {pack2<T>(p[0], p[1]), 0u, pack2<T>(p[2], p[3]), 0u};
#pragma unroll
      for (int j2 = 0; j2 < D / 16; ++j2) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, &values[v_pos][j2 * 16 + v_dim]);
        mma_16816_top<T>(o[2 * j2], pa, vb[0], vb[1]);
        mma_16816_top<T>(o[2 * j2 + 1], pa, vb[2], vb[3]);
      }
      __syncwarp();  // every lane has read this stage before the next copy into it
    }
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);

    // Merge the warps.
    if (g < group) {
      if (t == 0) {
        merge.max[warp][g] = m;
        merge.sum[warp][g] = l;
      }
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        merge.acc[warp][g][8 * j + 2 * t] = o[j][0];
        merge.acc[warp][g][8 * j + 2 * t + 1] = o[j][1];
      }
    }
    __syncthreads();
    for (int e = tid; e < group * D; e += kThreads) {
      const int h = e / D;
      const int d = e % D;
      const auto [mx, sum, a] = merge.merged(h, d);
      const int head = kv_head * group + h;
      if (used == 1) {
        out[int64_t(row) * q_cols + int64_t(head) * D + d] = from_f<T>(a / sum);
      } else {
        store_split_partial(partials, seq, num_heads, head, split, D, d, mx, sum, a);
      }
    }
    __syncthreads();  // the merge has been read before the next split's is written
  }
  if (used == 1) return;
  merge_split_partials<T, kMaxGroup, D, kThreads>(
      partials, counters, seq, num_heads, kv.num_kv_heads, kv_head, group, kv_len,
      min(used, split_stride), row, q_cols, out, sm_split_max, sm_split_sum);
}

template <class T, int D>
cudaError_t launch(const Launch& l, const void* q, const void* k, const void* v,
                   const BatchView& batch, const KvLayerView& kv, int num_heads, float scale,
                   void* out, const DecodeScratch& scratch, const DecodeShape& shape,
                   const DecodeRope& rope) {
  constexpr size_t kSmem = sizeof(MmaDecodeSmem<T, D>);
  auto* kernel = attention_decode_mma_kernel<T, D>;
  // Per call, not once: the opt-in above 48 KB belongs to the current device.
  const cudaError_t opted_in = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem));
  if (opted_in != cudaSuccess) return opted_in;
  const dim3 grid(static_cast<unsigned>(decode_blocks_per_head(batch.num_seqs * kv.num_kv_heads,
                                                               shape.blocks_per_sm, false)),
                  static_cast<unsigned>(kv.num_kv_heads), static_cast<unsigned>(batch.num_seqs));
  return launch_kernel(l, kernel, grid, dim3(kThreads), kSmem, static_cast<const T*>(q),
                       static_cast<const T*>(k), static_cast<const T*>(v), batch, kv, num_heads,
                       num_heads / kv.num_kv_heads, scale * 1.4426950408889634f,
                       static_cast<T*>(out), scratch.partials, scratch.counters, rope,
                       !shape.keys_stored_this_step);
}

}  // namespace

bool attention_decode_tensor_cores_supported(int head_dim, int num_heads, int num_kv_heads) {
  return (head_dim == 64 || head_dim == 128) && num_kv_heads > 0 && num_heads % num_kv_heads == 0 &&
         num_heads / num_kv_heads <= kMaxGroup;
}

cudaError_t attention_decode_tensor_cores(const Launch& l, Elem t, const void* q, const void* k,
                                          const void* v, const BatchView& batch,
                                          const KvLayerView& kv, int num_heads, float scale,
                                          void* out, const DecodeScratch& scratch,
                                          const DecodeShape& shape, const DecodeRope& rope) {
  HEARTH_DISPATCH_16(t, T, {
    if (kv.head_dim == 64) {
      return launch<T, 64>(l, q, k, v, batch, kv, num_heads, scale, out, scratch, shape, rope);
    }
    return launch<T, 128>(l, q, k, v, batch, kv, num_heads, scale, out, scratch, shape, rope);
  });
}

}  // namespace hearth::kernels
