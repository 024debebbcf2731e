// EXL2 / GPTQ / GGUF product for many x rows (prompts, large decode batches) straight from the
// packed tiles on the tensor cores: the weights are decoded in registers into the MMA operands, so
// no fp16 copy of the matrix is written and read back as the dequantize + cuBLAS path does
// (kernels/quant_dequant.cu; about 9 ms of an 8B prefill step, docs/PERFORMANCE.md). Layout and
// per-chunk arithmetic are the fused kernel's (kernels/quant_tile_codec.cuh,
// kernels/quant_chunk_math.cuh): each lane's words decode into exactly its mma.sync A fragments,
// bit-identical to the reference dequantizers.
//
// A block computes a few 32-output columns × 64 or 128 x rows (MmaBlock) over the whole K, in
// stages of kStageChunks chunks: the stage's x (in stored row order: quant_gather_x's output, or x
// itself when the rows are in order), the columns' weight words and the chunks' group records go
// to shared memory by cp.async, kStages - 1 stages ahead of the one being multiplied. Each warp
// takes one column and 64 rows: per chunk it decodes its lane's words once and runs 2 × 2 × 8 MMAs
// on them, with B fragments from ldmatrix. Weights are cheaper to load than x (4 bits against
// 16), which favours wide blocks; the row blocks of one column block run side by side (the row
// block is the fastest-moving block index), so all but the first read the weights from L2.
//
// Unsplit, every output is summed over the chunks in order by one warp, so a row's result depends
// neither on the batch size nor on which rows share its block. When the blocks are too few to fill
// the GPU (few rows), K is split over gridDim.z blocks (quant_mma_k_splits: by the row count, so
// rows then depend on the batch size) and quant_mma_sum_kernel adds their partials in order.
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/quant_chunk_math.cuh"
#include "kernels/quant_kernels.h"

namespace hearth::kernels {
namespace {

using qchunk::GroupScales;

constexpr int kRowTiles = 8;  // 8-row MMA tiles per warp: 64 rows
constexpr int kStageChunks = 2;
constexpr int kStages = 4;
// Halves per staged x row; +8: the eight rows an ldmatrix reads start in different banks.
constexpr int kXStride = kStageChunks * 32 + 8;
constexpr int kStageLines = kStageChunks * 8;        // a column's lines when every chunk is 8-bit
constexpr int kRecordWords = qchunk::kMaxMetaWords;  // one group record per (column, chunk)
constexpr int kRecordCopies = 12;                    // 16-byte copies of the largest record
// EXL2's fp16 scale_max per group sits in a table after the stages (copied once per block: a
// record's word 32 is filled from it, since cp.async cannot copy two bytes).
constexpr int64_t kMaxExl2Groups = 8192;

// A block of COLUMNS 32-output columns (a warp each) × ROW_WARPS warps of 64 rows, and the bytes
// of one stage in shared memory: x, then the weight words, then the group records.
template <int COLUMNS, int ROW_WARPS>
struct MmaBlock {
  static constexpr int kColumns = COLUMNS;
  static constexpr int kRows = ROW_WARPS * kRowTiles * 8;
  static constexpr int kThreads = COLUMNS * ROW_WARPS * 32;
  static constexpr int kStageX = kRows * kXStride * 2;
  static constexpr int kStageWeights = COLUMNS * kStageLines * 32 * 4;
  static constexpr int kStageRecords = COLUMNS * kStageChunks * kRecordWords * 4;
  static constexpr int kStageBytes = kStageX + kStageWeights + kStageRecords;
  static_assert(kStageX % 16 == 0 && kStageWeights % 16 == 0 && kStageBytes % 16 == 0);
};
using TallBlock = MmaBlock<4, 2>;  // 128 outputs × 128 rows
using WideBlock = MmaBlock<8, 1>;  // 256 outputs × 64 rows: half the x per weight, more blocks

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
  auto* scale_max = reinterpret_cast<uint16_t*>(smem + kStages * kStageBytes);
  if constexpr (KIND == QuantKind::kExl2) {
    for (int i = threadIdx.x; i < m.groups; i += kThreads) scale_max[i] = m.scale_max[i];
    __syncthreads();  // read by the record copies of every stage
  }

  // Stage `st` (chunks [st · kStageChunks, ...)) into buffer `buf`, by all threads.
  auto load_stage = [&](int buf, int st) {
    const int c0 = st * kStageChunks;
    const int c1 = min(chunks, c0 + kStageChunks);
    // x: kRows rows of the stage's 32 · kStageChunks stored rows, 16 bytes a copy; rows past
    // `rows` and columns past k_valid (padding after an in-order K) read as zeros.
    __half* xs = stage_x(buf);
    constexpr int kPieces = kStageChunks * 4;
    for (int e = threadIdx.x; e < kRows * kPieces; e += kThreads) {
      const int r = e / kPieces, piece = e - r * kPieces;
      const int64_t k = int64_t(c0) * 32 + piece * 8;
      const bool valid = row0 + r < rows && k < k_valid;
      cp_async16(xs + r * kXStride + piece * 8, valid ? x + int64_t(row0 + r) * ld_x + k : x,
                 valid);
    }
    // Weights: a column's lines of consecutive chunks are consecutive in qweight.
    uint32_t* ws = stage_weights(buf);
    const int line0 = m.chunk_line[c0];
    const int lines = m.chunk_line[c1] - line0;
    constexpr int kColumnPieces = kStageLines * 8;
    for (int e = threadIdx.x; e < kColumns * kColumnPieces; e += kThreads) {
      const int col = e / kColumnPieces, piece = e - col * kColumnPieces;
      const int64_t n = nb0 + col;
      if (piece < lines * 8 && n < m.blocks) {
        cp_async16(ws + col * kStageLines * 32 + piece * 4,
                   m.qweight + (n * m.lines + line0) * 32 + piece * 4, true);
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
      const uint32_t group = qtile::chunk_group(m.chunk_info[c]);
      const int64_t gi = n * m.groups + group;
      uint32_t* rec = rs + record * kRecordWords;
      if constexpr (KIND == QuantKind::kExl2) {
        if (piece == 0) cp_async16(rec, m.scale_codes + gi * 8, true);
        if (piece == 1) rec[32] = scale_max[group];
      } else if constexpr (KIND == QuantKind::kGguf || KIND == QuantKind::kGgufHalf) {
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
    __syncthreads();  // step i's stage has arrived, and every warp is done with the buffer refilled
    if (i + kStages - 1 < stages) load_stage((i + kStages - 1) % kStages, first + i + kStages - 1);
    cp_async_commit();
    if (!active) continue;
    const int st = first + i;
    const int buf = i % kStages;
    const __half* xs = stage_x(buf) + x_at;
    const uint32_t* ws = stage_weights(buf) + column * kStageLines * 32 + lane;
    const uint32_t* rs = stage_records(buf) + column * kStageChunks * kRecordWords;
    const int c0 = st * kStageChunks;
    const int line0 = m.chunk_line[c0];
#pragma unroll
    for (int j = 0; j < kStageChunks; ++j) {
      const int c = c0 + j;
      if (c >= chunks) break;
      const uint32_t info = m.chunk_info[c];
      const int bits = qtile::chunk_bits(info);
      const uint32_t group = qtile::chunk_group(info);
      if (group != scales_group || bits != scales_bits) {  // sym zeros depend on the width
        scales.load(rs + j * kRecordWords, g, bits, m.gguf_mode);
        scales_group = group;
        scales_bits = bits;
      }
      uint32_t bf[kRowTiles][4];
#pragma unroll
      for (int mt = 0; mt < kRowTiles; ++mt) ldmatrix_x4(bf[mt], xs + mt * 8 * kXStride + j * 32);
      const uint32_t* wl = ws + (m.chunk_line[c] - line0) * 32;
      qchunk::with_width(bits, [&](auto width) {
        constexpr int B = decltype(width)::value;
        uint32_t w[B];
#pragma unroll
        for (int i = 0; i < B; ++i) w[i] = wl[i * 32];
        qchunk::chunk_mma<B, kRowTiles>(w, bf, scales, acc);
      });
    }
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

}  // namespace

int quant_mma_k_splits(const QuantMatrix& m, int64_t rows, QuantMmaBlock shape,
                       int multiprocessors) {
  const int64_t blocks = shape == QuantMmaBlock::kWide ? block_count<WideBlock>(m, rows)
                                                       : block_count<TallBlock>(m, rows);
  const int64_t stages = ceil_div(m.chunks, kStageChunks);
  // Enough blocks for one per multiprocessor, each with at least kMinSplitStages stages (the
  // pipeline's depth and more), and partials of at most kQuantMmaPartialBytes.
  constexpr int64_t kMinSplitStages = 2 * kStages;
  int64_t splits = std::min(ceil_div(multiprocessors, blocks), stages / kMinSplitStages);
  splits = std::min<int64_t>(splits, kQuantMmaPartialBytes / (4 * rows * m.out_features));
  return static_cast<int>(std::max<int64_t>(splits, 1));
}

size_t quant_mma_partial_floats(const QuantMatrix& m, int64_t rows, int k_splits) {
  return k_splits > 1 ? static_cast<size_t>(k_splits * rows * m.out_features) : 0;
}

cudaError_t quant_mma_gemm(const Launch& l, const QuantMatrix& m, const void* x, int64_t ld_x,
                           int64_t k_valid, int64_t rows, const float* bias, void* out, Elem out_t,
                           QuantMmaBlock shape, int k_splits, float* partials) {
  const bool wide = shape == QuantMmaBlock::kWide;
  const int columns = wide ? WideBlock::kColumns : TallBlock::kColumns;
  if (!qchunk::valid_matrix(m) || !x || !out || rows < 1 || rows > (int64_t(1) << 30) ||
      ld_x % 8 != 0 || k_valid % 8 != 0 || k_valid < 8 || k_valid > m.chunks * 32 ||
      ld_x < k_valid || reinterpret_cast<uintptr_t>(x) % 16 != 0 || out_t == Elem::kBF16 ||
      (m.kind == QuantKind::kExl2 && m.groups > kMaxExl2Groups) ||
      ceil_div(m.blocks, columns) > 65535 || k_splits < 1 || k_splits > 65535 ||
      (k_splits > 1 && !partials)) {
    return cudaErrorInvalidValue;
  }
  float* split_partials = k_splits > 1 ? partials : nullptr;
  Launch plain = l;  // cuBLAS or the x gather, not a kernel of ours, may precede it
  plain.pdl = false;
  const auto* xh = static_cast<const __half*>(x);
  auto go = [&](auto kernel, auto block) {
    using Block = decltype(block);
    const size_t smem = size_t(kStages) * Block::kStageBytes +
                        (m.kind == QuantKind::kExl2 ? size_t(ceil_div(m.groups * 2, 16)) * 16 : 0);
    // Past 48 KB of dynamic shared memory a kernel must opt in (a host-side attribute of the
    // current device, fine during graph capture).
    if (const cudaError_t e = cudaFuncSetAttribute(
            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        e != cudaSuccess) {
      return e;
    }
    const dim3 grid(static_cast<unsigned>(ceil_div(rows, Block::kRows)),
                    static_cast<unsigned>(ceil_div(m.blocks, Block::kColumns)),
                    static_cast<unsigned>(k_splits));
    return launch_kernel(plain, kernel, grid, dim3(Block::kThreads), smem, m, xh, ld_x, k_valid,
                         static_cast<int>(rows), bias, out, out_t == Elem::kF32, split_partials);
  };
  const cudaError_t e = qchunk::with_kind(m.kind, [&](auto k) {
    constexpr QuantKind K = decltype(k)::value;
    if (wide) return go(quant_mma_gemm_kernel<K, WideBlock>, WideBlock{});
    return go(quant_mma_gemm_kernel<K, TallBlock>, TallBlock{});
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
