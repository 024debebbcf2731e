// Quantized weights decoded to fp16 outside the fused product. For the large-batch path (more
// than 32 x rows: prefill, big decode batches): quant_dequant_kernel writes fp16 weights in the
// tile layout's stored row order (kernels/quant_tile_codec.cuh decodes them bit-identically to the
// reference dequantizers) and quant_gather_x_kernel puts x in the same order, for a cuBLAS product
// (engine/backend/cuda/cuda_quant_linear.cpp). Writing the weights in stored order keeps every
// output's rows contiguous; the act-order permutation is applied to x, which is far smaller. For
// embedding lookups in a packed table: quant_embed_kernel decodes one output (a token's row).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/quant_chunk_math.cuh"
#include "kernels/quant_kernels.h"

namespace hearth::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
using qchunk::GroupScales;
using qchunk::kMaxMetaWords;  // per warp: the group record (scales, zeros)

// One warp per (32-output tile, kDequantChunks chunks): decodes into w[n - n_begin][s], s the
// stored row, so each output's 32 rows of a chunk are one contiguous 64-byte run (the act-order
// permutation is applied to x instead, by quant_gather_x_kernel). A chunk goes through a
// shared-memory tile so that every lane writes whole 16-byte pieces: 4-byte scattered stores
// left the kernel bound by partial-sector writes to L2.
constexpr int kDequantChunks = 4;
constexpr int kTileStride = 40;  // halves per output row of the tile; +8: conflict-free stores

// The group record of (32-output tile nb, group) into the warp's `meta` (qchunk's layout).
template <QuantKind KIND>
__device__ __forceinline__ void load_group_record(const QuantMatrix& m, int64_t nb, int64_t group,
                                                  int lane, uint32_t* meta) {
  const int64_t gi = nb * m.groups + group;
  if constexpr (KIND == QuantKind::kExl2) {
    if (lane < 4) meta[lane] = reinterpret_cast<const uint32_t*>(m.scale_codes + gi * 8)[lane];
    if (lane == 4) meta[32] = m.scale_max[group];
  } else if constexpr (is_gguf_kind(KIND)) {
    meta[lane] = m.super_records[(nb * m.supers + (group >> m.super_shift)) * 32 + lane];
    if (m.sub_records && lane < 16) {
      meta[32 + lane] = reinterpret_cast<const uint32_t*>(m.sub_records + gi * 32)[lane];
    }
  } else {
    if (lane < 16) meta[lane] = reinterpret_cast<const uint32_t*>(m.scales + gi * 32)[lane];
    if (KIND == QuantKind::kGptqAsym && lane >= 16) {
      meta[lane] = reinterpret_cast<const uint32_t*>(m.zeros + gi * 32)[lane - 16];
    }
  }
  __syncwarp();
}

template <QuantKind KIND>
__global__ void __launch_bounds__(kThreads)
    quant_dequant_kernel(QuantMatrix m, int64_t n_begin, int64_t count, __half* dst) {
  __shared__ __align__(16) uint32_t s_meta[kWarps][kMaxMetaWords];
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
  GroupScales<KIND> scales;
  int64_t cur_group = -1;
  int cur_bits = 0;
  // The next chunk's words are loaded while this one is decoded and written: with one chunk's
  // loads in flight at a time the kernel moved ~61 % of the copy bandwidth, now ~68 % (H200).
  uint32_t next_info = 0, next_w[8] = {};
  auto load_chunk = [&](int64_t c) {
    next_info = m.chunk_info[c];
    const uint32_t* wl = wcol + int64_t(m.chunk_line[c]) * 32;
    const int bits = qchunk::chunk_words<KIND>(qtile::chunk_width(next_info));
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (i < bits) next_w[i] = wl[i * 32];
    }
  };
  if (c_begin < c_end) load_chunk(c_begin);
  for (int64_t c = c_begin; c < c_end; ++c) {
    const uint32_t info = next_info;
    uint32_t w[8], pr[qtile::kPairs];
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = next_w[i];
    if (c + 1 < c_end) load_chunk(c + 1);
    const int64_t group = qtile::chunk_group(info);
    const int bits = qtile::chunk_width(info);
    if (group != cur_group) load_group_record<KIND>(m, nb, group, lane, meta);
    if (group != cur_group || bits != cur_bits) {
      scales.load(meta, g, bits, m.gguf_mode);
      cur_group = group;
      cur_bits = bits;
    }
    qchunk::with_width<KIND>(
        bits, [&](auto width) { scales.template decode<decltype(width)::value>(w, pr); });
#pragma unroll
    for (int p = 0; p < qtile::kPairs; ++p) {
      *reinterpret_cast<uint32_t*>(tile + qtile::pair_output(p, lane) * kTileStride +
                                   qtile::pair_row(p, lane, 0)) = pr[p];
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

// One warp per (token row, chunk) of the tile that holds output `id`: the lanes whose pairs belong
// to that output write them at their input features. Ids outside [0, N) give a zero row, as the
// plain embedding does.
template <QuantKind KIND>
__global__ void __launch_bounds__(kThreads)
    quant_embed_kernel(QuantMatrix m, const int32_t* tokens, __half* out) {
  __shared__ __align__(16) uint32_t s_meta[kWarps][kMaxMetaWords];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int32_t id = tokens[blockIdx.x];
  __half* dst = out + int64_t(blockIdx.x) * m.in_features;
  if (id < 0 || id >= m.out_features) {
    if (blockIdx.y == 0) {
      for (int64_t k = threadIdx.x; k < m.in_features; k += kThreads) {
        dst[k] = __float2half_rn(0.0f);
      }
    }
    return;
  }
  const int64_t c = int64_t(blockIdx.y) * kWarps + warp;
  if (c >= m.chunks) return;
  const int64_t nb = id / 32;
  const int o = id % 32;
  uint32_t* meta = s_meta[warp];
  const uint32_t info = m.chunk_info[c];
  const int bits = qtile::chunk_width(info);
  load_group_record<KIND>(m, nb, qtile::chunk_group(info), lane, meta);
  GroupScales<KIND> scales;
  scales.load(meta, lane >> 2, bits, m.gguf_mode);
  const uint32_t* wl = m.qweight + (nb * m.lines + m.chunk_line[c]) * 32 + lane;
  uint32_t w[8], pr[qtile::kPairs];
  for (int i = 0; i < qchunk::chunk_words<KIND>(bits); ++i) w[i] = wl[i * 32];
  qchunk::with_width<KIND>(
      bits, [&](auto width) { scales.template decode<decltype(width)::value>(w, pr); });
#pragma unroll
  for (int p = 0; p < qtile::kPairs; ++p) {
    if (qtile::pair_output(p, lane) != o) continue;
    const __half2 v = qchunk::as_half2(pr[p]);
    const int32_t k0 = m.row_src[c * 32 + qtile::pair_row(p, lane, 0)];
    const int32_t k1 = m.row_src[c * 32 + qtile::pair_row(p, lane, 1)];
    if (k0 >= 0) dst[k0] = __low2half(v);
    if (k1 >= 0) dst[k1] = __high2half(v);
  }
}

// x_stored[r][s] = x[r][row_src[s]], zero for padding rows: x in the weights' stored row order.
// A block takes a few x rows: it stages them in shared memory by cp.async (every 16-byte piece in
// flight at once; loads through registers waited for each piece before storing it), then each
// thread reads the sources of 8 stored rows once and writes those 8 of every staged row as one
// 16-byte store (stored_rows is a multiple of 32, so the 8 never straddle it). Element-wise with
// a division per element this took 14 % of a prefill step of 1,024 rows; one row a block, staged
// through registers, 3.4 ms of a 2,048-token step of Llama-3-8B EXL2 4.0 (~2.2 TB/s); this way,
// 2.4 ms (H200; docs/PERFORMANCE.md).
// SWIGLU: x is the MLP's gate and the rows gathered are silu(x) · up, computed as they are staged
// (silu_mul's arithmetic), so that down's input is written once, in its own order.
// Rows too long for the shared memory (kGatherMaxStagedHalves) read x from global memory.
constexpr int kGatherThreads = 256;
constexpr int kGatherPerThread = 8;
constexpr int64_t kGatherMaxStagedHalves = 24 * 1024;  // 48 KB, the default dynamic limit
constexpr int64_t kGatherBlockHalves = 16 * 1024;      // staged per block when rows are many
constexpr int kGatherMaxRowsPerBlock = 8;
constexpr int kSwigluPiecesInFlight = 4;  // 16-byte pieces of gate and of up loaded before use

// Stages x_block's rows (silu(x) · up for SWIGLU) into s_rows.
template <bool SWIGLU>
__device__ __forceinline__ void stage_rows(const __half* __restrict__ x_block,
                                           const __half* __restrict__ up_block, int64_t in_features,
                                           int block_rows, bool vector_loads, __half* s_rows) {
  const int64_t count = block_rows * in_features;
  if (!vector_loads) {
    for (int64_t i = threadIdx.x; i < count; i += kGatherThreads) {
      if constexpr (SWIGLU) {
        s_rows[i] = from_f<__half>(swiglu(to_f(x_block[i]), to_f(up_block[i])));
      } else {
        s_rows[i] = x_block[i];
      }
    }
    return;
  }
  const int64_t pieces = count / 8;  // rows are whole pieces: in_features % 8 == 0
  if constexpr (SWIGLU) {
    constexpr int64_t kStride = int64_t(kGatherThreads) * kSwigluPiecesInFlight;
    for (int64_t p0 = threadIdx.x; p0 < pieces; p0 += kStride) {
      uint4 g[kSwigluPiecesInFlight], u[kSwigluPiecesInFlight];
#pragma unroll
      for (int j = 0; j < kSwigluPiecesInFlight; ++j) {
        const int64_t p = p0 + j * kGatherThreads;
        if (p < pieces) {
          g[j] = *reinterpret_cast<const uint4*>(x_block + p * 8);
          u[j] = *reinterpret_cast<const uint4*>(up_block + p * 8);
        }
      }
#pragma unroll
      for (int j = 0; j < kSwigluPiecesInFlight; ++j) {
        const int64_t p = p0 + j * kGatherThreads;
        if (p < pieces) {
          float gf[8], uf[8];
          unpack8<__half>(g[j], gf);
          unpack8<__half>(u[j], uf);
#pragma unroll
          for (int e = 0; e < 8; ++e) gf[e] = swiglu(gf[e], uf[e]);
          *reinterpret_cast<uint4*>(s_rows + p * 8) = pack8<__half>(gf);
        }
      }
    }
  } else {
    for (int64_t p = threadIdx.x; p < pieces; p += kGatherThreads) {
      cp_async16(s_rows + p * 8, x_block + p * 8, true);
    }
    cp_async_commit();
    cp_async_wait<0>();
  }
}

// x's element k of row xr (silu(x) · up for SWIGLU, up's row being ur).
template <bool SWIGLU>
__device__ __forceinline__ __half input_at(const __half* xr, const __half* ur, int32_t k) {
  if constexpr (SWIGLU) {
    return from_f<__half>(swiglu(to_f(xr[k]), to_f(ur[k])));
  } else {
    return xr[k];
  }
}

template <bool STAGED, bool SWIGLU>
__global__ void __launch_bounds__(kGatherThreads)
    quant_gather_x_kernel(const int32_t* __restrict__ row_src, int64_t stored_rows,
                          const __half* __restrict__ x, const __half* __restrict__ up,
                          int64_t in_features, int64_t rows, int rows_per_block,
                          __half* __restrict__ x_stored) {
  extern __shared__ __align__(16) __half s_rows[];
  const int64_t r0 = int64_t(blockIdx.x) * rows_per_block;
  const int block_rows = static_cast<int>(min(int64_t(rows_per_block), rows - r0));
  const __half* x_block = x + r0 * in_features;
  const __half* up_block = SWIGLU ? up + r0 * in_features : nullptr;
  if constexpr (STAGED) {
    const bool vector_loads = in_features % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                              (!SWIGLU || reinterpret_cast<uintptr_t>(up) % 16 == 0);
    stage_rows<SWIGLU>(x_block, up_block, in_features, block_rows, vector_loads, s_rows);
    __syncthreads();
  }
  // Staged rows already hold the activation; otherwise it is computed at each read.
  constexpr bool kComputes = SWIGLU && !STAGED;
  const __half* from = STAGED ? s_rows : x_block;
  for (int64_t s0 = int64_t(threadIdx.x) * kGatherPerThread; s0 < stored_rows;
       s0 += kGatherThreads * kGatherPerThread) {
    const int4 a = *reinterpret_cast<const int4*>(row_src + s0);
    const int4 b = *reinterpret_cast<const int4*>(row_src + s0 + 4);
    const int src[kGatherPerThread] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll 1
    for (int r = 0; r < block_rows; ++r) {
      const __half* xr = from + r * in_features;
      const __half* ur = kComputes ? up_block + r * in_features : nullptr;
      uint32_t packed[kGatherPerThread / 2];
#pragma unroll
      for (int i = 0; i < kGatherPerThread; i += 2) {
        const __half zero = __float2half_rn(0.0f);
        const __half lo = src[i] >= 0 ? input_at<kComputes>(xr, ur, src[i]) : zero;
        const __half hi = src[i + 1] >= 0 ? input_at<kComputes>(xr, ur, src[i + 1]) : zero;
        const __half2 pair = __halves2half2(lo, hi);
        packed[i / 2] = *reinterpret_cast<const uint32_t*>(&pair);
      }
      *reinterpret_cast<uint4*>(x_stored + (r0 + r) * stored_rows + s0) =
          make_uint4(packed[0], packed[1], packed[2], packed[3]);
    }
  }
}

}  // namespace

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
  return qchunk::with_kind(m.kind, [&](auto k) {
    return launch_kernel(plain, quant_dequant_kernel<decltype(k)::value>, grid, dim3(kThreads), 0,
                         m, n_begin, count, out);
  });
}

cudaError_t quant_embed(const Launch& l, const QuantMatrix& m, const int32_t* tokens, int64_t rows,
                        void* out) {
  if (!qchunk::valid_matrix(m) || tokens == nullptr || rows < 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  Launch plain = l;  // the first op of a step: nothing of ours to overlap with
  plain.pdl = false;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(ceil_div(m.chunks, kWarps)));
  auto* dst = static_cast<__half*>(out);
  return qchunk::with_kind(m.kind, [&](auto k) {
    return launch_kernel(plain, quant_embed_kernel<decltype(k)::value>, grid, dim3(kThreads), 0, m,
                         tokens, dst);
  });
}

cudaError_t quant_gather_x(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                           void* x_stored, const void* up) {
  if (!qchunk::valid_matrix(m) || rows <= 0 || reinterpret_cast<uintptr_t>(m.row_src) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(x_stored) % 16 != 0) {
    return cudaErrorInvalidValue;  // whole 16-byte loads of row_src and stores of x_stored
  }
  const int64_t stored_rows = m.chunks * 32;
  const bool staged = m.in_features <= kGatherMaxStagedHalves;
  // Several rows a block where there are rows enough for two blocks per multiprocessor: each
  // thread's row sources then serve every row of its block.
  const int64_t sms = l.sm_count > 0 ? l.sm_count : 132;
  const int64_t by_rows = rows / (2 * sms);
  const int64_t by_memory = staged ? kGatherBlockHalves / m.in_features : kGatherMaxRowsPerBlock;
  const int rows_per_block = static_cast<int>(
      std::clamp<int64_t>(std::min(by_rows, by_memory), 1, kGatherMaxRowsPerBlock));
  const int64_t blocks = ceil_div(rows, int64_t(rows_per_block));
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  Launch plain = l;  // cuBLAS, not a kernel of ours, may precede it
  plain.pdl = false;
  const auto* xh = static_cast<const __half*>(x);
  auto* out = static_cast<__half*>(x_stored);
  const size_t smem =
      staged ? static_cast<size_t>(rows_per_block * m.in_features) * sizeof(__half) : 0;
  const auto* uh = static_cast<const __half*>(up);
  const auto kernel =
      staged ? (up ? quant_gather_x_kernel<true, true> : quant_gather_x_kernel<true, false>)
             : (up ? quant_gather_x_kernel<false, true> : quant_gather_x_kernel<false, false>);
  return launch_kernel(plain, kernel, dim3(static_cast<unsigned>(blocks)), dim3(kGatherThreads),
                       smem, m.row_src, stored_rows, xh, uh, m.in_features, rows, rows_per_block,
                       out);
}

}  // namespace hearth::kernels
