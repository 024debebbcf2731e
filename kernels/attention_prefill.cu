// Flash-style causal attention over the paged KV cache, for any number of new tokens per
// sequence (prefill, chunked prefill, several drafted tokens).
//
// Grid: (row tiles, kv heads, sequences). A block's rows are (query, head) pairs of one kv head's
// group of query heads, the heads of a query side by side: row ρ of the sequence is query ρ / G
// of head kv_head · G + ρ % G (G = heads per kv head). A block of 4 warps owns 64 rows (16 a
// warp) and walks the sequence's cached keys in tiles of 64 positions, looked up through its page
// table, double-buffered in shared memory with cp.async, so every key tile serves all G heads.
// With one head per block, a burst of short prompts after a long cached prefix (64 new tokens of
// each of 16 sequences) left half of each 128-row block idle and read every key tile G times.
// A row meets the same key tiles in the same order either way (tiles past its own position are
// fully masked and add exactly zero), so its result does not depend on the packing. Scores (Q·Kᵀ)
// and the weighted values (P·V) use mma.sync m16n8k16 with fp32 accumulators; the softmax is the
// online one (running max and sum per row, in base 2). No score matrix ever leaves registers.
// Shared-memory rows are swizzled (16-byte chunk c of row r stored at c ^ (r % 8)) so that
// ldmatrix reads are free of bank conflicts.
#include <cfloat>

#include "kernels/common.cuh"
#include "kernels/kv_quant.cuh"

namespace hearth::kernels {
namespace {

constexpr int kBlockN = 64;  // keys per tile

template <int D>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// W warps per block, 16 query rows each: the block's keys and values are loaded once for
// 16·W queries.
// BITS 16: the cache holds T, copied to shared memory with cp.async. 8/6/4: a quantized cache,
// each 8-dim chunk dequantized in registers and stored to shared memory as T (q arrives
// rotated, and the output leaves rotated).
template <class T, int D, int W, int BITS>
__global__ void __launch_bounds__(W * 32)
    attention_prefill_kernel(const T* q, BatchView batch, KvLayerView kv, int num_heads, int group,
                             float scale_log2, T* out) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kBlockM = 16 * W;
  constexpr int kThreads = 32 * W;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* s_q = reinterpret_cast<T*>(smem_raw);
  T* s_k = s_q + kBlockM * D;  // two stages
  T* s_v = s_k + 2 * kBlockN * D;

  const int seq = blockIdx.z;
  const int kv_head = blockIdx.y;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;

  pdl_launch_dependents();
  pdl_wait();

  const int q_begin = batch.seq_q_start[seq];
  const int q_len = batch.seq_q_start[seq + 1] - q_begin;
  const int q_rows = q_len * group;  // (query, head) rows of this kv head
  const int r0 = blockIdx.x * kBlockM;
  if (r0 >= q_rows) return;
  const int kv_len = batch.seq_kv_len[seq];
  const int start_pos = kv_len - q_len;
  const int kv_end = min(kv_len, start_pos + (min(r0 + kBlockM, q_rows) - 1) / group + 1);
  const int n_tiles = (kv_end + kBlockN - 1) / kBlockN;
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  const int64_t q_cols = int64_t(num_heads) * D;
  const T* cache = static_cast<const T*>(kv.base);

  // Row ρ's query and head: its q (and output) at token q_begin + ρ / G, column (kv_head · G +
  // ρ % G) · D, so consecutive rows read consecutive heads of one token.
  auto row_offset = [&](int rho) {
    return int64_t(q_begin + rho / group) * q_cols + int64_t(kv_head * group + rho % group) * D;
  };
  for (int c = tid; c < kBlockM * kChunks; c += kThreads) {
    const int row = c / kChunks;
    const int ch = c % kChunks;
    const bool valid = r0 + row < q_rows;
    const T* src = valid ? q + row_offset(r0 + row) + ch * 8 : q;
    cp_async16(s_q + swizzle<D>(row, ch), src, valid);
  }
  cp_async_commit();

  auto load_tile = [&](int tile, int stage) {
    T* dk = s_k + stage * kBlockN * D;
    T* dv = s_v + stage * kBlockN * D;
    for (int c = tid; c < kBlockN * kChunks; c += kThreads) {
      const int row = c / kChunks;
      const int ch = c % kChunks;
      const int pos = tile * kBlockN + row;
      const bool valid = pos < kv_len;
      if constexpr (BITS != 16) {
        uint4 kq = make_uint4(0, 0, 0, 0), vq = make_uint4(0, 0, 0, 0);
        if (valid) {
          const int64_t page = page_table[pos / kv.page_size];
          const int slot = pos % kv.page_size;
          const KvQuantRow kr = kv_quant_row<BITS, D>(kv, page, kv_head, slot, false);
          const KvQuantRow vr = kv_quant_row<BITS, D>(kv, page, kv_head, slot, true);
          float x[8];
          dequant8<BITS>(load_codes<BITS, D>(kr.codes, ch), __half2float(kr.scales[ch / 4]), x);
          kq = pack8<T>(x);
          dequant8<BITS>(load_codes<BITS, D>(vr.codes, ch), __half2float(vr.scales[ch / 4]), x);
          vq = pack8<T>(x);
        }
        *reinterpret_cast<uint4*>(dk + swizzle<D>(row, ch)) = kq;
        *reinterpret_cast<uint4*>(dv + swizzle<D>(row, ch)) = vq;
        continue;
      }
      const T* src_k = cache;
      const T* src_v = cache;
      if (valid) {
        const int64_t page = page_table[pos / kv.page_size];
        const int slot = pos % kv.page_size;
        const int64_t offset =
            page * kv.page_stride + (int64_t(kv_head) * kv.page_size + slot) * D + ch * 8;
        src_k = cache + offset;
        src_v = cache + kv.v_offset + offset;
      }
      cp_async16(dk + swizzle<D>(row, ch), src_k, valid);
      cp_async16(dv + swizzle<D>(row, ch), src_v, valid);
    }
    if constexpr (BITS != 16) {
      // The sequence's first key is read in fp16 (kv_quant.cuh), not from its codes: the
      // threads that wrote row 0 of tile 0 above (c = tid < kChunks) overwrite it, outside the
      // loop so that other chunks pay nothing.
      if (tile == 0 && tid < kChunks) {
        float x[8];
        unpack8<__half>(load16(first_key_row<D>(kv, page_table[0], kv_head) + tid * 8), x);
        *reinterpret_cast<uint4*>(dk + swizzle<D>(0, tid)) = pack8<T>(x);
      }
    }
  };
  load_tile(0, 0);
  cp_async_commit();

  uint32_t q_frag[D / 16][4];
  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};
  // Positions of the thread's rows g and g + 8 of its warp, and of the warp's first row.
  const int q_pos[2] = {start_pos + (r0 + warp * 16 + g) / group,
                        start_pos + (r0 + warp * 16 + g + 8) / group};
  const int warp_first_pos = start_pos + (r0 + warp * 16) / group;

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {
      load_tile(j + 1, (j + 1) & 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const int row = warp * 16 + (lane & 15);
        ldmatrix_x4(q_frag[kk], s_q + swizzle<D>(row, 2 * kk + (lane >> 4)));
      }
    }
    const T* ck = s_k + (j & 1) * kBlockN * D;
    const T* cv = s_v + (j & 1) * kBlockN * D;

    // S = Q·Kᵀ for 16 rows × 64 keys.
    float s[8][4];
#pragma unroll
    for (int i = 0; i < 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t r[4];
        const int pos = np * 16 + (lane & 7) + ((lane >> 4) << 3);
        ldmatrix_x4(r, ck + swizzle<D>(pos, 2 * kk + ((lane >> 3) & 1)));
        mma_16816<T>(s[2 * np], q_frag[kk], r[0], r[1]);
        mma_16816<T>(s[2 * np + 1], q_frag[kk], r[2], r[3]);
      }
    }

    // Scale to base 2 and mask (causal, and keys past the end).
    const int key0 = j * kBlockN;
    const bool need_mask = key0 + kBlockN - 1 > warp_first_pos || key0 + kBlockN > kv_len;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float v = s[nt][c] * scale_log2;
        if (need_mask) {
          const int key = key0 + nt * 8 + 2 * t + (c & 1);
          const int qp = q_pos[c >= 2 ? 1 : 0];
          if (key > qp || key >= kv_len) v = -INFINITY;
        }
        s[nt][c] = v;
      }
    }

    // Online softmax.
    float new_max[2] = {row_max[0], row_max[1]};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      new_max[0] = fmaxf(new_max[0], fmaxf(s[nt][0], s[nt][1]));
      new_max[1] = fmaxf(new_max[1], fmaxf(s[nt][2], s[nt][3]));
    }
    float base[2], corr[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      new_max[i] = fmaxf(new_max[i], __shfl_xor_sync(0xffffffffu, new_max[i], 1));
      new_max[i] = fmaxf(new_max[i], __shfl_xor_sync(0xffffffffu, new_max[i], 2));
      base[i] = new_max[i] == -INFINITY ? 0.0f : new_max[i];
      corr[i] = exp2f(row_max[i] - base[i]);
      row_max[i] = new_max[i];
      row_sum[i] *= corr[i];
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][0] *= corr[0];
      o[dt][1] *= corr[0];
      o[dt][2] *= corr[1];
      o[dt][3] *= corr[1];
    }
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      s[nt][0] = exp2f(s[nt][0] - base[0]);
      s[nt][1] = exp2f(s[nt][1] - base[0]);
      s[nt][2] = exp2f(s[nt][2] - base[1]);
      s[nt][3] = exp2f(s[nt][3] - base[1]);
      row_sum[0] += s[nt][0] + s[nt][1];
      row_sum[1] += s[nt][2] + s[nt][3];
    }

    // O += P·V.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t p[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                             pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t r[4];
        const int pos = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        ldmatrix_x4_trans(r, cv + swizzle<D>(pos, 2 * dp + (lane >> 4)));
        mma_16816<T>(o[2 * dp], p, r[0], r[1]);
        mma_16816<T>(o[2 * dp + 1], p, r[2], r[3]);
      }
    }
    __syncthreads();  // this stage is refilled two iterations on
  }

  float inv[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 1);
    row_sum[i] += __shfl_xor_sync(0xffffffffu, row_sum[i], 2);
    inv[i] = row_sum[i] > 0.0f ? 1.0f / row_sum[i] : 0.0f;
  }
  const int row_a = r0 + warp * 16 + g;
  const int row_b = row_a + 8;
  T* out_a = out + (row_a < q_rows ? row_offset(row_a) : 0);
  T* out_b = out + (row_b < q_rows ? row_offset(row_b) : 0);
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    const int d = dt * 8 + 2 * t;
    if (row_a < q_rows) {
      *reinterpret_cast<uint32_t*>(out_a + d) = pack2<T>(o[dt][0] * inv[0], o[dt][1] * inv[0]);
    }
    if (row_b < q_rows) {
      *reinterpret_cast<uint32_t*>(out_b + d) = pack2<T>(o[dt][2] * inv[1], o[dt][3] * inv[1]);
    }
  }
}

template <class T, int D, int W>
constexpr size_t prefill_smem_bytes() {
  return size_t(16 * W + 4 * kBlockN) * D * sizeof(T);
}

template <class T, int D, int W, int BITS>
cudaError_t allow_prefill_smem() {
  return cudaFuncSetAttribute(attention_prefill_kernel<T, D, W, BITS>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(prefill_smem_bytes<T, D, W>()));
}

template <class T, int D, int W, int BITS>
cudaError_t launch_prefill(const Launch& l, const void* q, const BatchView& batch,
                           const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                           void* out) {
  constexpr size_t smem = prefill_smem_bytes<T, D, W>();
  if (kv.num_kv_heads <= 0 || num_heads % kv.num_kv_heads != 0) return cudaErrorInvalidValue;
  const int group = num_heads / kv.num_kv_heads;
  const dim3 grid(static_cast<unsigned>(ceil_div(int64_t(max_q_len) * group, 16 * W)),
                  static_cast<unsigned>(kv.num_kv_heads), static_cast<unsigned>(batch.num_seqs));
  const float scale_log2 = scale * 1.4426950408889634f;
  return launch_kernel(l, attention_prefill_kernel<T, D, W, BITS>, grid, dim3(W * 32), smem,
                       static_cast<const T*>(q), batch, kv, num_heads, group, scale_log2,
                       static_cast<T*>(out));
}

template <class T, int BITS>
cudaError_t allow_bits() {
  cudaError_t e = allow_prefill_smem<T, 64, 4, BITS>();
  if (e == cudaSuccess) e = allow_prefill_smem<T, 128, 4, BITS>();
  if (e == cudaSuccess) e = allow_prefill_smem<T, 64, 8, BITS>();
  if (e == cudaSuccess) e = allow_prefill_smem<T, 128, 8, BITS>();
  return e;
}

template <class T>
cudaError_t allow_all() {
  cudaError_t e = allow_bits<T, 16>();
  if (e == cudaSuccess) e = allow_bits<T, 8>();
  if (e == cudaSuccess) e = allow_bits<T, 6>();
  if (e == cudaSuccess) e = allow_bits<T, 4>();
  return e;
}

template <class T, int D, int BITS>
cudaError_t launch_warps(const Launch& l, const void* q, const BatchView& batch,
                         const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                         void* out, int warps) {
  if (warps == 8) {
    return launch_prefill<T, D, 8, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out);
  }
  return launch_prefill<T, D, 4, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out);
}

}  // namespace

cudaError_t prepare_attention_prefill() {
  cudaError_t e = allow_all<__half>();
  if (e == cudaSuccess) e = allow_all<__nv_bfloat16>();
  return e;
}

cudaError_t attention_prefill(const Launch& l, Elem t, const void* q, const BatchView& batch,
                              const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                              void* out, int warps) {
  if (max_q_len <= 0 || batch.num_seqs <= 0) return cudaSuccess;
  if (kv.head_dim != 64 && kv.head_dim != 128) return cudaErrorInvalidValue;
  HEARTH_DISPATCH_16(t, T, {
    if (kv.bits != 16) {
      HEARTH_DISPATCH_KV_QUANT(kv, BITS, D, {
        return launch_warps<T, D, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out, warps);
      });
    }
    if (kv.head_dim == 64) {
      return launch_warps<T, 64, 16>(l, q, batch, kv, num_heads, scale, max_q_len, out, warps);
    }
    return launch_warps<T, 128, 16>(l, q, batch, kv, num_heads, scale, max_q_len, out, warps);
  });
}

}  // namespace hearth::kernels
