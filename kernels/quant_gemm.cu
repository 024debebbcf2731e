// EXL2 / GPTQ matrix products for batches of 9..32 x rows: fused dequantize-and-multiply on the
// tensor cores (1..8 rows go to kernels/quant_gemv.cu, same arithmetic), plus a
// dequantize-to-fp16 kernel for the large-batch (cuBLAS) path.
//
// Layout: kernels/quant_tile_codec.cuh (tiles of 32 outputs × 32 stored rows; each lane's words
// hold exactly the codes of its mma.sync A fragments, so decoding is a mask and an OR per pair
// of weights, with no shuffles). One warp computes one 32-output tile column over the block's
// range of chunks: per chunk it decodes 16 half2 pairs, subtracts the zero (exact in fp16) and
// multiplies by the group's fp16 scale — the weight is then bit-identical to the reference
// dequantizer — and issues 4 MMAs per 8 activation rows (m16n8k16, fp32 accumulators).
//
// Block: 4 warps = 128 consecutive outputs, and P consecutive chunks (P·32 stored rows, P = 4, 8
// or 16 chosen from the matrix shape alone). Before waiting on the previous kernel (programmatic
// dependent launch), every warp issues cp.async copies of (the first 8 chunks of) its weight
// slice and of the scales it will need, so the weights stream in while the previous kernel
// drains; slices of 16 chunks stage their second half after the first is multiplied. Then the block
// stages x for its rows in shared memory, gathering each row through row_src — the act-order
// permutation is applied here, with no separate pass — and zero-filling padding rows. Blocks
// along K write fp32 partials; the last block of a tile column to finish sums them in a fixed
// order (deterministic, and independent of the number of x rows).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/quant_chunk_math.cuh"
#include "kernels/quant_kernels.h"

namespace hearth::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxChunksPerBlock = 16;
constexpr int kStageChunks = 8;  // chunks of weights in shared memory at a time
using qchunk::kMetaWords;  // per (warp, chunk): the group record, then info (33) and line (34)

int tile_columns(const QuantMatrix& m) {
  return static_cast<int>(ceil_div(m.blocks, kWarps));
}

int row_tiles(int64_t rows) {
  return rows <= 16 ? 2 : 4;
}

int effective_chunks(const QuantMatrix& m, int64_t) {
  return qchunk::slice_chunks(m);  // the slices of every batch size: rows are batch-invariant
}

size_t smem_bytes(const QuantMatrix& m, int mt, int p) {
  const size_t w = size_t(kWarps) * m.max_bits * std::min(p, kStageChunks) * 32 * 4;
  const size_t meta = size_t(kWarps) * p * kMetaWords * 4;
  const size_t x = size_t(mt) * 8 * (p * 32 + 8) * 2;
  return w + meta + x;
}

// One chunk whose words were staged in shared memory (word i of the lane at wl[32 i]).
template <int B, int MT>
__device__ __forceinline__ void staged_chunk(const uint32_t* wl, const __half* xs, int xs_stride,
                                             int g, int t, const __half2 sc[4], const __half2 zz[4],
                                             const __half2 neg_z64[4], float acc[2][MT][4]) {
  uint32_t w[B];
#pragma unroll
  for (int i = 0; i < B; ++i) w[i] = wl[i * 32];
  uint32_t bf[MT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      bf[mt][k] = *reinterpret_cast<const uint32_t*>(xs + (mt * 8 + g) * xs_stride + 8 * k + 2 * t);
    }
  }
  qchunk::chunk_mma<B, MT>(w, bf, sc, zz, neg_z64, acc);
}

template <int MT, QuantKind KIND>
__global__ void __launch_bounds__(kThreads)
    quant_gemm_kernel(QuantMatrix m, const __half* x, int rows, const float* bias, void* out,
                      bool out_f32, int p_chunks, float* partials, int32_t* counters) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int stage = min(p_chunks, kStageChunks);  // slices of 16 chunks are staged in halves
  const int words_per_warp = m.max_bits * stage * 32;
  uint32_t* s_w = reinterpret_cast<uint32_t*>(smem) + warp * words_per_warp;
  uint32_t* s_meta =
      reinterpret_cast<uint32_t*>(smem) + kWarps * words_per_warp + warp * p_chunks * kMetaWords;
  __half* s_x = reinterpret_cast<__half*>(reinterpret_cast<uint32_t*>(smem) +
                                          kWarps * words_per_warp + kWarps * p_chunks * kMetaWords);
  const int xs_stride = p_chunks * 32 + 8;  // halves; +8 keeps the B-fragment loads conflict-free

  const int c0 = blockIdx.y * p_chunks;
  const int c1 = min(static_cast<int>(m.chunks), c0 + p_chunks);
  const int nchunks = c1 - c0;
  const int64_t nb = int64_t(blockIdx.x) * kWarps + warp;
  const bool active = nb < m.blocks;
  const int K = static_cast<int>(m.in_features);
  const int N = static_cast<int>(m.out_features);

  // Copies the weights of chunks [j0, j1) of the block into the warp's s_w.
  auto stage_weights = [&](int j0, int j1) {
    const int l0 = m.chunk_line[c0 + j0];
    const int nlines = m.chunk_line[c0 + j1] - l0;
    const uint32_t* src = m.qweight + (nb * m.lines + l0) * 32;
    for (int i = lane; i < nlines * 8; i += 32) cp_async16(s_w + i * 4, src + i * 4, true);
  };

  pdl_launch_dependents();
  // Weight-side data (never written by other kernels): fetched before waiting on the previous
  // kernel, all copies in flight at once (the first stage of the weights).
  const int line0 = m.chunk_line[c0];
  if (active) {
    stage_weights(0, min(nchunks, stage));
    for (int i = lane; i < nchunks * 8; i += 32) {
      const int j = i >> 3, part = i & 7;
      const uint32_t info = m.chunk_info[c0 + j];
      const int64_t gi = nb * m.groups + qtile::chunk_group(info);
      uint32_t* meta = s_meta + j * kMetaWords;
      if (part == 2) {  // the chunk's width, group and first line, for the loop below
        meta[33] = info;
        meta[34] = static_cast<uint32_t>(m.chunk_line[c0 + j] - line0);
      }
      if constexpr (KIND == QuantKind::kExl2) {
        if (part == 0) cp_async16(meta, m.scale_codes + gi * 8, true);
        if (part == 1) meta[32] = m.scale_max[qtile::chunk_group(info)];
      } else {
        if (part < 4) cp_async16(meta + part * 4, m.scales + gi * 32 + part * 8, true);
        if (KIND == QuantKind::kGptqAsym && part >= 4) {
          cp_async16(meta + 16 + (part - 4) * 4, m.zeros + gi * 32 + (part - 4) * 8, true);
        }
      }
    }
  }
  cp_async_commit();
  constexpr int kRowsPerThread = kMaxChunksPerBlock * 32 / kThreads;
  int src_row[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = threadIdx.x + i * kThreads;
    src_row[i] = r < nchunks * 32 ? m.row_src[int64_t(c0) * 32 + r] : -1;
  }

  pdl_wait();
  // x rows of this block, gathered through row_src (act-order), into s_x[token][row].
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const int r = threadIdx.x + i * kThreads;
    if (r < nchunks * 32) {
#pragma unroll 4
      for (int tok = 0; tok < MT * 8; ++tok) {
        __half v = __float2half_rn(0.0f);
        if (tok < rows && src_row[i] >= 0) v = x[int64_t(tok) * K + src_row[i]];
        s_x[tok * xs_stride + r] = v;
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();

  float acc[2][MT][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      acc[nt][mt][0] = acc[nt][mt][1] = acc[nt][mt][2] = acc[nt][mt][3] = 0.0f;
  }
  if (active) {
    __half2 sc[4], zz[4], neg_z64[4];
    int cur_group = -1;
    uint32_t stage_line = 0;  // first line of the staged chunks, relative to line0
    for (int j = 0; j < nchunks; ++j) {
      const uint32_t* meta = s_meta + j * kMetaWords;
      if (j > 0 && j % stage == 0) {  // the next stage into the same buffer (same order of MMAs)
        __syncwarp();
        stage_weights(j, min(nchunks, j + stage));
        cp_async_commit();
        cp_async_wait<0>();
        __syncwarp();
        stage_line = meta[34];
      }
      const uint32_t info = meta[33];
      const int bits = qtile::chunk_bits(info);
      const int group = static_cast<int>(qtile::chunk_group(info));
      if (group != cur_group) {
        qchunk::group_scales<KIND>(meta, g, bits, sc, zz);
        qchunk::high_nibble_offsets(zz, neg_z64);
        cur_group = group;
      }
      const uint32_t* wl = s_w + (meta[34] - stage_line) * 32 + lane;
      const __half* xs = s_x + j * 32;
      qchunk::with_width(bits, [&](auto width) {
        staged_chunk<decltype(width)::value, MT>(wl, xs, xs_stride, g, t, sc, zz, neg_z64, acc);
      });
    }
  }

  // C fragment element i of (nt, mt): output nb·32 + 16nt + g + 8(i/2), x row 8mt + 2t + (i&1).
  const int splits = static_cast<int>(gridDim.y);
  if (splits == 1) {
    if (!active) return;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int n = static_cast<int>(nb) * 32 + nt * 16 + g + 8 * (i >> 1);
          const int tok = mt * 8 + 2 * t + (i & 1);
          if (n < N && tok < rows) {
            qchunk::store_out(out, out_f32, int64_t(tok) * N + n,
                              acc[nt][mt][i] + (bias ? bias[n] : 0.0f));
          }
        }
      }
    }
    return;
  }
  if (active) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int n = static_cast<int>(nb) * 32 + nt * 16 + g + 8 * (i >> 1);
          const int tok = mt * 8 + 2 * t + (i & 1);
          if (n < N && tok < rows) {
            partials[(int64_t(blockIdx.y) * rows + tok) * N + n] = acc[nt][mt][i];
          }
        }
      }
    }
  }
  if (!last_to_arrive(&counters[blockIdx.x], splits)) return;
  const int n0 = blockIdx.x * kWarps * 32;
  for (int idx = threadIdx.x; idx < rows * kWarps * 32; idx += kThreads) {
    const int tok = idx / (kWarps * 32);
    const int n = n0 + idx % (kWarps * 32);
    if (n >= N) continue;
    const float sum =
        qchunk::sum_slices(partials + int64_t(tok) * N + n, int64_t(rows) * N, splits);
    qchunk::store_out(out, out_f32, int64_t(tok) * N + n, sum + (bias ? bias[n] : 0.0f));
  }
  if (threadIdx.x == 0) counters[blockIdx.x] = 0;  // ready for the next launch
}

// One warp per (32-output tile, kDequantChunks chunks): decodes into w[n - n_begin][s], s the
// stored row, so each output's 32 rows of a chunk are one contiguous 64-byte run (the act-order
// permutation is applied to x instead, by quant_gather_x_kernel). A chunk goes through a
// shared-memory tile so that every lane writes whole 16-byte pieces: 4-byte scattered stores
// left the kernel bound by partial-sector writes to L2.
constexpr int kDequantChunks = 4;
constexpr int kTileStride = 40;  // halves per output row of the tile; +8: conflict-free stores

template <QuantKind KIND>
__global__ void __launch_bounds__(kThreads)
    quant_dequant_kernel(QuantMatrix m, int64_t n_begin, int64_t count, __half* dst) {
  __shared__ __align__(16) uint32_t s_meta[kWarps][kMetaWords];
  __shared__ __align__(16) __half s_tile[kWarps][32 * kTileStride];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int64_t nb = n_begin / 32 + blockIdx.x;
  const int64_t c_begin = (int64_t(blockIdx.y) * kWarps + warp) * kDequantChunks;
  const int64_t c_end = min(m.chunks, c_begin + kDequantChunks);
  const int64_t stored_rows = m.chunks * 32;
  uint32_t* meta = s_meta[warp];
  __half* tile = s_tile[warp];
  const uint32_t* wcol = m.qweight + nb * m.lines * 32 + lane;
  __half2 sc[4], zz[4];
  int64_t cur_group = -1;
  int cur_bits = 0;
  for (int64_t c = c_begin; c < c_end; ++c) {
    const uint32_t info = m.chunk_info[c];
    const int64_t group = qtile::chunk_group(info);
    const int bits = qtile::chunk_bits(info);
    if (group != cur_group) {
      const int64_t gi = nb * m.groups + group;
      if constexpr (KIND == QuantKind::kExl2) {
        if (lane < 4) meta[lane] = reinterpret_cast<const uint32_t*>(m.scale_codes + gi * 8)[lane];
        if (lane == 4) meta[32] = m.scale_max[group];
      } else {
        if (lane < 16) meta[lane] = reinterpret_cast<const uint32_t*>(m.scales + gi * 32)[lane];
        if (KIND == QuantKind::kGptqAsym && lane >= 16) {
          meta[lane] = reinterpret_cast<const uint32_t*>(m.zeros + gi * 32)[lane - 16];
        }
      }
      __syncwarp();
    }
    if (group != cur_group || bits != cur_bits) {
      qchunk::group_scales<KIND>(meta, g, bits, sc, zz);
      cur_group = group;
      cur_bits = bits;
    }
    const uint32_t* wl = wcol + int64_t(m.chunk_line[c]) * 32;
    uint32_t w[8], pr[qtile::kPairs];
    for (int i = 0; i < bits; ++i) w[i] = wl[i * 32];
    qchunk::with_width(bits,
                       [&](auto width) { qtile::decode_lane<decltype(width)::value>(w, pr); });
#pragma unroll
    for (int p = 0; p < qtile::kPairs; ++p) {
      const int slot = qtile::pair_output_slot(p);
      const __half2 v = __hmul2(__hsub2(qchunk::as_half2(pr[p]), zz[slot]), sc[slot]);
      *reinterpret_cast<__half2*>(tile + qtile::pair_output(p, lane) * kTileStride +
                                  qtile::pair_row(p, lane, 0)) = v;
    }
    __syncwarp();
    // Lane (o, q) of each round writes rows 8q .. 8q + 7 of output o: 4 lanes per 64-byte run.
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int o = (lane >> 2) + 8 * k;
      const int q = lane & 3;
      const int64_t n = nb * 32 + o;
      if (n < m.out_features && n - n_begin < count) {
        *reinterpret_cast<uint4*>(dst + (n - n_begin) * stored_rows + c * 32 + 8 * q) =
            *reinterpret_cast<const uint4*>(tile + o * kTileStride + 8 * q);
      }
    }
    __syncwarp();  // the tile and the group record are rewritten for the next chunk
  }
}

// x_stored[r][s] = x[r][row_src[s]], zero for padding rows: x in the weights' stored row order.
__global__ void quant_gather_x_kernel(const int32_t* row_src, int64_t stored_rows, const __half* x,
                                      int64_t in_features, int64_t rows, __half* x_stored) {
  const int64_t total = rows * stored_rows;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / stored_rows;
    const int src = row_src[i - r * stored_rows];
    x_stored[i] = src >= 0 ? x[r * in_features + src] : __float2half_rn(0.0f);
  }
}

template <int MT, QuantKind KIND>
cudaError_t launch_gemm(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                        const float* bias, void* out, bool out_f32, int p,
                        const QuantGemmScratch& scratch) {
  const size_t smem = smem_bytes(m, MT, p);
  // Shared memory beyond 48 KB needs an opt-in per kernel and device (a host-side setting, not
  // a stream operation: fine before or during graph capture).
  static int configured[64] = {};
  int device = 0;
  cudaGetDevice(&device);
  if (device >= 0 && device < 64 && configured[device] < static_cast<int>(smem)) {
    const cudaError_t e =
        cudaFuncSetAttribute(quant_gemm_kernel<MT, KIND>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
    configured[device] = static_cast<int>(smem);
  }
  const dim3 grid(static_cast<unsigned>(tile_columns(m)),
                  static_cast<unsigned>(ceil_div(m.chunks, p)));
  return launch_kernel(l, quant_gemm_kernel<MT, KIND>, grid, dim3(kThreads), smem, m,
                       static_cast<const __half*>(x), static_cast<int>(rows), bias, out, out_f32, p,
                       scratch.partials, scratch.counters);
}

template <QuantKind KIND>
cudaError_t dispatch_rows(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                          const float* bias, void* out, bool out_f32,
                          const QuantGemmScratch& scratch) {
  const int p = effective_chunks(m, rows);
  switch (row_tiles(rows)) {
    case 2:
      return launch_gemm<2, KIND>(l, m, x, rows, bias, out, out_f32, p, scratch);
    default:
      return launch_gemm<4, KIND>(l, m, x, rows, bias, out, out_f32, p, scratch);
  }
}

}  // namespace

size_t quant_gemm_partial_floats(const QuantMatrix& m, int64_t rows) {
  const int64_t splits = ceil_div(m.chunks, effective_chunks(m, rows));
  return splits <= 1 ? 0 : static_cast<size_t>(splits * rows * m.out_features);
}

size_t quant_gemm_counters(const QuantMatrix& m) {
  // One per 32-output column (the row kernel's unit); the tile columns here are fewer.
  return static_cast<size_t>(std::max<int64_t>(m.blocks, tile_columns(m)));
}

cudaError_t quant_gemm(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                       const float* bias, void* out, Elem out_t, const QuantGemmScratch& scratch) {
  if (!qchunk::valid_matrix(m) || rows < 1 || rows > kQuantGemmMaxRows || out_t == Elem::kBF16) {
    return cudaErrorInvalidValue;
  }
  const bool out_f32 = out_t == Elem::kF32;
  if (rows <= kQuantGemmGroupMaxRows) {
    const QuantGemmTarget target{&m, bias, out, out_t};
    return quant_gemm_group(l, &target, 1, x, rows, scratch);
  }
  switch (m.kind) {
    case QuantKind::kExl2:
      return dispatch_rows<QuantKind::kExl2>(l, m, x, rows, bias, out, out_f32, scratch);
    case QuantKind::kGptqSym:
      return dispatch_rows<QuantKind::kGptqSym>(l, m, x, rows, bias, out, out_f32, scratch);
    default:
      return dispatch_rows<QuantKind::kGptqAsym>(l, m, x, rows, bias, out, out_f32, scratch);
  }
}

cudaError_t quant_dequantize(const Launch& l, const QuantMatrix& m, int64_t n_begin, int64_t count,
                             void* w) {
  if (!qchunk::valid_matrix(m) || n_begin % 32 != 0 || n_begin < 0 || count <= 0 ||
      n_begin + count > m.out_features) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>(ceil_div(count, 32)),
                  static_cast<unsigned>(ceil_div(m.chunks, kWarps * kDequantChunks)));
  Launch plain = l;  // no early start: cuBLAS may still read the previous slice
  plain.pdl = false;
  auto* out = static_cast<__half*>(w);
  switch (m.kind) {
    case QuantKind::kExl2:
      return launch_kernel(plain, quant_dequant_kernel<QuantKind::kExl2>, grid, dim3(kThreads), 0,
                           m, n_begin, count, out);
    case QuantKind::kGptqSym:
      return launch_kernel(plain, quant_dequant_kernel<QuantKind::kGptqSym>, grid, dim3(kThreads),
                           0, m, n_begin, count, out);
    default:
      return launch_kernel(plain, quant_dequant_kernel<QuantKind::kGptqAsym>, grid, dim3(kThreads),
                           0, m, n_begin, count, out);
  }
}

cudaError_t quant_gather_x(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                           void* x_stored) {
  if (!qchunk::valid_matrix(m) || rows <= 0) return cudaErrorInvalidValue;
  constexpr int kGatherThreads = 256;
  const int64_t total = rows * m.chunks * 32;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>(ceil_div(total, kGatherThreads), 4096));
  Launch plain = l;  // cuBLAS, not a kernel of ours, may precede it
  plain.pdl = false;
  return launch_kernel(plain, quant_gather_x_kernel, dim3(blocks), dim3(kGatherThreads), 0,
                       m.row_src, m.chunks * 32, static_cast<const __half*>(x), m.in_features, rows,
                       static_cast<__half*>(x_stored));
}

}  // namespace hearth::kernels
