// Causal prefill attention over a 16-bit paged KV cache on Hopper's warpgroup MMA (wgmma, sm_90a;
// kernels/wgmma.cuh). The grid, the rows and the key tiles are kernels/attention_prefill.cu's: a
// block's rows are (query, head) pairs of one kv head's group (kernels/attention_prefill_tile.cuh),
// heaviest first, and it walks the sequence's keys in tiles of 64 positions through the page
// table, copied to shared memory by cp.async (three stages here). What changes is the multiply:
// each warpgroup (4 warps) takes 64 rows, and
// - S = Q·Kᵀ is D/16 wgmma m64n64k16, q's A fragments in registers (loaded once), the key tile
//   the K-major B operand in shared memory: one instruction where mma.sync needed 32, and no
//   ldmatrix of the keys;
// - O += P·V is 4 wgmma m64nDk16, P straight from S's accumulators (wgmma's accumulator layout
//   per warp is mma.sync's C layout, whose pairs are already P·V's A fragments), the value tile
//   read N-major (transposed by the instruction).
// The softmax between them is the mma.sync kernel's, per warp's 16 rows, in FlashAttention-3's
// order within a warpgroup: o is rescaled, the next tile's S and this tile's P·V are issued
// together, and the next tile's softmax runs while P·V does. No ordinary instruction writes an
// accumulator, or reads one, while its group is in flight (S is overwritten by its first MMA,
// the last tile is a step of its own), so ptxas keeps the groups asynchronous (no C7514/C7515).
// That did not make it faster (H200, Llama-3-8B shape, two warpgroups: 181.5 µs a layer at 2,048
// tokens against 181.9 when ptxas serialized every group, and 135 for the mma.sync kernel's
// 8 × 2). Nsight Compute on one launch: one block of 8 warps per multiprocessor (195 registers),
// issue slots 25 % busy, the tensor pipe 22 %, and 31 % of the stall cycles waiting on global
// loads of which only 4 of each sector's 32 bytes are used: each thread's page-table reads for its
// copies (prefill::copy_kv_chunk). A producer warp that walks the pages once per tile and issues
// the copies (or TMA) for the others is the next step, not more reordering of the MMAs.
//
// The tiles lie in shared memory as wgmma's core matrices without swizzle: 8 keys × 8 dimensions
// (16 bytes a key) as 128 contiguous bytes, a key group's D/8 core matrices side by side. The
// same bytes are then the K-major B of Q·Kᵀ (leading offset: 128 bytes from one 8-dimension
// chunk to the next; stride: D·16 bytes from one 8-key group to the next) and the N-major B of
// P·V (leading: D·16 bytes between key groups; stride: 128 bytes between dimension chunks), and
// a tile's copy is linear: 16-byte chunk i of the tile goes to byte 16·i, a warp's copies fill
// whole 128-byte lines of shared memory.
//
// A row meets the same key tiles in the same order in every block (tiles past its position add
// exactly zero), so its bits depend neither on the warpgroups of its block nor on the other
// sequences; against the mma.sync kernel they may differ in the last place (another MMA unit).
#include <type_traits>

#include "kernels/attention_prefill_tile.cuh"
#include "kernels/common.cuh"
#include "kernels/wgmma.cuh"

namespace hearth::kernels {
namespace {

using prefill::kBlockN;

constexpr int kStages = 3;  // key and value tiles: being read, being multiplied next, being copied

template <class T, int D, int WG>
__global__ void __launch_bounds__(WG * 128, 1)
    attention_prefill_wgmma_kernel(const T* q, BatchView batch, KvLayerView kv, int num_heads,
                                   int group, float scale_log2, T* out) {
#if HEARTH_WGMMA
  constexpr int kChunks = D / 8;  // 16-byte chunks per key
  constexpr int kBlockM = 64 * WG;
  constexpr int kThreads = 128 * WG;
  constexpr int kTile = kBlockN * D;        // elements of a key (or value) tile
  constexpr uint32_t kGroupBytes = D * 16;  // one 8-key group's core matrices
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* s_q = reinterpret_cast<T*>(smem_raw);
  T* s_k = s_q + kBlockM * D;  // kStages stages
  T* s_v = s_k + kStages * kTile;

  const int seq = blockIdx.z;
  const int kv_head = blockIdx.x;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;

  pdl_launch_dependents();
  pdl_wait();

  const prefill::BlockRows rows = prefill::block_rows<kBlockM>(batch, seq, group);
  if (rows.empty()) return;
  const int kv_len = rows.kv_len;
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  const T* cache = static_cast<const T*>(kv.base);

  prefill::stage_q<T, D, kBlockM, kThreads>(s_q, q, rows, kv_head, group, num_heads);
  cp_async_commit();

  // Chunk i = tid + n·kThreads of a tile is key 8·(i / D) + i % 8, dimensions 8·((i / 8) % (D / 8))
  // on: so a thread's chunk and key within its group are fixed, its keys step by kKeyStep, and
  // its page and slot take one division per tile, the rest following by addition.
  static_assert(kThreads % D == 0);
  constexpr int kKeyStep = 8 * kThreads / D;
  constexpr int kCopies = kBlockN / kKeyStep;
  const int my_key = 8 * (tid / D) + tid % 8;
  const int my_chunk = (tid / 8) % kChunks;
  const int64_t head_offset = int64_t(kv_head) * kv.page_size;
  auto load_tile = [&](int tile, int stage) {
    T* dk = s_k + stage * kTile + tid * 8;
    T* dv = s_v + stage * kTile + tid * 8;
    const int first = tile * kBlockN + my_key;
    int page_index = first / kv.page_size;
    int slot = first - page_index * kv.page_size;
#pragma unroll
    for (int n = 0; n < kCopies; ++n) {
      const bool valid = first + n * kKeyStep < kv_len;
      prefill::copy_kv_chunk<T, D>(dk + n * kThreads * 8, dv + n * kThreads * 8, cache, kv,
                                   page_table, page_index, head_offset, slot, my_chunk, valid);
      prefill::advance_slot(page_index, slot, kKeyStep, kv.page_size);
    }
  };
  load_tile(0, 0);
  cp_async_commit();

  const int warp_row = rows.r0 + warp * 16;  // the warp's 16 rows of its warpgroup's 64
  uint32_t q_frag[D / 16][4];
  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  prefill::TileSoftmax softmax;
  softmax.start(rows, warp_row, group);

  // S = Q·Kᵀ over the key tile in `stage`, issued (the first MMA overwrites s: no instruction
  // writes the accumulators of an MMA group, which would make ptxas serialize the group).
  float s[8][4];
  auto scores = [&](int stage) {
    const T* ck = s_k + stage * kTile;
    wgmma::mma_m64n64k16<T, 0, 0>(s, q_frag[0], wgmma::b_descriptor(ck, 128, kGroupBytes));
#pragma unroll
    for (int kk = 1; kk < D / 16; ++kk) {  // dimensions 16·kk ..: chunks 2·kk and 2·kk + 1
      wgmma::mma_m64n64k16<T, 0, 1>(s, q_frag[kk],
                                    wgmma::b_descriptor(ck + kk * 2 * 64, 128, kGroupBytes));
    }
  };

  // Tile j, whose P (p_j) and rescaling factor (corr) are known: o is rescaled, then the next
  // tile's S and this tile's P·V are issued together, and the next tile's softmax runs while P·V
  // does (FlashAttention-3's order within a warpgroup).
  float corr[2];
  // kNext: tile j is not the last (a compile-time flag, so that every path through a step issues
  // and waits for the same groups: ptxas serializes the groups where it cannot tell).
  auto step = [&](auto has_next, int j, uint32_t(&p_j)[4][4], uint32_t(&p_next)[4][4]) {
    constexpr bool next = decltype(has_next)::value;
    if constexpr (next) {
      cp_async_wait<0>();  // tile j + 1
      wgmma::fence_shared_for_async();
      // Tile j + 1 is visible, and every warpgroup is past P·V of tile j − 1, whose stage
      // (j + 2) % 3 the copies of tile j + 2 now refill.
      __syncthreads();
      if (j + 2 < rows.n_tiles) load_tile(j + 2, (j + 2) % kStages);
      cp_async_commit();
    }
    prefill::TileSoftmax::rescale(o, corr);
    wgmma::fence_operands(o);
    wgmma::fence_operands(p_j);
    wgmma::fence();
    if constexpr (next) {
      scores((j + 1) % kStages);
      wgmma::commit();
      wgmma::fence();  // each group its own arrive, so that ptxas keeps them apart
    }
    const T* cv = s_v + (j % kStages) * kTile;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {  // keys 16·kk ..: groups 2·kk and 2·kk + 1
      const uint64_t b = wgmma::b_descriptor(cv + kk * 2 * kChunks * 64, kGroupBytes, 128);
      if constexpr (D == 128) {
        wgmma::mma_m64n128k16<T, 1>(o, p_j[kk], b);
      } else {
        wgmma::mma_m64n64k16<T, 1>(o, p_j[kk], b);
      }
    }
    wgmma::commit();
    if constexpr (next) {
      wgmma::wait<1>();  // the next tile's S
      wgmma::fence_operands(s);
      softmax.template weigh<T>(s, p_next, corr, (j + 1) * kBlockN, kv_len, scale_log2);
    }
    wgmma::wait<0>();  // P·V
    wgmma::fence_operands(o);
  };

  cp_async_wait<0>();  // q and tile 0
  wgmma::fence_shared_for_async();
  __syncthreads();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) prefill::load_q<D>(q_frag[kk], s_q, warp * 16, kk);
  if (1 < rows.n_tiles) load_tile(1, 1);
  cp_async_commit();
  wgmma::fence();
  scores(0);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(s);
  uint32_t p_a[4][4], p_b[4][4];
  softmax.template weigh<T>(s, p_a, corr, 0, kv_len, scale_log2);
  // Two tiles an iteration, so that the P arrays swap roles without copies; the last tile apart.
  constexpr std::true_type kMore;
  constexpr std::false_type kLast;
  int j = 0;
  for (; j + 2 < rows.n_tiles; j += 2) {
    step(kMore, j, p_a, p_b);
    step(kMore, j + 1, p_b, p_a);
  }
  if (j + 1 < rows.n_tiles) {
    step(kMore, j, p_a, p_b);
    step(kLast, j + 1, p_b, p_a);
  } else {
    step(kLast, j, p_a, p_b);
  }

  softmax.template store<T, D>(o, rows, warp_row, kv_head, group, num_heads, out);
#else
  __trap();  // launched only where wgmma_supported()
#endif
}

template <class T, int D, int WG>
constexpr size_t smem_bytes() {
  return size_t(64 * WG + 2 * kStages * kBlockN) * D * sizeof(T);
}

template <class T, int D, int WG>
cudaError_t allow_smem() {
  return cudaFuncSetAttribute(attention_prefill_wgmma_kernel<T, D, WG>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(smem_bytes<T, D, WG>()));
}

template <class T>
cudaError_t allow_all() {
  cudaError_t e = allow_smem<T, 64, 1>();
  if (e == cudaSuccess) e = allow_smem<T, 64, 2>();
  if (e == cudaSuccess) e = allow_smem<T, 128, 1>();
  if (e == cudaSuccess) e = allow_smem<T, 128, 2>();
  return e;
}

template <class T, int D, int WG>
cudaError_t launch(const Launch& l, const void* q, const BatchView& batch, const KvLayerView& kv,
                   int num_heads, float scale, int max_q_len, void* out) {
  const int group = num_heads / kv.num_kv_heads;
  const int64_t row_blocks = attention_prefill_row_blocks({4 * WG, 1}, max_q_len, group);
  if (row_blocks > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(kv.num_kv_heads), static_cast<unsigned>(row_blocks),
                  static_cast<unsigned>(batch.num_seqs));
  return launch_kernel(l, attention_prefill_wgmma_kernel<T, D, WG>, grid, dim3(WG * 128),
                       smem_bytes<T, D, WG>(), static_cast<const T*>(q), batch, kv, num_heads,
                       group, scale * 1.4426950408889634f, static_cast<T*>(out));
}

}  // namespace

cudaError_t prepare_attention_prefill_wgmma() {
  if (!wgmma_supported()) return cudaSuccess;
  cudaError_t e = allow_all<__half>();
  if (e == cudaSuccess) e = allow_all<__nv_bfloat16>();
  return e;
}

cudaError_t attention_prefill_wgmma(const Launch& l, Elem t, const void* q, const BatchView& batch,
                                    const KvLayerView& kv, int num_heads, float scale,
                                    int max_q_len, void* out, int warpgroups) {
  if (kv.bits != 16 || (kv.head_dim != 64 && kv.head_dim != 128) || kv.num_kv_heads <= 0 ||
      num_heads % kv.num_kv_heads != 0 || (warpgroups != 1 && warpgroups != 2) ||
      !wgmma_supported()) {
    return cudaErrorInvalidValue;
  }
  HEARTH_DISPATCH_16(t, T, {
    if (kv.head_dim == 64) {
      return warpgroups == 2 ? launch<T, 64, 2>(l, q, batch, kv, num_heads, scale, max_q_len, out)
                             : launch<T, 64, 1>(l, q, batch, kv, num_heads, scale, max_q_len, out);
    }
    return warpgroups == 2 ? launch<T, 128, 2>(l, q, batch, kv, num_heads, scale, max_q_len, out)
                           : launch<T, 128, 1>(l, q, batch, kv, num_heads, scale, max_q_len, out);
  });
}

}  // namespace hearth::kernels
