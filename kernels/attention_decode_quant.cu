// Split-K flash decoding over a quantized cache (q8/q6/q4, kernels/kv_quant.cuh): one new row per
// sequence, or the rows of a speculative check (all stored by kv_store before this kernel runs).
// In a decode step the block whose split ends at the newest position rotates (RoPE, with `rope`),
// quantizes and stores that position's key and value itself before reading the cache, so the step
// needs neither a rope pass nor kv_store.
//
// The same cut of the work as attention_decode.cu (grid (splits, kv heads, sequences); a block
// owns one kv head and its query heads; lane groups of D/8 threads, 8 dims a lane, 4 positions
// per lane group a step, one step's loads in flight while the previous one is computed), with
// the rows dequantized in registers. The keys and values are stored rotated (H), so the block
// rotates q once and works in the rotated space; the finished rows go through H once more in
// shared memory before they are written.
#include "kernels/decode_split.cuh"
#include "kernels/kv_quant.cuh"
#include "kernels/rope_math.cuh"

namespace hearth::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kLoads = 4;

// The codes and scales of one position's key and value for this lane.
struct QuantKv {
  uint2 k, v;
  float k_scale, v_scale;
};

template <class T, int BITS, int D, int GM>
__global__ void __launch_bounds__(kThreads)
    attention_decode_quant_kernel(const T* q, const T* k_new, const T* v_new, BatchView batch,
                                  KvLayerView kv, int num_heads, int group, float scale_log2,
                                  float norm, T* out, float* partials, int32_t* counters,
                                  DecodeRope rope, bool store_newest) {
  constexpr int kLanes = D / 8;
  constexpr int kGroups = kThreads / kLanes;
  constexpr int kStep = kGroups * kLoads;
  __shared__ LaneGroupMerge<GM, D, kGroups> merge;
  __shared__ float sm_out[GM][D];
  __shared__ float first_partial[GM][kLanes];  // position 0's score, per lane of lane group 0

  const int split = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int seq = blockIdx.z;
  const int tid = threadIdx.x;
  const int lg = tid / kLanes;
  const int gl = tid % kLanes;

  pdl_launch_dependents();
  const int kv_len = batch.seq_kv_len[seq];
  if (kv_len <= 0) return;
  const DecodeSplit sp = split_of(kv_len, split);
  if (split >= sp.used) return;
  const int64_t q_cols = int64_t(num_heads) * D;
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  // One row per sequence (a check batch lays each of its tokens out as a sequence of its own).
  const int row = batch.seq_q_start[seq];
  const int end = sp.end;
  const bool rotate = rope.inv_freq != nullptr;
  rope_math::CosSin angle[8];
  if (rotate) {
    rope_math::lane_angles(max(batch.positions[row], 0), gl, rope.inv_freq, rope.rotary_dim,
                           rope.attention_factor, angle);
  }
  pdl_wait();
  if (store_newest && split == sp.used - 1) {
    // Lane group 0 stores the key, 1 the value; every lane computes (the shuffles need the warp).
    const bool is_value = (lg & 1) != 0;
    const int64_t kv_cols = int64_t(kv.num_kv_heads) * D;
    float x[8], rotated[8];
    unpack8<T>(load16((is_value ? v_new : k_new) + int64_t(row) * kv_cols + kv_head * D + gl * 8),
               x);
#pragma unroll
    for (int j = 0; j < 8; ++j) rotated[j] = x[j];
    if (rotate) rope_math::rotate8<T>(rotated, gl, rope.rotary_dim, angle);
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = is_value ? x[j] : rotated[j];
    hadamard8<kLanes>(x, gl, norm);
    if (!is_value) subtract_key_offset<D>(x, kv.key_offsets, kv_head, gl);
    const Codes8 codes = quantize8<BITS>(x);
    if (lg < 2) {
      const int newest = kv_len - 1;
      const KvQuantRow dst = kv_quant_row<BITS, D>(kv, page_table[newest / kv.page_size], kv_head,
                                                   newest % kv.page_size, is_value);
      store_codes<BITS, D>(codes, gl, dst.codes, dst.scales);
      if (newest == 0 && !is_value) {
        *reinterpret_cast<uint4*>(first_key_row<D>(kv, page_table[0], kv_head) + gl * 8) =
            pack8<__half>(x);
      }
    }
    __syncthreads();  // the block's own reads of the newest position come after
  }

  auto load_step = [&](int base, QuantKv ld[kLoads]) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int pos = min(base + i * kGroups + lg, sp.end - 1);  // clamped: no branch
      const int64_t page = page_table[pos / kv.page_size];
      const int slot = pos % kv.page_size;
      const KvQuantRow kr = kv_quant_row<BITS, D>(kv, page, kv_head, slot, false);
      const KvQuantRow vr = kv_quant_row<BITS, D>(kv, page, kv_head, slot, true);
      ld[i].k = load_codes<BITS, D>(kr.codes, gl);
      ld[i].v = load_codes<BITS, D>(vr.codes, gl);
      ld[i].k_scale = __half2float(kr.scales[gl / 4]);
      ld[i].v_scale = __half2float(vr.scales[gl / 4]);
    }
  };

  // q8/q6 codes are used as they are: a lane's 8 values share one scale s, so
  // q·((c - o)·s) = s·(q·c - o·Σq) and p·(c - o)·s = (p·s)·c - o·(p·s), the second term summed
  // apart (acc_offset) and taken off once at the end. q4's levels (codes8) need no offset.
  constexpr float kOffset = kv_code_offset<BITS>();
  float qv[GM][8], q_sum[GM];
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
    hadamard8<kLanes>(qv[h], gl, norm);
    q_sum[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      qv[h][i] *= scale_log2;
      q_sum[h] += qv[h][i];
    }
  }
  float m[GM], l[GM], acc[GM][8], acc_offset[GM];
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
    acc_offset[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;
  }

  // Position 0's score comes from its fp16 key (kv_quant.cuh), not from its codes: lane group
  // 0 of the split that starts the sequence computes its lanes' parts now, before the loop's
  // loads are live, and puts them in the first step in place of the codes' (each lane reads
  // back only what it wrote).
  if (sp.begin == 0 && lg == 0) {
    float first_key[8];
    unpack8<__half>(load16(first_key_row<D>(kv, page_table[0], kv_head) + gl * 8), first_key);
#pragma unroll
    for (int h = 0; h < GM; ++h) {
      float dot = 0.0f;
#pragma unroll
      for (int d = 0; d < 8; ++d) dot = fmaf(qv[h][d], first_key[d], dot);
      first_partial[h][gl] = dot;
    }
  }

  QuantKv cur[kLoads];
  load_step(sp.begin, cur);
  for (int base = sp.begin; base < end; base += kStep) {
    QuantKv next[kLoads];
    if (base + kStep < end) load_step(base + kStep, next);
    float sc[GM][kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      float kc[8];
      codes8<BITS>(cur[i].k, kc);
#pragma unroll
      for (int h = 0; h < GM; ++h) {
        float dot = 0.0f;
#pragma unroll
        for (int d = 0; d < 8; ++d) dot = fmaf(qv[h][d], kc[d], dot);
        sc[h][i] = cur[i].k_scale * (kOffset != 0.0f ? fmaf(-kOffset, q_sum[h], dot) : dot);
      }
    }
    if (base == 0 && lg == 0) {
#pragma unroll
      for (int h = 0; h < GM; ++h) sc[h][0] = first_partial[h][gl];
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
    online_softmax_step<GM, kLoads>(sc, m, l, corr, base, kGroups, lg, end);
#pragma unroll
    for (int h = 0; h < GM; ++h) {
      acc_offset[h] *= corr[h];
#pragma unroll
      for (int d = 0; d < 8; ++d) acc[h][d] *= corr[h];
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      float vc[8];
      codes8<BITS>(cur[i].v, vc);
#pragma unroll
      for (int h = 0; h < GM; ++h) {
        const float ps = sc[h][i] * cur[i].v_scale;
        acc_offset[h] += ps;
#pragma unroll
        for (int d = 0; d < 8; ++d) acc[h][d] = fmaf(ps, vc[d], acc[h][d]);
      }
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) cur[i] = next[i];
  }
#pragma unroll
  for (int h = 0; h < GM; ++h) {
    if constexpr (kOffset != 0.0f) {
#pragma unroll
      for (int d = 0; d < 8; ++d) acc[h][d] = fmaf(-kOffset, acc_offset[h], acc[h][d]);
    }
  }

  // Merge the lane groups.
  merge.store(m, l, acc, group, lg, gl);
  __syncthreads();

  const int work = group * D;
  const int64_t slot_floats = D + 2;
  for (int e = tid; e < work; e += kThreads) {
    const int h = e / D;
    const int d = e % D;
    const auto [mx, sum, a] = merge.merged(h, d);
    const int head = kv_head * group + h;
    if (sp.used == 1) {
      sm_out[h][d] = a / sum;
    } else {
      store_split_partial(partials, seq, num_heads, head, split, D, d, mx, sum, a);
    }
  }
  if (sp.used > 1) {
    int32_t* counter = counters + int64_t(seq) * kv.num_kv_heads + kv_head;
    if (!last_to_arrive(counter, sp.used)) return;
    for (int e = tid; e < work; e += kThreads) {
      const int h = e / D;
      const int d = e % D;
      const float* slots = partials + (int64_t(seq) * num_heads + kv_head * group + h) *
                                          kDecodeMaxSplits * slot_floats;
      float mx = -INFINITY;
      for (int s = 0; s < sp.used; ++s) mx = fmaxf(mx, __ldcg(slots + s * slot_floats + D));
      float sum = 0.0f, a = 0.0f;
      for (int s = 0; s < sp.used; ++s) {
        const float w = exp2f(__ldcg(slots + s * slot_floats + D) - mx);
        sum += __ldcg(slots + s * slot_floats + D + 1) * w;
        a += __ldcg(slots + s * slot_floats + d) * w;
      }
      sm_out[h][d] = a / sum;
    }
    if (tid == 0) *counter = 0;
  }
  // Un-rotate the finished rows: y = H·x, butterflies in shared memory.
#pragma unroll
  for (int stride = 1; stride < D; stride *= 2) {
    __syncthreads();
    for (int idx = tid; idx < group * (D / 2); idx += kThreads) {
      const int h = idx / (D / 2);
      const int k = idx % (D / 2);
      const int i = (k / stride) * 2 * stride + k % stride;
      const float a = sm_out[h][i];
      const float b = sm_out[h][i + stride];
      sm_out[h][i] = a + b;
      sm_out[h][i + stride] = a - b;
    }
  }
  __syncthreads();
  for (int e = tid; e < work; e += kThreads) {
    const int h = e / D;
    const int head = kv_head * group + h;
    out[int64_t(row) * q_cols + int64_t(head) * D + e % D] = from_f<T>(sm_out[h][e % D] * norm);
  }
}

}  // namespace

cudaError_t attention_decode_quantized(const Launch& l, Elem t, const void* q, const void* k,
                                       const void* v, const BatchView& batch, const KvLayerView& kv,
                                       int num_heads, float scale, void* out,
                                       const DecodeScratch& scratch, const DecodeShape& shape,
                                       const DecodeRope& rope) {
  if (batch.num_seqs <= 0) return cudaSuccess;
  if (!attention_fast_supported(kv.head_dim, num_heads, kv.num_kv_heads)) {
    return cudaErrorInvalidValue;
  }
  // Rows stored by kv_store (a check batch) were stored as they came: no rotation here then.
  if (rope.inv_freq && (shape.keys_stored_this_step ||
                        !attention_decode_rope_supported(kv.head_dim, rope.rotary_dim))) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(kDecodeMaxSplits, static_cast<unsigned>(kv.num_kv_heads),
                  static_cast<unsigned>(batch.num_seqs));
  const int group = num_heads / kv.num_kv_heads;
  const float scale_log2 = scale * 1.4426950408889634f;
  const float norm = hadamard_norm(kv.head_dim);
  HEARTH_DISPATCH_16(t, T, {
    HEARTH_DISPATCH_KV_QUANT(kv, BITS, D, {
      auto go = [&](auto gm) {
        constexpr int kGm = decltype(gm)::value;
        return launch_kernel(l, attention_decode_quant_kernel<T, BITS, D, kGm>, grid,
                             dim3(kThreads), 0, static_cast<const T*>(q), static_cast<const T*>(k),
                             static_cast<const T*>(v), batch, kv, num_heads, group, scale_log2,
                             norm, static_cast<T*>(out), scratch.partials, scratch.counters, rope,
                             !shape.keys_stored_this_step);
      };
      if (group <= 1) return go(std::integral_constant<int, 1>{});
      if (group <= 2) return go(std::integral_constant<int, 2>{});
      if (group <= 4) return go(std::integral_constant<int, 4>{});
      return go(std::integral_constant<int, 8>{});
    });
  });
}

}  // namespace hearth::kernels
