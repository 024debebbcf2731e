// Flash-style causal attention over the paged KV cache, for any number of new tokens per
// sequence (prefill, chunked prefill, several drafted tokens).
//
// Grid: (kv heads, row blocks, sequences), heaviest row blocks first. A block's rows are (query,
// head) pairs of one kv head's group of query heads (kernels/attention_prefill_tile.cuh). With one
// head per block, a burst of short prompts after a long cached prefix (64 new tokens of each of 16
// sequences) left half of each block idle and read every key tile G times. A block of W warps owns
// 16·MT·W rows (MT MMA tiles of 16 rows a warp) and walks the sequence's cached keys in tiles of 64
// positions, looked up through its page table, double-buffered in shared memory with cp.async, so
// every key tile serves all G heads. Each key and value fragment a warp loads (ldmatrix) serves its
// MT row tiles: two tiles halve the shared-memory reads per MMA and give the softmax two
// independent chains.
//
// A row meets the same key tiles in the same order whatever the block (tiles past its own
// position are fully masked and add exactly zero), so its bits depend neither on W and MT nor on
// the other sequences. Scores (Q·Kᵀ) and the weighted values (P·V) use mma.sync m16n8k16 with
// fp32 accumulators; the softmax is the online one (running max and sum per row, in base 2). No
// score matrix ever leaves registers.
// Shared-memory rows are swizzled (prefill::swizzle) so that ldmatrix reads are free of bank
// conflicts.
//
// On Hopper, 16-bit caches can take kernels/attention_prefill_wgmma.cu instead
// (PrefillBlock::warpgroup_mma).
#include "kernels/attention_prefill_tile.cuh"
#include "kernels/common.cuh"
#include "kernels/kv_quant.cuh"

namespace hearth::kernels {

// The warpgroup-MMA kernel (attention_prefill_wgmma.cu, built for sm_90a).
cudaError_t prepare_attention_prefill_wgmma();
cudaError_t attention_prefill_wgmma(const Launch& l, Elem t, const void* q, const BatchView& batch,
                                    const KvLayerView& kv, int num_heads, float scale,
                                    int max_q_len, void* out, int warpgroups);

namespace {

using prefill::kBlockN;
using prefill::swizzle;

// W warps per block, 16·MT rows each: the block's keys and values are loaded once for 16·MT·W
// rows. A row's arithmetic (the MMAs over the same key tiles in the same order, the online
// softmax) does not depend on W or MT, so neither changes its bits.
// BITS 16: the cache holds T, copied to shared memory with cp.async. 8/6/4: a quantized cache,
// each 8-dim chunk dequantized in registers and stored to shared memory as T (q arrives
// rotated, and the output leaves rotated).
template <class T, int D, int W, int MT, int BITS>
__global__ void __launch_bounds__(W * 32)
    attention_prefill_kernel(const T* q, BatchView batch, KvLayerView kv, int num_heads, int group,
                             float scale_log2, T* out) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kBlockM = 16 * MT * W;
  constexpr int kThreads = 32 * W;
  constexpr int kWarpRows = 16 * MT;
  // q's fragments stay in registers unless they would crowd out the accumulators (two tiles of
  // 128 dimensions: o alone takes 128 registers); then each key tile re-reads them.
  constexpr bool kQInRegisters = MT * D <= 128;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* s_q = reinterpret_cast<T*>(smem_raw);
  T* s_k = s_q + kBlockM * D;  // two stages
  T* s_v = s_k + 2 * kBlockN * D;

  const int seq = blockIdx.z;
  const int kv_head = blockIdx.x;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

  pdl_launch_dependents();
  pdl_wait();

  const prefill::BlockRows rows = prefill::block_rows<kBlockM>(batch, seq, group);
  if (rows.empty()) return;
  const int kv_len = rows.kv_len;
  const int n_tiles = rows.n_tiles;
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  const T* cache = static_cast<const T*>(kv.base);

  prefill::stage_q<T, D, kBlockM, kThreads>(s_q, q, rows, kv_head, group, num_heads);
  cp_async_commit();

  // A thread copies one 16-byte chunk of every kRowStep-th row of a tile, so its chunk, its
  // rows' swizzle (row & 7 is the same for all of them) and its offset within a page are fixed;
  // the page and slot of its first row take one division per tile, the rest follow by
  // addition (with a division per row, a row's copies took ~60 instructions).
  static_assert(kThreads % kChunks == 0 && (kThreads / kChunks) % 8 == 0);
  constexpr int kRowStep = kThreads / kChunks;
  const int my_chunk = tid % kChunks;
  const int my_row = tid / kChunks;
  const int64_t head_offset = int64_t(kv_head) * kv.page_size;
  auto load_tile = [&](int tile, int stage) {
    T* dk = s_k + stage * kBlockN * D + swizzle<D>(my_row, my_chunk);
    T* dv = s_v + stage * kBlockN * D + swizzle<D>(my_row, my_chunk);
    const int first = tile * kBlockN + my_row;
    int page_index = first / kv.page_size;
    int slot = first - page_index * kv.page_size;
    // Unrolled for the copies; the dequantizing rows of a quantized cache stay a loop, which
    // unrolled would double the kernel's code.
#pragma unroll(BITS == 16 ? kBlockN / kRowStep : 1)
    for (int row = 0; row < kBlockN; row += kRowStep) {
      const int pos = first + row;
      const bool valid = pos < kv_len;
      if constexpr (BITS != 16) {
        uint4 kq = make_uint4(0, 0, 0, 0), vq = make_uint4(0, 0, 0, 0);
        if (valid) {
          const int64_t page = page_table[page_index];
          const KvQuantRow kr = kv_quant_row<BITS, D>(kv, page, kv_head, slot, false);
          const KvQuantRow vr = kv_quant_row<BITS, D>(kv, page, kv_head, slot, true);
          float x[8];
          dequant8<BITS>(load_codes<BITS, D>(kr.codes, my_chunk),
                         __half2float(kr.scales[my_chunk / 4]), x);
          kq = pack8<T>(x);
          dequant8<BITS>(load_codes<BITS, D>(vr.codes, my_chunk),
                         __half2float(vr.scales[my_chunk / 4]), x);
          vq = pack8<T>(x);
        }
        *reinterpret_cast<uint4*>(dk + row * D) = kq;
        *reinterpret_cast<uint4*>(dv + row * D) = vq;
      } else {
        prefill::copy_kv_chunk<T, D>(dk + row * D, dv + row * D, cache, kv, page_table, page_index,
                                     head_offset, slot, my_chunk, valid);
      }
      prefill::advance_slot(page_index, slot, kRowStep, kv.page_size);
    }
    if constexpr (BITS != 16) {
      // The sequence's first key is read in fp16 (kv_quant.cuh), not from its codes: the
      // threads that wrote row 0 of tile 0 above (my_row = 0) overwrite it, outside the loop so
      // that other rows pay nothing.
      if (tile == 0 && tid < kChunks) {
        float x[8];
        unpack8<__half>(load16(first_key_row<D>(kv, page_table[0], kv_head) + tid * 8), x);
        *reinterpret_cast<uint4*>(s_k + swizzle<D>(0, tid)) = pack8<T>(x);
      }
    }
  };
  load_tile(0, 0);
  cp_async_commit();

  uint32_t q_frag[kQInRegisters ? MT : 1][kQInRegisters ? D / 16 : 1][4];
  float o[MT][D / 8][4];
#pragma unroll
  for (int m = 0; m < MT; ++m) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i) o[m][i][0] = o[m][i][1] = o[m][i][2] = o[m][i][3] = 0.0f;
  }
  prefill::TileSoftmax softmax[MT];
#pragma unroll
  for (int m = 0; m < MT; ++m) softmax[m].start(rows, rows.r0 + warp * kWarpRows + m * 16, group);
  auto load_q = [&](uint32_t frag[4], int m, int kk) {
    prefill::load_q<D>(frag, s_q, warp * kWarpRows + m * 16, kk);
  };

  for (int j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) {
      load_tile(j + 1, (j + 1) & 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    if constexpr (kQInRegisters) {
      if (j == 0) {
#pragma unroll
        for (int m = 0; m < MT; ++m) {
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) load_q(q_frag[m][kk], m, kk);
        }
      }
    }
    const T* ck = s_k + (j & 1) * kBlockN * D;
    const T* cv = s_v + (j & 1) * kBlockN * D;

    // S = Q·Kᵀ for 16 rows × 64 keys per tile, each key fragment serving every tile.
    float s[MT][8][4];
#pragma unroll
    for (int m = 0; m < MT; ++m) {
#pragma unroll
      for (int i = 0; i < 8; ++i) s[m][i][0] = s[m][i][1] = s[m][i][2] = s[m][i][3] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qk[kQInRegisters ? 1 : MT][4];
      if constexpr (!kQInRegisters) {
#pragma unroll
        for (int m = 0; m < MT; ++m) load_q(qk[m], m, kk);
      }
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t r[4];
        const int pos = np * 16 + (lane & 7) + ((lane >> 4) << 3);
        ldmatrix_x4(r, ck + swizzle<D>(pos, 2 * kk + ((lane >> 3) & 1)));
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          // q from registers, or this kk's fragments re-read from shared memory.
          const uint32_t* a = kQInRegisters ? q_frag[m][kk] : qk[kQInRegisters ? 0 : m];
          mma_16816<T>(s[m][2 * np], a, r[0], r[1]);
          mma_16816<T>(s[m][2 * np + 1], a, r[2], r[3]);
        }
      }
    }

    uint32_t p[MT][4][4];  // P in fp16/bf16, the A fragments of P·V
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      softmax[m].template step<T>(s[m], o[m], p[m], j * kBlockN, kv_len, scale_log2);
    }

    // O += P·V, each value fragment serving every tile.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t r[4];
        const int pos = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        ldmatrix_x4_trans(r, cv + swizzle<D>(pos, 2 * dp + (lane >> 4)));
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          mma_16816<T>(o[m][2 * dp], p[m][kk], r[0], r[1]);
          mma_16816<T>(o[m][2 * dp + 1], p[m][kk], r[2], r[3]);
        }
      }
    }
    __syncthreads();  // this stage is refilled two iterations on
  }

#pragma unroll
  for (int m = 0; m < MT; ++m) {
    softmax[m].template store<T, D>(o[m], rows, rows.r0 + warp * kWarpRows + m * 16, kv_head, group,
                                    num_heads, out);
  }
}

template <class T, int D, int W, int MT>
constexpr size_t prefill_smem_bytes() {
  return size_t(16 * MT * W + 4 * kBlockN) * D * sizeof(T);
}

template <class T, int D, int W, int MT, int BITS>
cudaError_t allow_prefill_smem() {
  return cudaFuncSetAttribute(attention_prefill_kernel<T, D, W, MT, BITS>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(prefill_smem_bytes<T, D, W, MT>()));
}

template <class T, int D, int W, int MT, int BITS>
cudaError_t launch_prefill(const Launch& l, const void* q, const BatchView& batch,
                           const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                           void* out) {
  constexpr size_t smem = prefill_smem_bytes<T, D, W, MT>();
  if (kv.num_kv_heads <= 0 || num_heads % kv.num_kv_heads != 0) return cudaErrorInvalidValue;
  const int group = num_heads / kv.num_kv_heads;
  const int64_t row_blocks = attention_prefill_row_blocks({W, MT}, max_q_len, group);
  if (row_blocks > 65535) return cudaErrorInvalidValue;  // grid.y
  const dim3 grid(static_cast<unsigned>(kv.num_kv_heads), static_cast<unsigned>(row_blocks),
                  static_cast<unsigned>(batch.num_seqs));
  const float scale_log2 = scale * 1.4426950408889634f;
  return launch_kernel(l, attention_prefill_kernel<T, D, W, MT, BITS>, grid, dim3(W * 32), smem,
                       static_cast<const T*>(q), batch, kv, num_heads, group, scale_log2,
                       static_cast<T*>(out));
}

// Every (warps, tiles per warp) the backend may choose: 4 or 8 warps, 1 or 2 tiles.
template <class T, int D, int BITS>
cudaError_t allow_blocks() {
  cudaError_t e = allow_prefill_smem<T, D, 4, 1, BITS>();
  if (e == cudaSuccess) e = allow_prefill_smem<T, D, 8, 1, BITS>();
  if (e == cudaSuccess) e = allow_prefill_smem<T, D, 4, 2, BITS>();
  if (e == cudaSuccess) e = allow_prefill_smem<T, D, 8, 2, BITS>();
  return e;
}

template <class T, int BITS>
cudaError_t allow_bits() {
  cudaError_t e = allow_blocks<T, 64, BITS>();
  if (e == cudaSuccess) e = allow_blocks<T, 128, BITS>();
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
cudaError_t launch_block(const Launch& l, const void* q, const BatchView& batch,
                         const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                         void* out, PrefillBlock block) {
  const bool two = block.warp_tiles == 2;
  if (block.warps == 8) {
    return two ? launch_prefill<T, D, 8, 2, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out)
               : launch_prefill<T, D, 8, 1, BITS>(l, q, batch, kv, num_heads, scale, max_q_len,
                                                  out);
  }
  return two ? launch_prefill<T, D, 4, 2, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out)
             : launch_prefill<T, D, 4, 1, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out);
}

}  // namespace

int64_t attention_prefill_row_blocks(PrefillBlock block, int max_q_len, int group) {
  return ceil_div(int64_t(max_q_len) * group, 16 * block.warp_tiles * block.warps);
}

cudaError_t prepare_attention_prefill() {
  cudaError_t e = allow_all<__half>();
  if (e == cudaSuccess) e = allow_all<__nv_bfloat16>();
  if (e == cudaSuccess) e = prepare_attention_prefill_wgmma();
  return e;
}

cudaError_t attention_prefill(const Launch& l, Elem t, const void* q, const BatchView& batch,
                              const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                              void* out, PrefillBlock block) {
  if (max_q_len <= 0 || batch.num_seqs <= 0) return cudaSuccess;
  if (kv.head_dim != 64 && kv.head_dim != 128) return cudaErrorInvalidValue;
  if (block.warpgroup_mma && kv.bits == 16) {
    if ((block.warps != 4 && block.warps != 8) || block.warp_tiles != 1) {
      return cudaErrorInvalidValue;
    }
    return attention_prefill_wgmma(l, t, q, batch, kv, num_heads, scale, max_q_len, out,
                                   block.warps / 4);
  }
  HEARTH_DISPATCH_16(t, T, {
    if (kv.bits != 16) {
      HEARTH_DISPATCH_KV_QUANT(kv, BITS, D, {
        return launch_block<T, D, BITS>(l, q, batch, kv, num_heads, scale, max_q_len, out, block);
      });
    }
    if (kv.head_dim == 64) {
      return launch_block<T, 64, 16>(l, q, batch, kv, num_heads, scale, max_q_len, out, block);
    }
    return launch_block<T, 128, 16>(l, q, batch, kv, num_heads, scale, max_q_len, out, block);
  });
}

}  // namespace hearth::kernels
