// EXL2 / GPTQ / GGUF product for many x rows (prompts, large decode batches) straight from the
// packed tiles on the tensor cores: the weights are decoded in registers into the MMA operands, so
// no fp16 copy of the matrix is written and read back as the dequantize + cuBLAS path does
// (kernels/quant_dequant.cu; about 9 ms of an 8B prefill step, docs/PERFORMANCE.md). Layout and
// per-chunk arithmetic are the fused kernel's (kernels/quant_tile_codec.cuh,
// kernels/quant_chunk_math.cuh): each lane's words decode into exactly its mma.sync A fragments,
// bit-identical to the reference dequantizers (GGUF's kGguf: the fp16 of its fp32 values, as the
// dequantizer writes them; the fused kernel multiplies the fp32 values).
//
// A block computes a few 32-output columns × 64 or 128 x rows (MmaBlock) over the whole K, in
// stages of kStageChunks chunks: the stage's x (in stored row order: quant_gather_x's output, or x
// itself when the rows are in order), the columns' weight words and the chunks' group records go
// to shared memory by cp.async, kStages - 1 stages ahead of the one being multiplied. Each warp
// takes one column and 64 rows: per chunk it decodes its lane's words once and runs 2 × 2 × 8 MMAs
// on them, with B fragments from ldmatrix; a stage whose chunks share one width is unrolled under
// one switch on it, so that loads and decoding overlap the previous chunk's MMAs. Weights are
// cheaper to load than x (4 bits against 16), which favours wide blocks; the row blocks of one
// column block run side by side (the row block is the fastest-moving block index), so all but the
// first read the weights from L2.
//
// With one block of 8 warps per multiprocessor (its registers and shared memory allow no more)
// and about five other instructions per MMA (decoding, staging), it is latency-bound at about a
// fifth of the tensor cores' peak: faster than dequantize + cuBLAS for batches of 97-128 rows,
// where writing and reading the fp16 copy dominates, slower for prompts (CudaBackendOptions::
// quant_mma_min_rows; docs/PERFORMANCE.md). So a third shape, kWgmma (WgmmaBlock), has each
// warpgroup of a wide block issue Hopper's warpgroup MMA (kernels/wgmma.cuh) on its four warps'
// decoded A fragments, with x staged in wgmma's core-matrix layout: one instruction per 128
// outputs × 64 rows × 16 of K instead of 32 mma.sync. It exists where this file is built for
// sm_90a (kernels/CMakeLists.txt); exact, but 2-8 % slower than the mma.sync wide blocks on an
// H200 (the decoding, not the MMA, bounds both), so it is off (CudaBackendOptions::
// quant_mma_wgmma). A chunk's decoding runs under the width switch and its wgmma after it: with
// wgmma inside the switch's branches ptxas serialized every one of them (C7511).
//
// Unsplit, every output is summed over the chunks in order by one warp, so a row's result depends
// neither on the batch size nor on which rows share its block. When the blocks are too few to fill
// the GPU (few rows), K is split over gridDim.z blocks (quant_mma_k_splits: by the row count, so
// rows then depend on the batch size) and quant_mma_sum_kernel adds their partials in order.
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/quant_chunk_math.cuh"
#include "kernels/quant_kernels.h"
#include "kernels/wgmma.cuh"

namespace hearth::kernels {
namespace {

using qchunk::GroupScales;

constexpr int kRowTiles = 8;                         // 8-row MMA tiles per warp: 64 rows
constexpr int kRecordWords = qchunk::kMaxMetaWords;  // one group record per (column, chunk)
constexpr int kRecordCopies = 12;                    // 16-byte copies of the largest record
// EXL2's fp16 scale_max per group sits in a table after the stages (copied once per block: a
// record's word 32 is filled from it, since cp.async cannot copy two bytes), and so do the
// chunks' lines and infos, read at every chunk (from global memory they stalled each stage).
constexpr int64_t kMaxExl2Groups = 8192;
constexpr int64_t kMaxTableBytes = 40 << 10;

// Four chunks (K = 128) a stage: each stage costs a barrier and its copies' address arithmetic,
// which at two chunks a stage took a third of the kernel's instructions (Nsight Compute, H200).
constexpr int kStageChunks = 4;
constexpr int kStages = 3;
// Halves per staged x row; +8: the eight rows an ldmatrix reads start in different banks.
constexpr int kXStride = kStageChunks * 32 + 8;
constexpr int kStageLines = kStageChunks * 8;  // a column's lines when every chunk is 8-bit

// A block of COLUMNS 32-output columns (a warp each) × ROW_WARPS warps of 64 rows, one per
// multiprocessor, and the bytes of one stage in shared memory: x, the weight words, the records.
// WGMMA: each warpgroup (4 columns, 128 outputs) multiplies its 64 rows by Hopper's warpgroup
// MMA (kernels/wgmma.cuh) instead of each warp by mma.sync, the x stage laid out in its core
// matrices (8 rows × 16 bytes of K, 128 contiguous bytes) instead of rows.
template <int COLUMNS, int ROW_WARPS, bool WGMMA = false>
struct MmaBlock {
  static constexpr int kColumns = COLUMNS;
  static constexpr int kRows = ROW_WARPS * kRowTiles * 8;
  static constexpr int kThreads = COLUMNS * ROW_WARPS * 32;
  static constexpr bool kWgmma = WGMMA;
  static_assert(!WGMMA || (COLUMNS % 4 == 0 && ROW_WARPS == 1), "whole warpgroups of 64 rows");
  // WGMMA's x: core matrix (row group q, K piece p) at q · kGroupBytes + p · 128, row r at 16 r.
  static constexpr int kGroupBytes = kStageChunks * 4 * 128;
  static constexpr int kStageX = WGMMA ? kRows / 8 * kGroupBytes : kRows * kXStride * 2;
  static constexpr int kStageWeights = COLUMNS * kStageLines * 32 * 4;
  static constexpr int kStageRecords = COLUMNS * kStageChunks * kRecordWords * 4;
  static constexpr int kStageBytes = kStageX + kStageWeights + kStageRecords;
  static_assert(kStageX % 16 == 0 && kStageWeights % 16 == 0 && kStageBytes % 16 == 0);
  // Each thread copies the same x piece of rows kXRowStep apart, and the same piece of the
  // weight lines of columns kColumnStep apart; only K advances from stage to stage.
  static constexpr int kXPieces = kStageChunks * 4;  // 16-byte pieces of a staged x row
  static constexpr int kXRowStep = kThreads / kXPieces;
  static constexpr int kXCopies = kRows / kXRowStep;
  static constexpr int kColumnPieces = kStageLines * 8;  // 16-byte pieces of a column's lines
  static constexpr int kColumnStep = kThreads / kColumnPieces;
  static_assert(kThreads % kXPieces == 0 && kRows % kXRowStep == 0);
  static_assert(kThreads % kColumnPieces == 0 && kColumns % kColumnStep == 0);
};
using TallBlock = MmaBlock<4, 2>;  // 128 outputs × 128 rows
using WideBlock = MmaBlock<8, 1>;  // 256 outputs × 64 rows: half the x per weight, more blocks
using WgmmaBlock = MmaBlock<8, 1, true>;  // the wide block on Hopper's warpgroup MMA

// EXL2's scale_max table in shared memory: 2 bytes a group, padded to 16.
__host__ __device__ constexpr size_t scale_max_bytes(int64_t groups) {
  return static_cast<size_t>((groups * 2 + 15) / 16 * 16);
}

// Shared memory after the stages: scale_max (EXL2), chunk_line[chunks + 1], chunk_info[chunks].
size_t table_bytes(const QuantMatrix& m) {
  const size_t scale_max = m.kind == QuantKind::kExl2 ? scale_max_bytes(m.groups) : 0;
  return scale_max + size_t(m.chunks * 2 + 1) * 4;
}

template <QuantKind KIND, class Block>
__global__ void __launch_bounds__(Block::kThreads, 1)
    quant_mma_gemm_kernel(const __grid_constant__ QuantMatrix m, const __half* x, int64_t ld_x,
                          int64_t k_valid, int rows, const float* bias, void* out, bool out_f32,
                          float* partials) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kColumns = Block::kColumns;
  constexpr int kRows = Block::kRows;
  constexpr int kThreads = Block::kThreads;
  constexpr int kStageX = Block::kStageX;
  constexpr int kStageWeights = Block::kStageWeights;
  constexpr int kStageBytes = Block::kStageBytes;
#if !HEARTH_WGMMA
  if constexpr (Block::kWgmma) __trap();  // launched only where the probe found sm_90a code
#endif
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int column = warp % kColumns;
  const int row_warp = warp / kColumns;
  const int row0 = static_cast<int>(blockIdx.x) * kRows;
  const int64_t nb0 = int64_t(blockIdx.y) * kColumns;
  const int64_t nb = nb0 + column;
  const bool active = nb < m.blocks;
  const int chunks = static_cast<int>(m.chunks);
  // This block's share of K: stages [first, end) of the matrix's (all of them unless K is split
  // over gridDim.z blocks).
  const int all_stages = (chunks + kStageChunks - 1) / kStageChunks;
  const int per_split =
      (all_stages + static_cast<int>(gridDim.z) - 1) / static_cast<int>(gridDim.z);
  const int first = static_cast<int>(blockIdx.z) * per_split;
  const int stages = max(0, min(all_stages - first, per_split));
  auto stage_x = [&](int buf) { return reinterpret_cast<__half*>(smem + buf * kStageBytes); };
  auto stage_weights = [&](int buf) {
    return reinterpret_cast<uint32_t*>(smem + buf * kStageBytes + kStageX);
  };
  auto stage_records = [&](int buf) {
    return reinterpret_cast<uint32_t*>(smem + buf * kStageBytes + kStageX + kStageWeights);
  };
  // The tables after the stages (table_bytes), filled once per block.
  unsigned char* tables = smem + kStages * kStageBytes;
  auto* scale_max = reinterpret_cast<uint16_t*>(tables);
  if constexpr (KIND == QuantKind::kExl2) {
    for (int i = threadIdx.x; i < m.groups; i += kThreads) scale_max[i] = m.scale_max[i];
    tables += scale_max_bytes(m.groups);
  }
  auto* chunk_line = reinterpret_cast<int*>(tables);
  uint32_t* chunk_info = reinterpret_cast<uint32_t*>(tables) + chunks + 1;
  for (int i = threadIdx.x; i <= chunks; i += kThreads) {
    chunk_line[i] = m.chunk_line[i];
    if (i < chunks) chunk_info[i] = m.chunk_info[i];
  }
  __syncthreads();  // read by the copies of every stage

  // What each thread copies, fixed over the stages: x piece `x_piece` of rows x_row0 + i ·
  // kXRowStep, and piece `w_piece` of the weight lines of columns w_column0 + i · kColumnStep.
  // WGMMA: 8 threads in a row take one piece of 8 rows (a core matrix, one 128-byte line of
  // shared memory), and the next 8 the next piece of the same rows (global reads stay whole).
  constexpr bool kWgmma = Block::kWgmma;
  const int x_piece = kWgmma ? threadIdx.x / 8 % Block::kXPieces : threadIdx.x % Block::kXPieces;
  const int x_row0 = kWgmma ? threadIdx.x / (8 * Block::kXPieces) * 8 + threadIdx.x % 8
                            : threadIdx.x / Block::kXPieces;
  const __half* x_from = x + int64_t(row0 + x_row0) * ld_x + x_piece * 8;
  const int64_t x_step = int64_t(Block::kXRowStep) * ld_x;
  const int x_at_smem =
      kWgmma ? (x_row0 / 8 * Block::kGroupBytes + x_piece * 128 + x_row0 % 8 * 16) / 2
             : x_row0 * kXStride + x_piece * 8;
  // Halves between copy i and i + 1 in the stage.
  constexpr int kXCopyStride =
      kWgmma ? Block::kXRowStep / 8 * Block::kGroupBytes / 2 : Block::kXRowStep * kXStride;
  const int x_rows_here = rows - row0 - x_row0;  // copy i has a row while i · kXRowStep < this
  const int w_piece = threadIdx.x % Block::kColumnPieces;
  const int w_column0 = threadIdx.x / Block::kColumnPieces;
  const uint32_t* w_from = m.qweight + (nb0 + w_column0) * m.lines * 32 + w_piece * 4;
  const int64_t w_step = int64_t(Block::kColumnStep) * m.lines * 32;
  const int w_at_smem = w_column0 * kStageLines * 32 + w_piece * 4;
  const int w_columns_here =
      (m.blocks - nb0 < kColumns ? static_cast<int>(m.blocks - nb0) : kColumns) - w_column0;

  // Stage `st` (chunks [st · kStageChunks, ...)) into buffer `buf`, by all threads.
  auto load_stage = [&](int buf, int st) {
    const int c0 = st * kStageChunks;
    const int c1 = min(chunks, c0 + kStageChunks);
    // x: kRows rows of the stage's 32 · kStageChunks stored rows, 16 bytes a copy; rows past
    // `rows` and columns past k_valid (padding after an in-order K) read as zeros.
    __half* xs = stage_x(buf) + x_at_smem;
    const bool k_ok = int64_t(c0) * 32 + x_piece * 8 < k_valid;
    const __half* xp = x_from + int64_t(c0) * 32;
#pragma unroll
    for (int i = 0; i < Block::kXCopies; ++i, xp += x_step) {
      const bool valid = k_ok && i * Block::kXRowStep < x_rows_here;
      cp_async16(xs + i * kXCopyStride, valid ? xp : x, valid);
    }
    // Weights: a column's lines of consecutive chunks are consecutive in qweight.
    uint32_t* ws = stage_weights(buf) + w_at_smem;
    const int line0 = chunk_line[c0];
    if (w_piece < (chunk_line[c1] - line0) * 8) {
      const uint32_t* wp = w_from + int64_t(line0) * 32;
#pragma unroll
      for (int i = 0; i < kColumns / Block::kColumnStep; ++i, wp += w_step) {
        if (i * Block::kColumnStep < w_columns_here) {
          cp_async16(ws + i * Block::kColumnStep * kStageLines * 32, wp, true);
        }
      }
    }
    // The group record of each (column, chunk), in qchunk's layout.
    uint32_t* rs = stage_records(buf);
    for (int e = threadIdx.x; e < kColumns * kStageChunks * kRecordCopies; e += kThreads) {
      const int record = e / kRecordCopies, piece = e - record * kRecordCopies;
      const int col = record / kStageChunks;
      const int c = c0 + record - col * kStageChunks;
      const int64_t n = nb0 + col;
      if (c >= c1 || n >= m.blocks) continue;
      const uint32_t group = qtile::chunk_group(chunk_info[c]);
      const int64_t gi = n * m.groups + group;
      uint32_t* rec = rs + record * kRecordWords;
      if constexpr (KIND == QuantKind::kExl2) {
        if (piece == 0) cp_async16(rec, m.scale_codes + gi * 8, true);
        if (piece == 1) rec[32] = scale_max[group];
      } else if constexpr (is_gguf_kind(KIND)) {
        if (piece < 8) {
          cp_async16(rec + piece * 4,
                     m.super_records + (n * m.supers + (group >> m.super_shift)) * 32 + piece * 4,
                     true);
        } else if (m.sub_records) {
          cp_async16(rec + 32 + (piece - 8) * 4, m.sub_records + gi * 32 + (piece - 8) * 8, true);
        }
      } else {
        if (piece < 4) {
          cp_async16(rec + piece * 4, m.scales + gi * 32 + piece * 8, true);
        } else if (KIND == QuantKind::kGptqAsym && piece < 8) {
          cp_async16(rec + 16 + (piece - 4) * 4, m.zeros + gi * 32 + (piece - 4) * 8, true);
        }
      }
    }
  };

  float acc[2][kRowTiles][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int mt = 0; mt < kRowTiles; ++mt)
      acc[nt][mt][0] = acc[nt][mt][1] = acc[nt][mt][2] = acc[nt][mt][3] = 0.0f;
  }
  GroupScales<KIND> scales;
  uint32_t scales_group = 0xffffffffu;
  int scales_bits = 0;
  // ldmatrix.x4: lanes 8q .. 8q + 7 address matrix q, the 8 x rows of a tile at stored rows
  // 8q .. 8q + 7 of the chunk, so register q is the B fragment of rows 2t + 8q, 2t + 8q + 1:
  // chunk_mma's {ks 0: b0, b1; ks 1: b0, b1}.
  const int x_at = (row_warp * kRowTiles * 8 + (lane & 7)) * kXStride + (lane >> 3) * 8;

  // Step i multiplies stage first + i from buffer i % kStages.
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < stages) load_stage(i, first + i);
    cp_async_commit();
  }
  for (int i = 0; i < stages; ++i) {
    cp_async_wait<kStages - 2>();
    if constexpr (kWgmma) wgmma::fence_shared_for_async();  // the copies, for wgmma's reads
    __syncthreads();  // step i's stage has arrived, and every warp is done with the buffer refilled
    if (i + kStages - 1 < stages) load_stage((i + kStages - 1) % kStages, first + i + kStages - 1);
    cp_async_commit();
    // (A warpgroup's wgmma need all four warps, a column past the matrix's included.)
    if (!kWgmma && !active) continue;
    const int st = first + i;
    const int buf = i % kStages;
    const __half* xs = stage_x(buf) + x_at;
    const uint32_t* ws = stage_weights(buf) + column * kStageLines * 32 + lane;
    const uint32_t* rs = stage_records(buf) + column * kStageChunks * kRecordWords;
    const int c0 = st * kStageChunks;
    const int line0 = chunk_line[c0];
    // Chunk j's group scales (when they change) and its lane's words at width B.
    auto chunk_words = [&](auto width, int j, uint32_t info, uint32_t* w) {
      constexpr int B = decltype(width)::value;
      const uint32_t group = qtile::chunk_group(info);
      const int bits = qtile::chunk_width(info);
      if (group != scales_group || bits != scales_bits) {  // sym zeros depend on the width
        scales.load(rs + j * kRecordWords, g, bits, m.gguf_mode);
        scales_group = group;
        scales_bits = bits;
      }
      const uint32_t* wl = ws + (chunk_line[c0 + j] - line0) * 32;
#pragma unroll
      for (int b = 0; b < qtile::width_bits(B); ++b) w[b] = wl[b * 32];
    };
    // Chunk j of the stage at width B: its scales and words, its x fragments, its MMAs.
    auto multiply_chunk = [&](auto width, int j, uint32_t info) {
      constexpr int B = decltype(width)::value;
      uint32_t w[qtile::width_bits(B)];
      chunk_words(width, j, info, w);
      uint32_t bf[kRowTiles][4];
#pragma unroll
      for (int mt = 0; mt < kRowTiles; ++mt) ldmatrix_x4(bf[mt], xs + mt * 8 * kXStride + j * 32);
      qchunk::chunk_mma_decoded<B, kRowTiles>(w, bf, scales, acc);
    };
    // WGMMA: chunk j's A fragments at width B (zero past the matrix), decoded apart from the MMAs
    // so that no wgmma sits in a branch of the width switch (ptxas would serialize them all).
    auto decode_chunk = [&](auto width, int j, uint32_t info, uint32_t wt[qtile::kPairs]) {
      constexpr int B = decltype(width)::value;
      uint32_t w[qtile::width_bits(B)];
      chunk_words(width, j, info, w);
      scales.template decode<B>(w, wt);
#pragma unroll
      for (int p = 0; p < qtile::kPairs; ++p) wt[p] = active ? wt[p] : 0u;
    };
    // Then per k16 step and 16-output half one m64n64k16 over the warpgroup's 4 columns and the
    // block's 64 rows.
    auto issue_chunk = [&](int j, const uint32_t wt[qtile::kPairs]) {
      wgmma::fence_operands(acc[0]);
      wgmma::fence_operands(acc[1]);
      wgmma::fence();
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        const uint64_t b = wgmma::b_descriptor(stage_x(buf) + (j * 4 + ks * 2) * 64, 128,
                                               static_cast<uint32_t>(Block::kGroupBytes));
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) wgmma::mma_m64n64k16(acc[nt], &wt[(nt * 2 + ks) * 4], b);
      }
      wgmma::commit();
      wgmma::wait<1>();  // the previous chunk's group: its A registers are free again
      wgmma::fence_operands(acc[0]);
      wgmma::fence_operands(acc[1]);
    };
    // A full stage of one width (GPTQ always, EXL2 but at its width changes) is unrolled under
    // one switch, so that a chunk's loads and decoding overlap the previous chunk's MMAs; other
    // stages go chunk by chunk.
    uint32_t info[kStageChunks];
#pragma unroll
    for (int j = 0; j < kStageChunks; ++j) info[j] = c0 + j < chunks ? chunk_info[c0 + j] : 0u;
    if constexpr (kWgmma) {
#pragma unroll
      for (int j = 0; j < kStageChunks; ++j) {
        if (c0 + j < chunks) {
          uint32_t wt[qtile::kPairs];
          qchunk::with_width<KIND>(qtile::chunk_width(info[j]),
                                   [&](auto width) { decode_chunk(width, j, info[j], wt); });
          issue_chunk(j, wt);
        }
      }
    } else {
      // A full stage of one width (GPTQ always, EXL2 but at its width changes) is unrolled under
      // one switch, so that a chunk's loads and decoding overlap the previous chunk's MMAs;
      // other stages go chunk by chunk.
      bool uniform = c0 + kStageChunks <= chunks;
#pragma unroll
      for (int j = 0; j < kStageChunks; ++j) {
        uniform = uniform && qtile::chunk_width(info[j]) == qtile::chunk_width(info[0]);
      }
      if (uniform) {
        qchunk::with_width<KIND>(qtile::chunk_width(info[0]), [&](auto width) {
#pragma unroll
          for (int j = 0; j < kStageChunks; ++j) multiply_chunk(width, j, info[j]);
        });
      } else {
#pragma unroll 1
        for (int j = 0; j < kStageChunks && c0 + j < chunks; ++j) {
          const uint32_t info_j = chunk_info[c0 + j];  // (a run-time index: not info[j])
          qchunk::with_width<KIND>(qtile::chunk_width(info_j),
                                   [&](auto width) { multiply_chunk(width, j, info_j); });
        }
      }
    }
    // The stage's buffer is refilled after the next barrier: its reads must be done.
    if constexpr (kWgmma) wgmma::wait<0>();
  }
  cp_async_wait<0>();
  if (!active) return;

  // C fragment element i of (nt, mt): output nb·32 + 16nt + g + 8(i/2), x row 8mt + 2t + (i&1).
  const int64_t N = m.out_features;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t o = nb * 32 + nt * 16 + g + 8 * (i >> 1);
      if (o >= N) continue;
      const float b = bias && !partials ? bias[o] : 0.0f;
#pragma unroll
      for (int mt = 0; mt < kRowTiles; ++mt) {
        const int tok = row0 + row_warp * kRowTiles * 8 + 8 * mt + 2 * t + (i & 1);
        if (tok >= rows) continue;
        if (partials) {
          partials[(int64_t(blockIdx.z) * rows + tok) * N + o] = acc[nt][mt][i];
        } else {
          qchunk::store_out(out, out_f32, tok * N + o, acc[nt][mt][i] + b);
        }
      }
    }
  }
}

// The K splits' partials added in split order (+ bias): one thread per output of a row.
__global__ void quant_mma_sum_kernel(const float* partials, int splits, int64_t rows, int64_t N,
                                     const float* bias, void* out, bool out_f32) {
  const int64_t total = rows * N;
  for (int64_t at = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; at < total;
       at += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int z = 0; z < splits; ++z) sum += partials[z * total + at];
    qchunk::store_out(out, out_f32, at, sum + (bias ? bias[at % N] : 0.0f));
  }
}

template <class Block>
int64_t block_count(const QuantMatrix& m, int64_t rows) {
  return ceil_div(rows, Block::kRows) * ceil_div(m.blocks, Block::kColumns);
}

// Calls f(Block{}) for the block type of `shape`.
template <class F>
auto with_block(QuantMmaBlock shape, F&& f) {
  switch (shape) {
    case QuantMmaBlock::kWide:
      return f(WideBlock{});
    case QuantMmaBlock::kWgmma:
      return f(WgmmaBlock{});
    default:
      return f(TallBlock{});
  }
}

}  // namespace

int quant_mma_k_splits(const QuantMatrix& m, int64_t rows, QuantMmaBlock shape,
                       int multiprocessors) {
  return with_block(shape, [&](auto block) {
    using Block = decltype(block);
    const int64_t blocks = block_count<Block>(m, rows);
    const int64_t stages = ceil_div(m.chunks, kStageChunks);
    // In units of one block's whole-K time, s splits take ceil(blocks · s / slots) / s waves
    // (slots: the blocks resident at once), plus writing and adding s partials per output, about
    // s · 200 / K (an output's K multiply-adds against four bytes written and read per split).
    // Each split keeps at least kMinSplitStages stages (the pipeline's depth and more), and
    // partials are at most kQuantMmaPartialBytes.
    constexpr int64_t kMinSplitStages = 2 * kStages;
    const int64_t most = std::max<int64_t>(
        1, std::min({stages / kMinSplitStages, int64_t(16),
                     static_cast<int64_t>(kQuantMmaPartialBytes / (4 * rows * m.out_features))}));
    const int64_t slots = std::max(multiprocessors, 1);  // one block per multiprocessor
    int64_t splits = 1;
    double best = 1e30;
    for (int64_t s = 1; s <= most; ++s) {
      const double waves =
          static_cast<double>(ceil_div(blocks * s, slots)) / static_cast<double>(s);
      const double time =
          waves + (s > 1 ? static_cast<double>(s) * 200.0 / static_cast<double>(m.chunks * 32) : 0);
      if (time < best - 1e-9) best = time, splits = s;
    }
    return static_cast<int>(splits);
  });
}

size_t quant_mma_partial_floats(const QuantMatrix& m, int64_t rows, int k_splits) {
  return k_splits > 1 ? static_cast<size_t>(k_splits * rows * m.out_features) : 0;
}

cudaError_t quant_mma_gemm(const Launch& l, const QuantMatrix& m, const void* x, int64_t ld_x,
                           int64_t k_valid, int64_t rows, const float* bias, void* out, Elem out_t,
                           QuantMmaBlock shape, int k_splits, float* partials) {
  const int columns = with_block(shape, [](auto block) { return decltype(block)::kColumns; });
  if (!qchunk::valid_matrix(m) || !x || !out || rows < 1 || rows > (int64_t(1) << 30) ||
      ld_x % 8 != 0 || k_valid % 8 != 0 || k_valid < 8 || k_valid > m.chunks * 32 ||
      ld_x < k_valid || reinterpret_cast<uintptr_t>(x) % 16 != 0 || out_t == Elem::kBF16 ||
      (m.kind == QuantKind::kExl2 && m.groups > kMaxExl2Groups) ||
      table_bytes(m) > size_t(kMaxTableBytes) || ceil_div(m.blocks, columns) > 65535 ||
      k_splits < 1 || k_splits > 65535 || (k_splits > 1 && !partials) ||
      (shape == QuantMmaBlock::kWgmma && !wgmma_supported())) {
    return cudaErrorInvalidValue;
  }
  float* split_partials = k_splits > 1 ? partials : nullptr;
  Launch plain = l;  // cuBLAS or the x gather, not a kernel of ours, may precede it
  plain.pdl = false;
  const auto* xh = static_cast<const __half*>(x);
  const cudaError_t e = qchunk::with_kind(m.kind, [&](auto k) {
    constexpr QuantKind K = decltype(k)::value;
    return with_block(shape, [&](auto block) {
      using Block = decltype(block);
      const auto kernel = quant_mma_gemm_kernel<K, Block>;
      const size_t smem = size_t(kStages) * Block::kStageBytes + table_bytes(m);
      // Past 48 KB of dynamic shared memory a kernel must opt in (a host-side attribute of the
      // current device, fine during graph capture).
      if (const cudaError_t err = cudaFuncSetAttribute(
              kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
          err != cudaSuccess) {
        return err;
      }
      const dim3 grid(static_cast<unsigned>(ceil_div(rows, Block::kRows)),
                      static_cast<unsigned>(ceil_div(m.blocks, Block::kColumns)),
                      static_cast<unsigned>(k_splits));
      return launch_kernel(plain, kernel, grid, dim3(Block::kThreads), smem, m, xh, ld_x, k_valid,
                           static_cast<int>(rows), bias, out, out_t == Elem::kF32, split_partials);
    });
  });
  if (e != cudaSuccess || k_splits == 1) return e;
  constexpr int kSumThreads = 256;
  const auto sum_blocks =
      static_cast<unsigned>(std::min<int64_t>(ceil_div(rows * m.out_features, kSumThreads), 8192));
  return launch_kernel(plain, quant_mma_sum_kernel, dim3(sum_blocks), dim3(kSumThreads), 0,
                       static_cast<const float*>(split_partials), k_splits, rows, m.out_features,
                       bias, out, out_t == Elem::kF32);
}

}  // namespace hearth::kernels
