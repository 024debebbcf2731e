// Split-K flash decoding over the paged KV cache: one new token per sequence.
//
// Grid: (splits, kv heads, sequences), fixed by the batch shape so that a captured CUDA graph
// serves every step; each block reads its sequence's length and works out its own share: the
// cache is cut into tiles of 64 positions, the tiles into at most kDecodeMaxSplits splits
// (a function of the sequence's own length only, so results do not depend on the batch).
// A block handles one kv head and all query heads of its group (GQA), so keys and values are
// read once per group. Positions are spread over "lanes groups" of D/8 threads, each thread
// holding 8 dims of a key (one 16-byte load); 4 positions per lane group are loaded before use.
// Per lane group an online softmax runs; the groups are merged in shared memory, and splits are
// merged by the last block of a (sequence, kv head) to finish, in a fixed order.
// The block that owns the newest position also writes the new key and value into the cache
// (and reads them from the inputs, not the cache, so no ordering is needed).
#include "kernels/common.cuh"

namespace hearth::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kTile = 64;
constexpr int kLoads = 4;  // positions per lane group per step

struct DecodeSplit {
  int used;   // splits this sequence uses
  int begin;  // first position of this split
  int end;    // one past its last position
};

__device__ __forceinline__ DecodeSplit split_of(int kv_len, int split) {
  const int tiles = (kv_len + kTile - 1) / kTile;
  const int splits = min(kDecodeMaxSplits, tiles);
  const int per_split = (tiles + splits - 1) / splits;
  DecodeSplit s;
  s.used = (tiles + per_split - 1) / per_split;
  s.begin = split * per_split * kTile;
  s.end = min(kv_len, (split + 1) * per_split * kTile);
  return s;
}

template <class T, int D, int GM>
__global__ void __launch_bounds__(kThreads)
    attention_decode_kernel(const T* q, const T* k_new, const T* v_new, BatchView batch,
                            KvLayerView kv, int num_heads, int group, float scale_log2, T* out,
                            float* partials, int32_t* counters) {
  constexpr int kLanes = D / 8;               // threads per position
  constexpr int kGroups = kThreads / kLanes;  // positions in flight per load
  constexpr int kStep = kGroups * kLoads;     // positions per step
  __shared__ float sm_max[kGroups][GM];
  __shared__ float sm_sum[kGroups][GM];
  __shared__ float sm_acc[kGroups][GM][D];
  __shared__ float sm_split_max[kDecodeMaxSplits][GM];
  __shared__ float sm_split_sum[kDecodeMaxSplits][GM];

  const int split = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int seq = blockIdx.z;
  const int tid = threadIdx.x;
  const int lg = tid / kLanes;  // lane group
  const int gl = tid % kLanes;  // lane within the group

  pdl_launch_dependents();
  // The batch layout (copied before the step's first kernel) and the keys and values of earlier
  // positions (written by earlier steps) do not depend on the previous kernel: read the layout
  // and ask L2 for this block's part of the cache before waiting for q, k and v.
  const int kv_len = batch.seq_kv_len[seq];
  if (kv_len <= 0) return;
  const DecodeSplit sp = split_of(kv_len, split);
  if (split >= sp.used) return;

  const int row = batch.seq_q_start[seq];
  const int64_t q_cols = int64_t(num_heads) * D;
  const int64_t kv_cols = int64_t(kv.num_kv_heads) * D;
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  T* cache = static_cast<T*>(kv.base);
  const int newest = kv_len - 1;
  const T* k_row = k_new + int64_t(row) * kv_cols + int64_t(kv_head) * D;
  const T* v_row = v_new + int64_t(row) * kv_cols + int64_t(kv_head) * D;

  auto cache_offset = [&](int pos) -> int64_t {
    const int64_t page = page_table[pos / kv.page_size];
    const int slot = pos % kv.page_size;
    return page * kv.page_stride + (int64_t(kv_head) * kv.page_size + slot) * D;
  };
  if (tid == 0) {
    const int end = min(sp.end, newest);
    for (int pos = sp.begin; pos < end;) {
      const int run = min(kv.page_size - pos % kv.page_size, end - pos);
      const T* start = cache + cache_offset(pos);
      prefetch_l2(start, static_cast<unsigned>(run * D * sizeof(T)));
      prefetch_l2(start + kv.v_offset, static_cast<unsigned>(run * D * sizeof(T)));
      pos += run;
    }
  }
  pdl_wait();

  if (split == sp.used - 1 && tid < 2 * kLanes) {
    const bool is_v = tid >= kLanes;
    const int ch = tid % kLanes;
    const int64_t offset = cache_offset(newest) + (is_v ? kv.v_offset : 0) + ch * 8;
    *reinterpret_cast<uint4*>(cache + offset) = load16((is_v ? v_row : k_row) + ch * 8);
  }

  float qv[GM][8];
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    if (h < group) {
      const int head = kv_head * group + h;
      unpack8<T>(load16(q + int64_t(row) * q_cols + int64_t(head) * D + gl * 8), qv[h]);
#pragma unroll
      for (int i = 0; i < 8; ++i) qv[h][i] *= scale_log2;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) qv[h][i] = 0.0f;
    }
  }
  float m[GM], l[GM], acc[GM][8];
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;
  }

  // With pages a multiple of a step (the usual case), a step lies in one page: one lookup.
  const bool step_in_one_page = kv.page_size % kStep == 0;
  for (int base = sp.begin; base < sp.end; base += kStep) {
    int64_t step_offset = 0;
    if (step_in_one_page) step_offset = cache_offset(base);
    const T* k_src[kLoads];
    const T* v_src[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int pos = min(base + i * kGroups + lg, sp.end - 1);  // clamped: no branch
      const int64_t offset =
          (step_in_one_page ? step_offset + int64_t(pos - base) * D : cache_offset(pos)) + gl * 8;
      k_src[i] = pos == newest ? k_row + gl * 8 : cache + offset;
      v_src[i] = pos == newest ? v_row + gl * 8 : cache + kv.v_offset + offset;
    }
    uint4 kr[kLoads], vr[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      kr[i] = load16(k_src[i]);
      vr[i] = load16(v_src[i]);
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      // Every lane takes part in the shuffles; only valid positions update the state.
      const bool valid = base + i * kGroups + lg < sp.end;
      float kf[8], vf[8];
      unpack8<T>(kr[i], kf);
      unpack8<T>(vr[i], vf);
#pragma unroll
      for (int h = 0; h < GM; ++h) {
        if (h >= group) continue;
        float s = 0.0f;
#pragma unroll
        for (int d = 0; d < 8; ++d) s = fmaf(qv[h][d], kf[d], s);
#pragma unroll
        for (int off = kLanes / 2; off > 0; off >>= 1) {
          s += __shfl_xor_sync(0xffffffffu, s, off);
        }
        if (!valid) continue;
        const float mx = fmaxf(m[h], s);
        const float corr = exp2f(m[h] - mx);
        const float p = exp2f(s - mx);
        m[h] = mx;
        l[h] = l[h] * corr + p;
#pragma unroll
        for (int d = 0; d < 8; ++d) acc[h][d] = fmaf(acc[h][d], corr, p * vf[d]);
      }
    }
  }

  // Merge the lane groups.
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    if (h >= group) continue;
    if (gl == 0) {
      sm_max[lg][h] = m[h];
      sm_sum[lg][h] = l[h];
    }
#pragma unroll
    for (int d = 0; d < 8; ++d) sm_acc[lg][h][gl * 8 + d] = acc[h][d];
  }
  __syncthreads();

  const int work = group * D;
  const int64_t slot_floats = D + 2;
  for (int e = tid; e < work; e += kThreads) {
    const int h = e / D;
    const int d = e % D;
    float mx = -INFINITY;
    for (int i = 0; i < kGroups; ++i) mx = fmaxf(mx, sm_max[i][h]);
    float sum = 0.0f, a = 0.0f;
    for (int i = 0; i < kGroups; ++i) {
      const float w = exp2f(sm_max[i][h] - mx);  // 0 for groups that saw nothing
      sum += sm_sum[i][h] * w;
      a += sm_acc[i][h][d] * w;
    }
    const int head = kv_head * group + h;
    if (sp.used == 1) {
      out[int64_t(row) * q_cols + int64_t(head) * D + d] = from_f<T>(a / sum);
    } else {
      float* slot =
          partials + ((int64_t(seq) * num_heads + head) * kDecodeMaxSplits + split) * slot_floats;
      slot[d] = a;
      if (d == 0) {
        slot[D] = mx;
        slot[D + 1] = sum;
      }
    }
  }
  if (sp.used == 1) return;

  int32_t* counter = counters + int64_t(seq) * kv.num_kv_heads + kv_head;
  if (!last_to_arrive(counter, sp.used)) return;
  // The splits' maxima and sums go to shared memory with one load per thread, then each head's
  // weights are computed once; the values are read in batches of independent loads (a chain of
  // dependent L2 reads per element used to dominate this kernel).
  for (int i = tid; i < sp.used * group; i += kThreads) {
    const int s = i / group;
    const int h = i % group;
    const float* slot =
        partials +
        ((int64_t(seq) * num_heads + kv_head * group + h) * kDecodeMaxSplits + s) * slot_floats;
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
  for (int e = tid; e < work; e += kThreads) {
    const int h = e / D;
    const int d = e % D;
    const int head = kv_head * group + h;
    const float* slots =
        partials + (int64_t(seq) * num_heads + head) * kDecodeMaxSplits * slot_floats + d;
    float a = 0.0f;
    for (int s0 = 0; s0 < sp.used; s0 += 8) {
      float v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        v[u] = s0 + u < sp.used ? __ldcg(slots + (s0 + u) * slot_floats) : 0.0f;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        if (s0 + u < sp.used) a += v[u] * sm_split_max[s0 + u][h];
      }
    }
    out[int64_t(row) * q_cols + int64_t(head) * D + d] = from_f<T>(a / sm_split_sum[0][h]);
  }
  if (tid == 0) *counter = 0;
}

template <class T, int D, int GM>
cudaError_t launch_decode(const Launch& l, const void* q, const void* k, const void* v,
                          const BatchView& batch, const KvLayerView& kv, int num_heads, float scale,
                          void* out, const DecodeScratch& scratch) {
  const dim3 grid(kDecodeMaxSplits, static_cast<unsigned>(kv.num_kv_heads),
                  static_cast<unsigned>(batch.num_seqs));
  const int group = num_heads / kv.num_kv_heads;
  return launch_kernel(l, attention_decode_kernel<T, D, GM>, grid, dim3(kThreads), 0,
                       static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
                       batch, kv, num_heads, group, scale * 1.4426950408889634f,
                       static_cast<T*>(out), scratch.partials, scratch.counters);
}

template <class T, int D>
cudaError_t dispatch_group(const Launch& l, const void* q, const void* k, const void* v,
                           const BatchView& batch, const KvLayerView& kv, int num_heads,
                           float scale, void* out, const DecodeScratch& scratch) {
  const int group = num_heads / kv.num_kv_heads;
  if (group <= 1)
    return launch_decode<T, D, 1>(l, q, k, v, batch, kv, num_heads, scale, out, scratch);
  if (group <= 2)
    return launch_decode<T, D, 2>(l, q, k, v, batch, kv, num_heads, scale, out, scratch);
  if (group <= 4)
    return launch_decode<T, D, 4>(l, q, k, v, batch, kv, num_heads, scale, out, scratch);
  return launch_decode<T, D, 8>(l, q, k, v, batch, kv, num_heads, scale, out, scratch);
}

}  // namespace

size_t decode_partial_floats(int num_seqs, int num_heads, int head_dim) {
  return static_cast<size_t>(num_seqs) * static_cast<size_t>(num_heads) * kDecodeMaxSplits *
         static_cast<size_t>(head_dim + 2);
}

cudaError_t attention_decode(const Launch& l, Elem t, const void* q, const void* k, const void* v,
                             const BatchView& batch, const KvLayerView& kv, int num_heads,
                             float scale, void* out, const DecodeScratch& scratch) {
  if (batch.num_seqs <= 0) return cudaSuccess;
  if (!attention_fast_supported(kv.head_dim, num_heads, kv.num_kv_heads)) {
    return cudaErrorInvalidValue;
  }
  HEARTH_DISPATCH_16(t, T, {
    if (kv.head_dim == 64) {
      return dispatch_group<T, 64>(l, q, k, v, batch, kv, num_heads, scale, out, scratch);
    }
    return dispatch_group<T, 128>(l, q, k, v, batch, kv, num_heads, scale, out, scratch);
  });
}

}  // namespace hearth::kernels
