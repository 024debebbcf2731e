// Split-K flash decoding over the paged KV cache: one new token per sequence.
//
// Grid: (blocks per sequence, kv heads, sequences), fixed by the batch shape so that a captured
// CUDA graph serves every step; each block reads its sequence's length and works out its own
// share: the cache is cut into tiles of 64 positions, the tiles into at most kDecodeMaxSplits
// splits (a function of the sequence's own length only, so results do not depend on the batch),
// and block x takes splits x, x + gridDim.x, ... (one each for small batches; several, computed
// one after the other exactly as separate blocks would, once the batch fills the GPU).
// A block handles one kv head and all query heads of its group (GQA), so keys and values are
// read once per group. Positions are spread over "lanes groups" of D/8 threads, each thread
// holding 8 dims of a key (one 16-byte load); 4 positions per lane group make a step.
// The decode step is a chain of dependent kernels, so the work after griddepcontrol.wait is
// kept short: the first step's keys and values (earlier positions, written by earlier decode
// steps) are loaded and the RoPE angles computed before the wait; each later step's loads are
// issued one step ahead; a step's positions and heads are computed together without branches
// (one online-softmax correction per step). Per lane group an online softmax runs; the groups
// are merged in shared memory, and splits are merged by the last block of a (sequence, kv head)
// to finish, in a fixed order, with all its reads of the partials in flight at once.
// The block that owns the newest position also writes the new key and value into the cache
// (and keeps them in registers for its own use, so no ordering is needed). With DecodeRope the
// kernel rotates q and the new key itself (the rope pass of the step is skipped).
// A speculative check runs each of a sequence's new tokens as a row of its own, attending up to
// its position; those rows read keys that kv_store wrote just before (DecodeShape::
// keys_stored_this_step), so then the first step's loads wait for it as well.
#include <algorithm>
#include <type_traits>

#include "kernels/common.cuh"
#include "kernels/decode_split.cuh"
#include "kernels/kv_quant.cuh"
#include "kernels/rope_math.cuh"

namespace hearth::kernels {
namespace {

// Threads per block: 128, or 256 for a batch of one sequence (when the lane groups' merge
// buffer, 32 · threads · GM bytes, stays within 32 KB of static shared memory). Twice the lane
// groups make a step cover twice the positions, so each split takes half the dependent steps after
// the wait: one 64-position step at 512 positions, decode attention 13.4 -> 12.6 µs per layer at
// batch 1 (H100). With more sequences the 256-thread blocks' registers (~210 each) leave one
// block per multiprocessor and batches 2-32 lose 6-20 % (docs/PERFORMANCE.md), so they keep 128.
// A sequence's lane groups are merged in another order then: its last bits may differ between
// decoding alone and in a batch.
constexpr int kThreadsOneSequence = 256;
constexpr int kThreadsBatch = 128;
template <int GM>
constexpr bool one_sequence_blocks_fit() {
  return 32 * kThreadsOneSequence * GM <= 32 * 1024;
}
constexpr int kLoads = 4;  // positions per lane group per step

template <class T, int D, int GM, int THREADS>
__global__ void __launch_bounds__(THREADS)
    attention_decode_kernel(const T* q, const T* k_new, const T* v_new, BatchView batch,
                            KvLayerView kv, int num_heads, int group, float scale_log2, T* out,
                            float* partials, int32_t* counters, DecodeRope rope, bool load_early) {
  constexpr int kThreads = THREADS;
  constexpr int kLanes = D / 8;               // threads per position
  constexpr int kGroups = kThreads / kLanes;  // positions in flight per load
  constexpr int kStep = kGroups * kLoads;     // positions per step
  __shared__ LaneGroupMerge<GM, D, kGroups> merge;
  __shared__ float sm_split_max[kDecodeMaxSplits][GM];
  __shared__ float sm_split_sum[kDecodeMaxSplits][GM];

  const int kv_head = blockIdx.y;
  const int seq = blockIdx.z;
  const int tid = threadIdx.x;
  const int lg = tid / kLanes;  // lane group
  const int gl = tid % kLanes;  // lane within the group

  pdl_launch_dependents();
  // Everything that does not depend on the previous kernel happens before waiting for it: the
  // batch layout (copied before the step's first kernel), the RoPE angles of the new row, and
  // the keys and values of earlier positions (written by earlier steps): the first step's are
  // loaded into registers, the rest of the block's splits are prefetched into L2.
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
  const T* k_row = k_new + int64_t(row) * kv_cols + int64_t(kv_head) * D;
  const T* v_row = v_new + int64_t(row) * kv_cols + int64_t(kv_head) * D;

  auto offset_of = [&](int pos) { return cache_offset(kv, page_table, kv_head, pos, D); };
  // With pages a multiple of a step (the usual case), a step lies in one page: one lookup.
  const bool step_in_one_page = kv.page_size % kStep == 0;
  // Keys and values of a step's positions (before `end`) except the newest (not in the cache
  // yet).
  auto load_step = [&](int base, int end, uint4 kr[kLoads], uint4 vr[kLoads]) {
    const int64_t step_offset = step_in_one_page ? offset_of(base) : 0;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int pos = min(base + i * kGroups + lg, end - 1);  // clamped: no branch
      if (pos == newest) continue;
      const int64_t offset =
          (step_in_one_page ? step_offset + int64_t(pos - base) * D : offset_of(pos)) + gl * 8;
      kr[i] = load16(cache + offset);
      vr[i] = load16(cache + kv.v_offset + offset);
    }
  };
  const DecodeSplit first = split_of(kv_len, first_split);
  uint4 kr[kLoads], vr[kLoads];
  if (load_early) load_step(first.begin, first.end, kr, vr);
  if (tid == 0) {
    prefetch_splits_l2(cache, kv, page_table, kv_head, kv_len, first_split, split_stride, D, kStep);
  }
  const bool rotate = rope.inv_freq != nullptr;
  rope_math::CosSin angle[8];
  if (rotate) {
    rope_math::lane_angles(max(batch.positions[row], 0), gl, rope.inv_freq, rope.rotary_dim,
                           rope.attention_factor, angle);
  }
  pdl_wait();
  if (!load_early) load_step(first.begin, first.end, kr, vr);

  // The new position's key (rotated) and value: registers of every lane group, and the cache.
  uint4 k_newest = make_uint4(0, 0, 0, 0), v_newest = make_uint4(0, 0, 0, 0);
  if (owns_newest) {
    k_newest = load16(k_row + gl * 8);
    v_newest = load16(v_row + gl * 8);
    if (rotate) {
      float kf[8];
      unpack8<T>(k_newest, kf);
      rope_math::rotate8<T>(kf, gl, rope.rotary_dim, angle);
      k_newest = pack8<T>(kf);
    }
    if (lg < 2) {
      const int64_t offset = offset_of(newest) + (lg == 1 ? kv.v_offset : 0) + gl * 8;
      *reinterpret_cast<uint4*>(cache + offset) = lg == 1 ? v_newest : k_newest;
    }
  }

  float qv[GM][8];
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    if (h < group) {
      const int head = kv_head * group + h;
      unpack8<T>(load16(q + int64_t(row) * q_cols + int64_t(head) * D + gl * 8), qv[h]);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) qv[h][i] = 0.0f;
    }
    if (rotate) rope_math::rotate8<T>(qv[h], gl, rope.rotary_dim, angle);
#pragma unroll
    for (int i = 0; i < 8; ++i) qv[h][i] *= scale_log2;
  }

  // The block's splits one after the other, each computed and stored exactly as a block of its
  // own would (so the bits do not depend on how many blocks share a sequence's splits).
  const int work = group * D;
  for (int split = first_split; split < used; split += split_stride) {
    const DecodeSplit sp = split_of(kv_len, split);
    const bool has_newest = owns_newest && split == used - 1;
    if (split != first_split) load_step(sp.begin, sp.end, kr, vr);
    float m[GM], l[GM], acc[GM][8];
#pragma unroll
    for (int h = 0; h < GM; ++h) {
      m[h] = -INFINITY;
      l[h] = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;
    }

    // One step ahead: the next step's loads are in flight while this one is computed.
    for (int base = sp.begin; base < sp.end; base += kStep) {
      uint4 kn[kLoads], vn[kLoads];
      if (base + kStep < sp.end) load_step(base + kStep, sp.end, kn, vn);
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        if (has_newest && min(base + i * kGroups + lg, sp.end - 1) == newest) {
          kr[i] = k_newest;
          vr[i] = v_newest;
        }
      }
      // The step's kLoads positions at once, without branches, so that the dot products, the
      // shuffle reductions and the exponentials of all positions and heads overlap (one online-
      // softmax correction per step, not per position). Heads beyond `group` compute on zero
      // queries and are never stored.
      float sc[GM][kLoads];
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        float kf[8];
        unpack8<T>(kr[i], kf);
#pragma unroll
        for (int h = 0; h < GM; ++h) {
          float dot = 0.0f;
#pragma unroll
          for (int d = 0; d < 8; ++d) dot = fmaf(qv[h][d], kf[d], dot);
          sc[h][i] = dot;
        }
      }
#pragma unroll
      for (int off = kLanes / 2; off > 0; off >>= 1) {
#pragma unroll
        for (int h = 0; h < GM; ++h) {
#pragma unroll
          for (int i = 0; i < kLoads; ++i) sc[h][i] += __shfl_xor_sync(0xffffffffu, sc[h][i], off);
        }
      }
      float corr[GM];
      online_softmax_step<GM, kLoads>(sc, m, l, corr, base, kGroups, lg, sp.end);
#pragma unroll
      for (int h = 0; h < GM; ++h) {
#pragma unroll
        for (int d = 0; d < 8; ++d) acc[h][d] *= corr[h];
      }
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        float vf[8];
        unpack8<T>(vr[i], vf);
#pragma unroll
        for (int h = 0; h < GM; ++h) {
#pragma unroll
          for (int d = 0; d < 8; ++d) acc[h][d] = fmaf(sc[h][i], vf[d], acc[h][d]);
        }
      }
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        kr[i] = kn[i];
        vr[i] = vn[i];
      }
    }

    // Merge the lane groups.
    if (split != first_split) __syncthreads();  // the previous split's merge has been read
    merge.store(m, l, acc, group, lg, gl);
    __syncthreads();
    for (int e = tid; e < work; e += kThreads) {
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
  }
  if (used == 1) return;
  merge_split_partials<T, GM, D, kThreads>(partials, counters, seq, num_heads, kv.num_kv_heads,
                                           kv_head, group, kv_len, min(used, split_stride), row,
                                           q_cols, out, sm_split_max, sm_split_sum);
}

template <class T, int D, int GM>
cudaError_t launch_decode(const Launch& l, const void* q, const void* k, const void* v,
                          const BatchView& batch, const KvLayerView& kv, int num_heads, float scale,
                          void* out, const DecodeScratch& scratch, const DecodeShape& shape,
                          const DecodeRope& rope) {
  const int group = num_heads / kv.num_kv_heads;
  auto go = [&](auto threads) {  // the block size picks the kernel
    constexpr int kBlock = decltype(threads)::value;
    const dim3 grid(
        static_cast<unsigned>(decode_blocks_per_head(
            batch.num_seqs * kv.num_kv_heads, shape.blocks_per_sm, kBlock == kThreadsOneSequence)),
        static_cast<unsigned>(kv.num_kv_heads), static_cast<unsigned>(batch.num_seqs));
    return launch_kernel(l, attention_decode_kernel<T, D, GM, kBlock>, grid, dim3(kBlock), 0,
                         static_cast<const T*>(q), static_cast<const T*>(k),
                         static_cast<const T*>(v), batch, kv, num_heads, group,
                         scale * 1.4426950408889634f, static_cast<T*>(out), scratch.partials,
                         scratch.counters, rope, !shape.keys_stored_this_step);
  };
  if constexpr (one_sequence_blocks_fit<GM>()) {
    if (shape.one_sequence) return go(std::integral_constant<int, kThreadsOneSequence>{});
  }
  return go(std::integral_constant<int, kThreadsBatch>{});
}

template <class T, int D>
cudaError_t dispatch_group(const Launch& l, const void* q, const void* k, const void* v,
                           const BatchView& batch, const KvLayerView& kv, int num_heads,
                           float scale, void* out, const DecodeScratch& scratch,
                           const DecodeShape& shape, const DecodeRope& rope) {
  const int group = num_heads / kv.num_kv_heads;
  auto go = [&](auto gm) {
    constexpr int kGm = decltype(gm)::value;
    return launch_decode<T, D, kGm>(l, q, k, v, batch, kv, num_heads, scale, out, scratch, shape,
                                    rope);
  };
  if (group <= 1) return go(std::integral_constant<int, 1>{});
  if (group <= 2) return go(std::integral_constant<int, 2>{});
  if (group <= 4) return go(std::integral_constant<int, 4>{});
  return go(std::integral_constant<int, 8>{});
}

}  // namespace

// Blocks per (sequence, kv head): as many as a sequence can have splits while the batch is
// small, so that the GPU fills; fewer once the batch's (sequence, kv head) pairs fill every
// multiprocessor blocks_per_sm times, each block taking several splits in turn, instead of
// thousands of blocks of one short split each (at batch 32, 8 kv heads and 512 positions:
// 2,048 blocks of 64 positions, 6,144 more that found no split) and their merges. One_block_per_sm:
// blocks that fill a multiprocessor alone (the 256-thread kernel, ~200 registers a thread) are
// rounded down, so that a few of them do not make a second wave (batch 1: 16 blocks per kv head
// on 132 multiprocessors, not 17).
int decode_blocks_per_head(int heads_of_batch, int blocks_per_sm, bool one_block_per_sm) {
  int device = 0, multiprocessors = 0;
  if (blocks_per_sm <= 0 || cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) !=
          cudaSuccess) {
    return kDecodeMaxSplits;
  }
  const int aim = blocks_per_sm * multiprocessors;
  const int blocks =
      one_block_per_sm ? aim / heads_of_batch : (aim + heads_of_batch - 1) / heads_of_batch;
  return std::clamp(blocks, 1, kDecodeMaxSplits);
}

size_t decode_partial_floats(int num_seqs, int num_heads, int head_dim) {
  return static_cast<size_t>(num_seqs) * static_cast<size_t>(num_heads) * kDecodeMaxSplits *
         static_cast<size_t>(head_dim + 2);
}

bool attention_decode_rope_supported(int head_dim, int rotary_dim) {
  if (rotary_dim < 16 || rotary_dim > head_dim || rotary_dim % 16 != 0) return false;
  const int lanes_apart = rotary_dim / 16;  // half / 8: must be a power of two
  return (lanes_apart & (lanes_apart - 1)) == 0;
}

cudaError_t attention_decode(const Launch& l, Elem t, const void* q, const void* k, const void* v,
                             const BatchView& batch, const KvLayerView& kv, int num_heads,
                             float scale, void* out, const DecodeScratch& scratch,
                             const DecodeShape& shape, const DecodeRope& rope) {
  if (batch.num_seqs <= 0) return cudaSuccess;
  if (kv.bits != 16) {
    return attention_decode_quantized(l, t, q, k, v, batch, kv, num_heads, scale, out, scratch,
                                      shape, rope);
  }
  if (!attention_fast_supported(kv.head_dim, num_heads, kv.num_kv_heads)) {
    return cudaErrorInvalidValue;
  }
  if (rope.inv_freq && !attention_decode_rope_supported(kv.head_dim, rope.rotary_dim)) {
    return cudaErrorInvalidValue;
  }
  if (shape.tensor_cores &&
      attention_decode_tensor_cores_supported(kv.head_dim, num_heads, kv.num_kv_heads)) {
    return attention_decode_tensor_cores(l, t, q, k, v, batch, kv, num_heads, scale, out, scratch,
                                         shape, rope);
  }
  HEARTH_DISPATCH_16(t, T, {
    if (kv.head_dim == 64) {
      return dispatch_group<T, 64>(l, q, k, v, batch, kv, num_heads, scale, out, scratch, shape,
                                   rope);
    }
    return dispatch_group<T, 128>(l, q, k, v, batch, kv, num_heads, scale, out, scratch, shape,
                                  rope);
  });
}

}  // namespace hearth::kernels
