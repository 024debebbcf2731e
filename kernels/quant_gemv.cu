// EXL2 / GPTQ / GGUF fused dequantize-and-multiply for 1..32 x rows (decode; one to four 8-row MMA
// tiles per weight fragment: faster than the tensor-core kernel for 9..64 rows it replaced,
// docs/PERFORMANCE.md). Layout and per-chunk arithmetic:
// kernels/quant_tile_codec.cuh and kernels/quant_chunk_math.cuh (tiles of 32 outputs × 32 stored
// rows whose lane words hold the codes of mma.sync A fragments; each weight is decoded
// bit-identically to the reference dequantizer, multiplied on the tensor cores with fp32
// accumulators). Organised for few rows, where the weights are the whole cost and every instruction
// per chunk counts.
//
// One warp = one 32-output column × one K slice of P chunks (P = 4, 8 or 16 from the matrix
// shape alone, qchunk::slice_chunks). A block holds 8 warps on 8 neighbouring columns and the same
// slice, so the x rows of the slice are gathered into shared memory once (act-order applied through
// row_src; given QuantGemmScratch::staged_x, quant_stage_x_kernel lays x out in
// the staging order first and the blocks copy it with 16-byte cp.async instead of gathering it
// element by element, a round trip per 16 rows before any weight load: an 8B decode step at 32
// rows 9.9 -> 7.1 ms, docs/PERFORMANCE.md),
// and the per-warp set-up is small:
//  - before waiting on the previous kernel: the slice's chunk facts (one per lane) and cp.async
//    copies of the scales of each group the slice starts. No L2 prefetch of the weights: issued
//    by every resident block of the next kernels while the step's chain of dependent kernels
//    runs, those bulk reads delayed that chain more than they saved (docs/PERFORMANCE.md);
//  - the loop runs over runs of equal-width chunks (found with one ballot, so the width switch is
//    taken once per run, not per chunk) and loads the words of several chunks into registers
//    before decoding them (about 16 words in flight per lane);
//  - x rows beyond `rows` are never staged: those lanes read one zero row.
// 64 registers with one row tile (4 blocks of 8 warps per multiprocessor): more warps in flight
// measured faster than fewer warps with more registers (docs/PERFORMANCE.md); 3 blocks with two
// tiles, 2 with three or four (their accumulators and x fragments need the registers; three
// tiles for 17-24 rows do a quarter less work than four at the same occupancy: +2-4 %).
// The slices' fp32 sums go to the partials buffer and are added in slice order, so a row's value
// does not depend on the batch size: by the last block of a column group, or, from
// QuantGemmScratch::sum_kernel_min_rows rows on, by quant_gemm_sum_kernel over every
// multiprocessor (the last block's serial tail had grown with the rows to most of the launch).
// RMSNorm folded in (QuantGemmTarget's residual, QuantInputNorm): the producer's completion adds
// into the residual and leaves the rows' inverse RMS (a second completion round, over its column
// groups); the consumer multiplies x by it and by the norm weights (copied before the wait) as it
// stages x. The separate pass cost ~2.8 µs per norm at batch 1 (H100); the fold gains ~2 % there.
// LoRA folded in (QuantGemmLora, instances of their own): blocks of their own, ahead of the
// others so that they are dispatched first, project each K slice onto a's 16-column tiles
// (mma.sync, with the staged x as the B operand exactly as the weights meet it), weighed per row.
// Where the slices' sums are added, those projections are added too, in slice order, and bt · t
// joins each output: the last block of a column group waits for them (made by blocks dispatched
// before it, so they run), or quant_gemm_sum_kernel finds them done. No launches of their own, and
// each projection is made once: the first fold had every block project its slice again (56
// times for gate) and add its share of bt · t, +38 % at batch 1 on the 8B shape against +12 %
// now (docs/PERFORMANCE.md).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/quant_chunk_math.cuh"
#include "kernels/quant_kernels.h"
#include "kernels/rms_sum.cuh"

namespace hearth::kernels {
namespace {

using qchunk::GroupScales;
using qchunk::meta_words;
using qtile::staged_position;
constexpr int kMaxWarps = 8;
constexpr uint32_t kFull = 0xffffffffu;

// Weight words are read once per step: no L1 allocation.
__device__ __forceinline__ uint32_t load_weight(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Chunks whose words are loaded together: about 16 words per lane in flight.
template <int B>
constexpr int batch_chunks() {
  return 16 / B >= 2 ? 16 / B : 2;
}

// One chunk (index j of the slice) from the lane's words in registers. xs: the lane's x
// fragments of chunk 0 for rows 0..7 (16 bytes per lane per chunk, see the staging below); those
// of rows 8mt .. 8mt + 7 are mt · xs1 halves further.
template <int B, QuantKind KIND, int MT>
__device__ __forceinline__ void slice_chunk(const uint32_t w[B], int j, uint32_t group_starts,
                                            const uint32_t* meta, uint32_t mode, const __half* xs,
                                            int xs1, int g, GroupScales<KIND>& scales,
                                            float acc[2][MT][4]) {
  if ((group_starts >> j) & 1u) {  // a run always starts with a group
    scales.load(meta + j * meta_words<KIND>(), g, B, mode);
  }
  uint32_t bf[MT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const uint4 v = *reinterpret_cast<const uint4*>(xs + j * 32 + mt * xs1);
    bf[mt][0] = v.x, bf[mt][1] = v.y, bf[mt][2] = v.z, bf[mt][3] = v.w;
  }
  qchunk::chunk_mma<B, MT>(w, bf, scales, acc);
}

// Chunks [j0, j1) of the warp's slice, all B bits wide. wl: word 0 of chunk j0 for this lane.
// Full batches of U chunks load all their words before any is decoded; the rest one by one.
template <int B, QuantKind KIND, int MT>
__device__ __forceinline__ void run_chunks(const uint32_t* wl, int j0, int j1,
                                           uint32_t group_starts, const uint32_t* meta,
                                           uint32_t mode, const __half* xs, int xs1, int g,
                                           float acc[2][MT][4]) {
  constexpr int U = batch_chunks<B>();
  GroupScales<KIND> scales;
  int j = j0;
  for (; j + U <= j1; j += U, wl += U * B * 32) {
    uint32_t w[U][B];
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int i = 0; i < B; ++i) w[u][i] = load_weight(wl + (u * B + i) * 32);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      slice_chunk<B, KIND, MT>(w[u], j + u, group_starts, meta, mode, xs, xs1, g, scales, acc);
    }
  }
  for (; j < j1; ++j, wl += B * 32) {
    uint32_t w[B];
#pragma unroll
    for (int i = 0; i < B; ++i) w[i] = load_weight(wl + i * 32);
    slice_chunk<B, KIND, MT>(w, j, group_starts, meta, mode, xs, xs1, g, scales, acc);
  }
}

// x rows staged in shared memory: with one 8-row tile, the rows and one zero row that every
// absent row reads; with MT tiles, all 8·MT rows (zeros past `rows`), each tile reading its own.
__host__ __device__ constexpr int staged_x_rows(int mt, int rows) {
  return mt == 1 ? rows + 1 : 8 * mt;
}

// MMA tiles of 8 x rows per weight fragment.
constexpr int row_tiles(int64_t rows) {
  return rows <= 8 ? 1 : rows <= 16 ? 2 : rows <= 24 ? 3 : 4;
}

// A matrix's LoRA (QuantGemmLora), cols 0 without one; t_part: the slices' projections
// [slices][rows][cols] (QuantGemmScratch::lora_t).
struct GemvLora {
  const __half* a;
  const __half* bt;
  const int32_t* slot_of_col;
  const float* row_weights;
  float* t_part;
  int cols;
  int slots;
};

// a is projected 16 columns (one MMA tile) at a time, by blocks of their own (GemvPart::
// lora_blocks, one per K slice and tile, ahead of the part's other blocks so that they are
// dispatched first): the tile [16][slice rows + 8] fp16 (+8: 16-byte rows that start in different
// banks), then each warp's fp32 tile [16][8] for the sum of the two warps of a row tile. A
// finishing block reuses the area for the rows' t [rows][cols].
constexpr int kLoraTileCols = 16;
constexpr int kLoraWarpTile = kLoraTileCols * 8;  // floats
__host__ __device__ constexpr int lora_tiles(int cols) {
  return (cols + kLoraTileCols - 1) / kLoraTileCols;
}
__host__ __device__ constexpr int lora_a_stride(int p_chunks) {
  return p_chunks * 32 + 8;
}
__host__ __device__ constexpr int lora_reduce_offset(int p_chunks) {
  return kLoraTileCols * lora_a_stride(p_chunks) * 2;
}
// A finishing block's LoRA area: the rows' t [rows][cols] fp32, then bt [cols][256] fp16.
__host__ __device__ constexpr int lora_finish_bt_offset(int cols, int rows) {
  return (rows * cols * 4 + 15) / 16 * 16;
}
__host__ __device__ constexpr int lora_area_bytes(int p_chunks, int cols, int rows) {
  const int project = lora_reduce_offset(p_chunks) + kMaxWarps * kLoraWarpTile * 4;
  const int finish = lora_finish_bt_offset(cols, rows) + cols * kQuantNormSlotColumns * 2;
  return project > finish ? project : finish;
}

// The counters after a matrix's column groups: [column_groups] the residual's second round,
// [+1] slice projections made, [+2] finishing blocks done with them.

// last_to_arrive, and whether *watched had reached target when it arrived: another warp's thread
// reads it (acquiring what was released with it) alongside the arrival's atomic, so that a
// finishing block does not spend a round trip of its own on what is, as a rule, long done.
__device__ __forceinline__ bool last_to_arrive_seeing(int32_t* counter, int count,
                                                      const int32_t* watched, int target,
                                                      bool& seen) {
  __shared__ bool last, saw;
  __syncthreads();
  if (threadIdx.x == 0) {
    last = arrive_at(counter) == count - 1;
  } else if (threadIdx.x == 32) {
    saw = load_acquire_gpu(watched) >= target;
  }
  __syncthreads();
  seen = saw;
  return last;
}

// One t (a row's projection onto a column: entry tok · cols + c of t_part) summed over the
// slices by kTLanes lanes: lane j adds slices j, j + kTLanes, ... in order, then the lanes are
// added in a fixed butterfly. Both completions sum this way, so a row gets the same bits in either.
// issue() starts the loads of the first kTBatch of the lane's slices (one round trip, which the
// caller may overlap with its own loads); finish() adds them and any further ones.
constexpr int kTLanes = 4;
constexpr int kTBatch = 8;
static_assert(kQuantGemmLoraMaxCols * kTLanes <= kQuantNormSlotColumns,
              "one pass of a 256-thread block sums a row's t");
struct LoraTSum {
  float v[kTBatch];
  const float* p;  // slice 0 of the entry, this lane's first slice
  int64_t stride;  // kTLanes slices
  int left;        // slices of this lane
  __device__ __forceinline__ void issue(const GemvLora& lora, int slices, int rows, int entry,
                                        bool valid) {
    const int j = threadIdx.x % kTLanes;
    const int64_t slice_stride = int64_t(rows) * lora.cols;
    p = lora.t_part + entry + j * slice_stride;
    stride = kTLanes * slice_stride;
    left = valid && j < slices ? (slices - 1 - j) / kTLanes + 1 : 0;
#pragma unroll
    for (int i = 0; i < kTBatch; ++i) v[i] = i < left ? __ldcg(p + i * stride) : 0.0f;
  }
  __device__ __forceinline__ float finish() {
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kTBatch; ++i) {
      if (i < left) sum += v[i];
    }
    for (int i = kTBatch; i < left; ++i) sum += __ldcg(p + i * stride);  // long K only
    const unsigned group = 0xfu << (threadIdx.x & 31 & ~(kTLanes - 1));
    sum += __shfl_xor_sync(group, sum, 2);
    sum += __shfl_xor_sync(group, sum, 1);
    return sum;
  }
};

// bt of a column group's 256 outputs, [cols][256] fp16, into shared memory by 16-byte copies
// (a LoRA's N is a multiple of 8), for lora_delta.
__device__ __forceinline__ void stage_lora_bt(const GemvLora& lora, int N, int o0, __half* bt_s) {
  for (int e = threadIdx.x; e < lora.cols * 32; e += blockDim.x) {
    const int c = e >> 5, o = o0 + (e & 31) * 8;
    cp_async16(bt_s + c * kQuantNormSlotColumns + (e & 31) * 8,
               o < N ? lora.bt + int64_t(c) * N + o : lora.bt, o < N);
  }
}
// What the LoRA adds to an output of a row whose t is t_row: Σ_c bt[c][o] · t[c], c in order.
// bt_o: the output's bt in stage_lora_bt's layout.
__device__ __forceinline__ float lora_delta(int cols, const __half* bt_o, const float* t_row) {
  float d = 0.0f;
  for (int c = 0; c < cols; ++c) d += __half2float(bt_o[c * kQuantNormSlotColumns]) * t_row[c];
  return d;
}

// One matrix of a launch: its blocks are [block_begin, block_begin + lora_blocks +
// column_groups · slices), the LoRA's projectors first.
struct GemvPart {
  QuantMatrix m;
  const float* bias;
  void* out;
  float* partials;
  int32_t* counters;
  __half* residual;  // QuantGemmTarget's norm fields
  float* norm_sums;
  float* inv_rms;
  float norm_eps;
  bool out_f32;
  int p_chunks;
  int slices;
  int column_groups;
  int block_begin;
  int sum_block_begin;    // its blocks of quant_gemm_sum_kernel (column groups × rows)
  int stage_block_begin;  // its blocks of quant_stage_x_kernel
  __half* staged_x;       // x in this matrix's staging order (QuantGemmScratch), or null
  GemvLora lora;
  int lora_blocks;  // its first blocks, which project x onto a (slices · tiles; 0 without)
};
// The normalization of x (QuantInputNorm), inv_rms null without one.
struct GemvNorm {
  const float* inv_rms;
  const float* weight;
  __half* normed;
};
struct GemvGroup {
  GemvPart part[kQuantGemmMaxGroup];
  int count;
  int row_groups;  // of kQuantGemmMaxRows x rows, each a block of its own
  GemvNorm norm;
  bool sum_kernel;  // the slices are added by quant_gemm_sum_kernel (QuantGemmScratch)
};
static_assert(kMaxWarps * 32 == kQuantNormSlotColumns, "a column group is a norm slot");

// The matrix of a launch that this block works on: the last whose first block of the kernel
// (GemvPart::*kBegin: block_begin, sum_block_begin or stage_block_begin) it has reached.
template <int GemvPart::*kBegin>
__device__ __forceinline__ int part_of_block(const GemvGroup& g) {
  int which = 0;
#pragma unroll
  for (int i = 1; i < kQuantGemmMaxGroup; ++i) {
    if (i < g.count && static_cast<int>(blockIdx.x) >= g.part[i].*kBegin) which = i;
  }
  return which;
}

// Where a block's shared memory lies: each warp's group records, the staged x rows (xs_stride
// halves each), the norm weights of the slice's rows (with a QuantInputNorm), then a LoRA's area
// (16-byte aligned).
template <QuantKind KIND, int MT>
struct BlockSmem {
  uint32_t* meta;
  __half* x;
  float* norm_w;
  unsigned char* lora;
  int xs_stride;
  __device__ __forceinline__ BlockSmem(unsigned char* base, int p_chunks, int rows, bool norm) {
    meta = reinterpret_cast<uint32_t*>(base);
    xs_stride = p_chunks * 32 + 8;  // halves; +8: conflict-free fragment loads
    x = reinterpret_cast<__half*>(meta + kMaxWarps * p_chunks * meta_words<KIND>());
    norm_w = reinterpret_cast<float*>(x + staged_x_rows(MT, rows) * xs_stride);
    lora = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<uintptr_t>(norm_w + (norm ? p_chunks * 32 : 0)) + 15) & ~uintptr_t{15});
  }
};

// The last block of a column group: the group's outputs, Σ of the slices' partials in slice order
// (+ bias), stored; with a residual, also added into it, and the group's sum of squares of each
// row left in norm_sums, from which the last group to finish computes the rows' inverse RMS.
// Every thread takes one output of each row (the block is as wide as the column group).
// With a LoRA (t_s: shared memory for the rows' t), bt · t joins each output, once the slices'
// projections are all made.
template <bool LORA>
__device__ void finish_column_group(const GemvPart& part, int column_groups, int column_group,
                                    int rows, float* t_s, bool projections_seen) {
  if constexpr (!LORA) t_s = nullptr;
  __shared__ float row_sq[kQuantGemmMaxRows][kMaxWarps];
  const int N = static_cast<int>(part.m.out_features);
  const int o = column_group * kQuantNormSlotColumns + static_cast<int>(threadIdx.x);
  const bool to_residual = part.residual != nullptr;
  const GemvLora& lora = part.lora;
  __half* bt_s = nullptr;
  if (t_s) {
    bt_s = reinterpret_cast<__half*>(reinterpret_cast<unsigned char*>(t_s) +
                                     lora_finish_bt_offset(lora.cols, rows));
    stage_lora_bt(lora, N, column_group * kQuantNormSlotColumns, bt_s);  // while awaiting t
    cp_async_commit();
    if (threadIdx.x == 0 && !projections_seen) {
      const int32_t made = part.slices * lora_tiles(lora.cols);
      while (load_acquire_gpu(&part.counters[column_groups + 1]) < made) __nanosleep(32);
    }
    __syncthreads();
    const int entries = rows * lora.cols;
    for (int e0 = 0; e0 < entries; e0 += kQuantNormSlotColumns / kTLanes) {
      const int e = e0 + static_cast<int>(threadIdx.x) / kTLanes;
      LoraTSum t;
      t.issue(lora, part.slices, rows, e, e < entries);
      const float sum = t.finish();
      if (threadIdx.x % kTLanes == 0 && e < entries) t_s[e] = sum;
    }
    cp_async_wait<0>();
    __syncthreads();
  }
  // Rows two at a time: their slices' and residual's loads in flight together (four made the
  // one-tile kernel spill within its 64 registers).
  constexpr int kRowsAtOnce = 2;
  for (int tok0 = 0; tok0 < rows; tok0 += kRowsAtOnce) {
    const int here = min(kRowsAtOnce, rows - tok0);
    float sums[kRowsAtOnce], old[kRowsAtOnce];
    if (o < N) {
#pragma unroll
      for (int r = 0; r < kRowsAtOnce; ++r) {
        old[r] =
            to_residual && r < here ? __half2float(part.residual[int64_t(tok0 + r) * N + o]) : 0.0f;
      }
      qchunk::sum_slices_rows<kRowsAtOnce>(part.partials + int64_t(tok0) * N + o, N, here,
                                           int64_t(rows) * N, part.slices, sums);
    }
#pragma unroll
    for (int r = 0; r < kRowsAtOnce; ++r) {
      if (r >= here) break;  // the same for the whole block
      const int tok = tok0 + r;
      float sq = 0.0f;
      if (o < N) {
        const int64_t at = int64_t(tok) * N + o;
        float v = sums[r];
        if (t_s) v += lora_delta(lora.cols, bt_s + threadIdx.x, t_s + tok * lora.cols);
        v += part.bias ? part.bias[o] : 0.0f;
        qchunk::store_out(part.out, part.out_f32, at, v);
        if (to_residual) {
          const __half sum = __float2half_rn(old[r] + __half2float(__float2half_rn(v)));
          part.residual[at] = sum;
          sq = rms_square(__half2float(sum));  // kernels/rms_sum.cuh: the order of every norm
        }
      }
      if (to_residual) {
        sq = warp_sum(sq);
        if ((threadIdx.x & 31) == 0) row_sq[tok][threadIdx.x >> 5] = sq;
      }
    }
  }
  if (threadIdx.x == 0) {
    part.counters[column_group] = 0;  // ready for the next launch
    // The last group done with the projections readies their counters.
    if (t_s && atomicAdd(&part.counters[column_groups + 2], 1) == column_groups - 1) {
      part.counters[column_groups + 1] = 0;
      part.counters[column_groups + 2] = 0;
    }
  }
  if (!to_residual) return;
  __syncthreads();
  const int tok = static_cast<int>(threadIdx.x);
  if (tok < rows) {
    float total = 0.0f;
    for (int w = 0; w < kMaxWarps; ++w) total += row_sq[tok][w];  // fixed order
    part.norm_sums[int64_t(tok) * column_groups + column_group] = total;
  }
  // The last column group to finish has every group's sums: the rows' inverse RMS.
  if (!last_to_arrive(&part.counters[column_groups], column_groups)) return;
  if (tok < rows) {
    const float ss =
        qchunk::sum_slices(part.norm_sums + int64_t(tok) * column_groups, 1, column_groups);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(N) + part.norm_eps);
    part.inv_rms[tok] = inv;
  }
  if (threadIdx.x == 0) part.counters[column_groups] = 0;
}

// A projector block's work: x's rows of the slice (staged as for the main loop) onto a's tile
// (copied to shared memory before the wait), t[tok][c] = w(tok, slot c) · Σ_r a[c][r] · x[tok][r]
// over the slice, into the part's t_part. On the tensor cores with the tile as the A operand and
// the staged x as B, exactly as the weights meet x; row tile mt is taken by warps 2mt and 2mt + 1,
// the even and the odd chunks, and their sums added in that order: the same for a row in any
// batch. Not inlined, so that the main loop of the kernel keeps no registers for it.
template <QuantKind KIND, int MT>
__device__ __noinline__ void project_lora(const GemvGroup& launch_group, int which, int slice,
                                          int tile, int n, int rows) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GemvPart& part = launch_group.part[which];
  const GemvLora& lora = part.lora;
  const int p_chunks = part.p_chunks;
  const BlockSmem<KIND, MT> sm(smem, p_chunks, rows, launch_group.norm.inv_rms != nullptr);
  const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
  const int stride = lora_a_stride(p_chunks);
  auto* reduce = reinterpret_cast<float*>(sm.lora + lora_reduce_offset(p_chunks));
  // The weights of this thread's outputs (two at most), in flight during the products.
  constexpr int kPerThread = (MT * kLoraWarpTile + kMaxWarps * 32 - 1) / (kMaxWarps * 32);
  float w[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int e = threadIdx.x + i * kMaxWarps * 32;
    const int at = e % kLoraWarpTile;
    const int col = tile * kLoraTileCols + at / 8, tok = e / kLoraWarpTile * 8 + at % 8;
    w[i] = e < MT * kLoraWarpTile && col < lora.cols && tok < rows
               ? lora.row_weights[tok * lora.slots + lora.slot_of_col[col]]
               : 0.0f;
  }
  // Lane (g, t) reads x row 8mt + g, as in the main loop (one tile: absent rows read zeros).
  const __half* xs = sm.x + (MT == 1 ? min(g, rows) : g) * sm.xs_stride + 8 * t;
  cp_async_wait<0>();
  __syncthreads();
  const int mt = warp >> 1;
  if (mt < MT) {
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const __half* ag = reinterpret_cast<const __half*>(sm.lora) + g * stride + 8 * t;
    for (int j = warp & 1; j < n; j += 2) {
      const uint4 lo = *reinterpret_cast<const uint4*>(ag + j * 32);
      const uint4 hi = *reinterpret_cast<const uint4*>(ag + 8 * stride + j * 32);
      const uint4 b = *reinterpret_cast<const uint4*>(xs + j * 32 + mt * 8 * sm.xs_stride);
      const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
      mma_16816<__half>(c, a0, b.x, b.y);
      mma_16816<__half>(c, a1, b.z, b.w);
    }
    // c: (column g, x row 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of the tile.
    float* mine = reduce + warp * kLoraWarpTile;
    mine[g * 8 + 2 * t] = c[0];
    mine[g * 8 + 2 * t + 1] = c[1];
    mine[(g + 8) * 8 + 2 * t] = c[2];
    mine[(g + 8) * 8 + 2 * t + 1] = c[3];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int e = threadIdx.x + i * kMaxWarps * 32;
    const int tl = e / kLoraWarpTile, at = e % kLoraWarpTile;
    const int col = tile * kLoraTileCols + at / 8, tok = tl * 8 + at % 8;
    if (e < MT * kLoraWarpTile && col < lora.cols && tok < rows) {
      const float sum =
          reduce[2 * tl * kLoraWarpTile + at] + reduce[(2 * tl + 1) * kLoraWarpTile + at];
      lora.t_part[(int64_t(slice) * rows + tok) * lora.cols + col] = sum * w[i];
    }
  }
  // Made: for the finishing blocks of this launch (quant_gemm_sum_kernel needs no word).
  if (!launch_group.sum_kernel) {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(&part.counters[part.column_groups + 1], 1);
    }
  }
}

// launch_group is a __grid_constant__: its fields are read from the constant bank where they are
// used, with no copy into registers or local memory.
// LORA: instances that may fold a LoRA in; without it the LoRA code is gone at compile time and
// the kernel is the plain one. The kernel finds its meta and x areas itself rather than through
// BlockSmem (the same addresses): so written, the plain instances keep the register allocation
// they had before BlockSmem existed.
template <QuantKind KIND, int MT, bool LORA>
__global__ void __launch_bounds__(kMaxWarps * 32, MT == 1   ? 4
                                                  : MT == 2 ? 3
                                                            : 2)
    quant_gemv_kernel(const __grid_constant__ GemvGroup launch_group, const __half* x_all,
                      int all_rows) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int which = part_of_block<&GemvPart::block_begin>(launch_group);
  const GemvPart& part = launch_group.part[which];
  const QuantMatrix& m = part.m;
  const int p_chunks = part.p_chunks;
  const int slices = part.slices;
  // The row group moves fastest, so that the blocks of the same weights run side by side and all
  // but the first find them in L2.
  // One row group (decode: the usual case) takes no division.
  const int in_part = static_cast<int>(blockIdx.x) - part.block_begin;
  const int row_groups = launch_group.row_groups;
  const int row0 = row_groups == 1 ? 0 : in_part % row_groups * kQuantGemmMaxRows;
  const int local = row_groups == 1 ? in_part : in_part / row_groups;
  const int rows = row_groups == 1 ? all_rows : min(all_rows - row0, kQuantGemmMaxRows);
  const __half* x = x_all + int64_t(row0) * m.in_features;
  // A LoRA's projector blocks come first (LoRA launches have one row group).
  const int lora_tile_count = LORA ? lora_tiles(part.lora.cols) : 1;
  const bool projector = LORA && local < part.lora_blocks;
  const int main_local = local - (LORA ? part.lora_blocks : 0);
  const int column_group = projector ? -1 : main_local % part.column_groups;
  const int slice = projector ? local / lora_tile_count : main_local / part.column_groups;
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int64_t nb = int64_t(column_group) * warps + warp;
  const bool active = (!LORA || !projector) && nb < m.blocks;
  const int c0 = slice * p_chunks;
  const int n = min(static_cast<int>(m.chunks) - c0, p_chunks);  // chunks of the slice
  constexpr int kMeta = meta_words<KIND>();
  const BlockSmem<KIND, MT> sm(smem, p_chunks, rows, launch_group.norm.inv_rms != nullptr);
  uint32_t* meta = reinterpret_cast<uint32_t*>(smem) + warp * p_chunks * kMeta;
  const int xs_stride = sm.xs_stride;
  __half* s_x =
      reinterpret_cast<__half*>(reinterpret_cast<uint32_t*>(smem) + warps * p_chunks * kMeta);

  pdl_launch_dependents();
  // Weight-side data (never written by other kernels), before waiting on the previous kernel.
  uint32_t info = 0;
  int line = 0;
  if (lane < n) {
    info = m.chunk_info[c0 + lane];
    line = m.chunk_line[c0 + lane];
  }
  const int bits = qtile::chunk_bits(info);
  const uint32_t group = qtile::chunk_group(info);
  const int prev_bits = __shfl_up_sync(kFull, bits, 1);
  const uint32_t prev_group = __shfl_up_sync(kFull, group, 1);
  const uint32_t group_starts =
      __ballot_sync(kFull, lane < n && (lane == 0 || group != prev_group));
  const uint32_t width_starts = __ballot_sync(kFull, lane < n && (lane == 0 || bits != prev_bits));
  const uint32_t* wcol = m.qweight + nb * m.lines * 32;
  if (active) {
    // The record of each group the slice starts: lane j copies the one of chunk j.
    if (lane < n && ((group_starts >> lane) & 1u)) {
      const int64_t gi = nb * m.groups + group;
      uint32_t* rec = meta + lane * kMeta;
      if constexpr (KIND == QuantKind::kExl2) {
        cp_async16(rec, m.scale_codes + gi * 8, true);
        rec[32] = m.scale_max[group];
      } else if constexpr (KIND == QuantKind::kGguf || KIND == QuantKind::kGgufHalf) {
        const uint32_t* sup = m.super_records + (nb * m.supers + (group >> m.super_shift)) * 32;
#pragma unroll
        for (int part = 0; part < 8; ++part) cp_async16(rec + part * 4, sup + part * 4, true);
        if (m.sub_records) {
#pragma unroll
          for (int part = 0; part < 4; ++part) {
            cp_async16(rec + 32 + part * 4, m.sub_records + gi * 32 + part * 8, true);
          }
        }
      } else {
#pragma unroll
        for (int part = 0; part < 4; ++part) {
          cp_async16(rec + part * 4, m.scales + gi * 32 + part * 8, true);
          if (KIND == QuantKind::kGptqAsym) {
            cp_async16(rec + 16 + part * 4, m.zeros + gi * 32 + part * 8, true);
          }
        }
      }
    }
  }
  cp_async_commit();
  // The act-order sources of the slice's rows: two per thread with 8 warps.
  const int slice_rows = n * 32;
  const int* row_src = m.row_src + int64_t(c0) * 32;
  const int bd = static_cast<int>(blockDim.x);
  // x gathered by quant_stage_x_kernel, or null.
  const __half* staged = part.staged_x ? part.staged_x + int64_t(row0) * m.chunks * 32 : nullptr;
  const int src0 = !staged && threadIdx.x < slice_rows ? row_src[threadIdx.x] : -1;
  const int src1 = !staged && threadIdx.x + bd < slice_rows ? row_src[threadIdx.x + bd] : -1;
  const GemvNorm& norm = launch_group.norm;
  float* s_w = reinterpret_cast<float*>(s_x + staged_x_rows(MT, rows) * xs_stride);
  if (norm.inv_rms) {  // the norm weights of the slice's rows, in slice order
    for (int i = 0, r = threadIdx.x; r < slice_rows; ++i, r += bd) {
      const int src = i == 0 ? src0 : i == 1 ? src1 : row_src[r];
      if (src >= 0) cp_async4(s_w + r, norm.weight + src);
    }
    cp_async_commit();
  }
  // LoRA: a projector block copies its tile of a (see the top).
  const GemvLora& lora = part.lora;
  const int lora_cols = LORA ? lora.cols : 0;
  if (lora_cols > 0) {  // a group in every block, so that the waits below count alike
    if (projector) {    // its tile of a over the slice's rows, in staging order like x
      const int tile = local % lora_tile_count;
      auto* a_s = reinterpret_cast<__half*>(sm.lora);
      const int64_t stored = m.chunks * 32;
      const int vecs = slice_rows / 8;
      for (int e = threadIdx.x; e < kLoraTileCols * vecs; e += bd) {
        const int c = e / vecs, v = e - c * vecs;
        const int col = tile * kLoraTileCols + c;
        cp_async16(a_s + c * lora_a_stride(p_chunks) + v * 8,
                   lora.a + int64_t(col < lora_cols ? col : 0) * stored + int64_t(c0) * 32 + v * 8,
                   col < lora_cols);
      }
    }
    cp_async_commit();
  }

  pdl_wait();
  // x rows of the slice, gathered through row_src (act-order), and the zero row.
  const int K = static_cast<int>(m.in_features);
  const int staged_rows = staged_x_rows(MT, rows);
  // Stages the slice's x rows: value(tok, src, w) is row tok's staged value of input feature src
  // (w: weight_of(r, src) for slice row r).
  // The rows' loads are issued several at a time, then stored: a loop over the rows alone waited
  // for each (one round trip per row). Four for the one-tile kernel (more spilled within its 64
  // registers); sixteen with more tiles, whose blocks otherwise spent most of their time at 32
  // rows on these round trips.
  constexpr int kRowsInFlight = MT == 1 ? 4 : 16;
  auto stage_x = [&](auto weight_of, auto value) {
    for (int i = 0, r = threadIdx.x; r < slice_rows; ++i, r += bd) {
      const int src = i == 0 ? src0 : i == 1 ? src1 : row_src[r];
      const int at = staged_position(r);
      const float w = weight_of(r, src);
      for (int tok0 = 0; tok0 < staged_rows; tok0 += kRowsInFlight) {
        __half v[kRowsInFlight];
#pragma unroll
        for (int k = 0; k < kRowsInFlight; ++k) {
          v[k] = src >= 0 && tok0 + k < rows ? value(tok0 + k, src, w) : __float2half_rn(0.0f);
        }
#pragma unroll
        for (int k = 0; k < kRowsInFlight; ++k) {
          if (tok0 + k < staged_rows) s_x[(tok0 + k) * xs_stride + at] = v[k];
        }
      }
    }
  };
  if (staged) {
    // The slice's rows as quant_stage_x_kernel laid them out: 16-byte copies, all in flight at
    // once; the staged rows past `rows` (the zero row, the last tile's padding) zero-filled.
    const int64_t stored = m.chunks * 32;
    const int vecs = slice_rows / 8;
    for (int e = threadIdx.x; e < staged_rows * vecs; e += bd) {
      const int tok = e / vecs, v = e - tok * vecs;
      cp_async16(s_x + tok * xs_stride + v * 8,
                 staged + int64_t(tok < rows ? tok : 0) * stored + int64_t(c0) * 32 + v * 8,
                 tok < rows);
    }
    cp_async_commit();
  } else if (norm.inv_rms) {
    // x is the residual: stage fp16(w · (x · inv_rms)), add_rms_norm's formula, with the row's
    // inverse RMS read alongside x (no round trip of its own). The blocks of column group 0 of
    // the first matrix also write those rows out (its slices cover every input feature once).
    // This thread's norm weights (copied before the wait); a LoRA's tile may stay in flight.
    if (lora_cols > 0) {
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    stage_x(
        [&](int r, int src) { return src >= 0 ? s_w[r] : 0.0f; },
        [&](int tok, int src, float w) {
          return __float2half_rn(w * (__half2float(x[int64_t(tok) * K + src]) * norm.inv_rms[tok]));
        });
    // Apart from the gather: a global store between its loads would keep them from overlapping.
    if (which == 0 && column_group == 0 && norm.normed) {
      for (int r = threadIdx.x; r < slice_rows; r += bd) {
        const int src = row_src[r];
        const int at = staged_position(r);
        if (src < 0) continue;
        for (int tok = 0; tok < rows; ++tok)
          norm.normed[int64_t(tok) * K + src] = s_x[tok * xs_stride + at];  // this thread's own
      }
    }
  } else {
    stage_x([](int, int) { return 0.0f; },
            [&](int tok, int src, float) { return x[int64_t(tok) * K + src]; });
  }
  // The scales (and the staged x); a LoRA's tile, unless copied before x, is waited for after
  // the main loop.
  if (lora_cols > 0 && !staged) {
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();

  float acc[2][MT][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      acc[nt][mt][0] = acc[nt][mt][1] = acc[nt][mt][2] = acc[nt][mt][3] = 0.0f;
  }
  // Lane (g, t) feeds x rows 8mt + g to the MMAs; rows that do not exist read zero rows.
  const __half* xs = s_x + (MT == 1 ? min(g, rows) : g) * xs_stride + 8 * t;
  const int xs1 = 8 * xs_stride;
  uint32_t starts = active ? width_starts : 0u;
  while (starts) {
    const int j0 = __ffs(starts) - 1;
    starts &= starts - 1;
    const int j1 = starts ? __ffs(starts) - 1 : n;
    const int b = __shfl_sync(kFull, bits, j0);
    const uint32_t* wl = wcol + int64_t(__shfl_sync(kFull, line, j0)) * 32 + lane;
    qchunk::with_width(b, [&](auto width) {
      run_chunks<decltype(width)::value, KIND, MT>(wl, j0, j1, group_starts, meta, m.gguf_mode, xs,
                                                   xs1, g, acc);
    });
  }

  if constexpr (LORA) {
    if (projector) {
      project_lora<KIND, MT>(launch_group, which, slice, local % lora_tile_count, n, rows);
      return;
    }
  }
  // C fragment element i of (nt, mt): output nb·32 + 16nt + g + 8(i/2), x row 8mt + 2t + (i&1).
  const int N = static_cast<int>(m.out_features);
  auto for_each_result = [&](auto&& f) {  // f(output, x row, sum) for the outputs that exist
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int o = static_cast<int>(nb) * 32 + nt * 16 + g + 8 * (i >> 1);
          const int tok = 8 * mt + 2 * t + (i & 1);
          if (o < N && tok < rows) f(o, tok, acc[nt][mt][i]);
        }
      }
    }
  };
  if (slices == 1 && !part.residual && lora_cols == 0) {
    if (!active) return;
    for_each_result([&](int o, int tok, float v) {
      qchunk::store_out(part.out, part.out_f32, int64_t(row0 + tok) * N + o,
                        v + (part.bias ? part.bias[o] : 0.0f));
    });
    return;
  }
  if (active) {
    for_each_result([&](int o, int tok, float v) {
      part.partials[(int64_t(slice) * all_rows + row0 + tok) * N + o] = v;
    });
  }
  if (launch_group.sum_kernel) return;  // always with several row groups
  // With a LoRA, its projections are looked for while arriving: made long before, as a rule.
  bool projections_seen = false;
  const bool last = lora_cols > 0
                        ? last_to_arrive_seeing(&part.counters[column_group], slices,
                                                &part.counters[part.column_groups + 1],
                                                slices * lora_tiles(lora_cols), projections_seen)
                        : last_to_arrive(&part.counters[column_group], slices);
  if (!last) return;
  finish_column_group<LORA>(
      part, part.column_groups, column_group, rows,
      lora_cols > 0 ? reinterpret_cast<float*>(
                          BlockSmem<KIND, MT>(smem, p_chunks, rows, norm.inv_rms != nullptr).lora)
                    : nullptr,
      projections_seen);
}

// x in each matrix's staging order (QuantGemmScratch::staged_x): row tok of stored row s at
// staged_x[tok · chunks · 32 + staged_position(s)], x[tok][row_src[s]] or zero for a padding row,
// which is what the fused kernel's blocks would gather into shared memory. Block (part, 256
// stored rows, kStageRows x rows): one stored row per thread, its rows' loads in flight together.
constexpr int kStageThreads = 256;
constexpr int kStageRows = 8;
__global__ void __launch_bounds__(kStageThreads)
    quant_stage_x_kernel(const __grid_constant__ GemvGroup launch_group, const __half* x,
                         int rows) {
  const GemvPart& part =
      launch_group.part[part_of_block<&GemvPart::stage_block_begin>(launch_group)];
  const int stored = static_cast<int>(part.m.chunks) * 32;
  const int s = (static_cast<int>(blockIdx.x) - part.stage_block_begin) * kStageThreads +
                static_cast<int>(threadIdx.x);
  pdl_launch_dependents();
  const int src = s < stored ? part.m.row_src[s] : -1;
  pdl_wait();
  if (s >= stored) return;
  const int64_t K = part.m.in_features;
  const int tok0 = static_cast<int>(blockIdx.y) * kStageRows;
  __half v[kStageRows];
#pragma unroll
  for (int k = 0; k < kStageRows; ++k) {
    v[k] = src >= 0 && tok0 + k < rows ? x[(tok0 + k) * K + src] : __float2half_rn(0.0f);
  }
  const int at = staged_position(s);
#pragma unroll
  for (int k = 0; k < kStageRows; ++k) {
    if (tok0 + k < rows) part.staged_x[int64_t(tok0 + k) * stored + at] = v[k];
  }
}

// The slices' sums when a kernel of their own adds them: block (part, row, column group), one
// output per thread, the slices added in slice order as finish_column_group adds them, and so
// is a LoRA's bt · t.
__global__ void __launch_bounds__(kQuantNormSlotColumns)
    quant_gemm_sum_kernel(const __grid_constant__ GemvGroup launch_group, int rows) {
  const GemvPart& part = launch_group.part[part_of_block<&GemvPart::sum_block_begin>(launch_group)];
  const int local = static_cast<int>(blockIdx.x) - part.sum_block_begin;
  const int tok = local / part.column_groups;
  const int column_group = local - tok * part.column_groups;
  const int N = static_cast<int>(part.m.out_features);
  const int o = column_group * kQuantNormSlotColumns + static_cast<int>(threadIdx.x);
  pdl_launch_dependents();
  const float bias = part.bias && o < N ? part.bias[o] : 0.0f;
  const GemvLora& lora = part.lora;
  extern __shared__ __align__(16) unsigned char sum_smem[];  // a LoRA's bt [cols][256]
  auto* bt_s = reinterpret_cast<__half*>(sum_smem);
  if (lora.cols > 0) {  // weights: before the wait
    stage_lora_bt(lora, N, column_group * kQuantNormSlotColumns, bt_s);
    cp_async_commit();
  }
  pdl_wait();
  // The row's t (one pass: each column summed by kTLanes threads), loaded alongside the slices.
  __shared__ float t_s[kQuantGemmLoraMaxCols];
  const int c = static_cast<int>(threadIdx.x) / kTLanes;
  LoraTSum t;
  if (lora.cols > 0) t.issue(lora, part.slices, rows, tok * lora.cols + c, c < lora.cols);
  const int64_t at = int64_t(tok) * N + o;
  float sum = o < N ? qchunk::sum_slices(part.partials + at, int64_t(rows) * N, part.slices) : 0.0f;
  if (lora.cols > 0) {
    const float tc = t.finish();
    if (threadIdx.x % kTLanes == 0 && c < lora.cols) t_s[c] = tc;
    cp_async_wait<0>();
    __syncthreads();
  }
  if (o >= N) return;
  if (lora.cols > 0) sum += lora_delta(lora.cols, bt_s + threadIdx.x, t_s);
  qchunk::store_out(part.out, part.out_f32, at, sum + bias);
}

}  // namespace

size_t quant_gemm_partial_floats(const QuantMatrix& m, int64_t rows) {
  // One slice needs none, except when its sums go into a residual (through the same completion).
  const int64_t splits = ceil_div(m.chunks, qchunk::slice_chunks(m));
  return static_cast<size_t>(splits * rows * m.out_features);
}

size_t quant_gemm_staged_x_halves(const QuantMatrix& m, int64_t rows) {
  return static_cast<size_t>(rows * m.chunks * 32);
}

size_t quant_gemm_counters(const QuantMatrix& m) {
  // At least one per column group of 8 × 32 outputs, one for the groups of a residual sum and
  // two for a LoRA's slice projections.
  return static_cast<size_t>(m.blocks + 3);
}

size_t quant_gemm_lora_floats(const QuantMatrix& m, int64_t rows, int cols) {
  return static_cast<size_t>(ceil_div(m.chunks, qchunk::slice_chunks(m)) * rows * cols);
}

cudaError_t quant_gemm_group(const Launch& l, const QuantGemmTarget* targets, int count,
                             const void* x, int64_t rows, const QuantGemmScratch& scratch,
                             const QuantInputNorm* norm) {
  if (count < 1 || count > kQuantGemmMaxGroup || rows < 1 || rows > kQuantGemmMaxLaunchRows) {
    return cudaErrorInvalidValue;
  }
  GemvGroup group{};
  group.count = count;
  group.row_groups = static_cast<int>(ceil_div(rows, kQuantGemmMaxRows));
  const int block_rows = static_cast<int>(std::min<int64_t>(rows, kQuantGemmMaxRows));
  // Several row groups: the slices are always added by quant_gemm_sum_kernel, and neither a norm
  // nor a LoRA is folded in (both are for a few rows).
  if (group.row_groups > 1 && norm) return cudaErrorInvalidValue;
  if (norm) {
    if (!norm->inv_rms || !norm->weight) return cudaErrorInvalidValue;
    group.norm = {norm->inv_rms, norm->weight, static_cast<__half*>(norm->normed)};
  }
  const QuantKind kind = targets[0].m ? targets[0].m->kind : QuantKind::kExl2;
  size_t smem = 0;
  int blocks = 0;
  bool with_lora = false;
  float* partials = scratch.partials;
  int32_t* counters = scratch.counters;
  float* lora_t = scratch.lora_t;
  group.sum_kernel = rows >= scratch.sum_kernel_min_rows || group.row_groups > 1;
  int sum_blocks = 0;
  // A QuantInputNorm normalizes x as the blocks gather it: never staged.
  const bool stage = scratch.staged_x && !norm;
  auto* staged_x = static_cast<__half*>(scratch.staged_x);
  int stage_blocks = 0;
  for (int i = 0; i < count; ++i) {
    const QuantGemmTarget& tg = targets[i];
    if (!tg.m || !qchunk::valid_matrix(*tg.m) || tg.m->kind != kind || !tg.out ||
        tg.out_t == Elem::kBF16 ||
        (tg.residual && (!tg.norm_sums || !tg.inv_rms || tg.out_t != Elem::kF16)) ||
        tg.m->in_features != targets[0].m->in_features) {
      return cudaErrorInvalidValue;
    }
    const QuantGemmLora& lora = tg.lora;
    if (lora.cols < 0 || lora.cols > kQuantGemmLoraMaxCols ||
        (lora.cols > 0 &&
         (!lora.a || !lora.bt || !lora.slot_of_col || !lora.row_weights || lora.slots < 1 ||
          !lora_t || tg.m->out_features % 8 != 0 || rows > kQuantGemmLoraMaxRows))) {
      return cudaErrorInvalidValue;
    }
    if (group.row_groups > 1 && tg.residual) return cudaErrorInvalidValue;
    with_lora = with_lora || lora.cols > 0;
    GemvPart& part = group.part[i];
    part.m = *tg.m;
    part.bias = tg.bias;
    part.out = tg.out;
    part.out_f32 = tg.out_t == Elem::kF32;
    part.p_chunks = qchunk::slice_chunks(*tg.m);
    part.slices = static_cast<int>(ceil_div(tg.m->chunks, part.p_chunks));
    part.column_groups = static_cast<int>(ceil_div(tg.m->blocks, kMaxWarps));
    part.block_begin = blocks;
    part.sum_block_begin = sum_blocks;
    part.partials = partials;
    part.counters = counters;
    part.residual = static_cast<__half*>(tg.residual);
    part.norm_sums = tg.norm_sums;
    part.inv_rms = tg.inv_rms;
    part.norm_eps = tg.norm_eps;
    part.lora = {static_cast<const __half*>(tg.lora.a),
                 static_cast<const __half*>(tg.lora.bt),
                 tg.lora.slot_of_col,
                 tg.lora.row_weights,
                 lora.cols > 0 ? lora_t : nullptr,
                 tg.lora.cols,
                 tg.lora.slots};
    if (lora.cols > 0) lora_t += quant_gemm_lora_floats(*tg.m, rows, lora.cols);
    part.lora_blocks = lora.cols > 0 ? part.slices * lora_tiles(lora.cols) : 0;
    part.stage_block_begin = stage_blocks;
    part.staged_x = stage ? staged_x : nullptr;
    if (stage) {
      staged_x += quant_gemm_staged_x_halves(*tg.m, rows);
      stage_blocks += static_cast<int>(ceil_div(tg.m->chunks * 32, kStageThreads));
    }
    partials += quant_gemm_partial_floats(*tg.m, rows);
    counters += quant_gemm_counters(*tg.m);
    blocks += part.column_groups * part.slices * group.row_groups + part.lora_blocks;
    // One slice stores its results itself (unless a LoRA joins them); a residual is added by the
    // last block of a group.
    if (part.slices > 1 || lora.cols > 0) sum_blocks += part.column_groups * static_cast<int>(rows);
    if (tg.residual) group.sum_kernel = false;
    const int meta = kind == QuantKind::kGguf || kind == QuantKind::kGgufHalf
                         ? meta_words<QuantKind::kGguf>()
                         : meta_words<QuantKind::kExl2>();
    smem = std::max(smem, size_t(kMaxWarps) * part.p_chunks * meta * 4 +
                              size_t(staged_x_rows(row_tiles(block_rows), block_rows)) *
                                  (size_t(part.p_chunks) * 32 + 8) * sizeof(__half) +
                              (norm ? size_t(part.p_chunks) * 32 * sizeof(float) : 0) +
                              (lora.cols > 0 ? 16 + size_t(lora_area_bytes(part.p_chunks, lora.cols,
                                                                           static_cast<int>(rows)))
                                             : 0));
  }
  const auto* xh = static_cast<const __half*>(x);
  const int r = static_cast<int>(rows);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kMaxWarps * 32);
  if (stage) {
    const dim3 stage_grid(static_cast<unsigned>(stage_blocks),
                          static_cast<unsigned>(ceil_div(rows, kStageRows)));
    if (const cudaError_t e = launch_kernel(l, quant_stage_x_kernel, stage_grid,
                                            dim3(kStageThreads), 0, group, xh, r);
        e != cudaSuccess)
      return e;
  }
  auto go = [&](auto kernel) {
    // Beyond 48 KB with its static shared memory (~1 KB; 32 rows of 16-chunk slices, a LoRA) a
    // kernel must opt in: host-side attributes, not stream operations, so fine during capture.
    cudaFuncAttributes attributes{};
    if (smem > 40 * 1024) {
      if (const cudaError_t e = cudaFuncGetAttributes(&attributes, kernel); e != cudaSuccess)
        return e;
    }
    if (smem + attributes.sharedSizeBytes > 48 * 1024) {
      const cudaError_t e = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
      if (e != cudaSuccess) return e;
    }
    return launch_kernel(l, kernel, grid, block, smem, group, xh, r);
  };
  auto by_tiles = [&](auto one, auto two, auto three, auto four) {
    switch (row_tiles(block_rows)) {
      case 1:
        return go(one);
      case 2:
        return go(two);
      case 3:
        return go(three);
      default:
        return go(four);
    }
  };
  const cudaError_t e = qchunk::with_kind(kind, [&](auto k) {
    constexpr QuantKind K = decltype(k)::value;
    if (with_lora) {
      return by_tiles(quant_gemv_kernel<K, 1, true>, quant_gemv_kernel<K, 2, true>,
                      quant_gemv_kernel<K, 3, true>, quant_gemv_kernel<K, 4, true>);
    }
    return by_tiles(quant_gemv_kernel<K, 1, false>, quant_gemv_kernel<K, 2, false>,
                    quant_gemv_kernel<K, 3, false>, quant_gemv_kernel<K, 4, false>);
  });
  if (e != cudaSuccess || !group.sum_kernel || sum_blocks == 0) return e;
  int lora_cols = 0;
  for (int i = 0; i < count; ++i) lora_cols = std::max(lora_cols, group.part[i].lora.cols);
  return launch_kernel(l, quant_gemm_sum_kernel, dim3(static_cast<unsigned>(sum_blocks)),
                       dim3(kQuantNormSlotColumns),
                       size_t(lora_cols) * kQuantNormSlotColumns * sizeof(__half), group, r);
}

}  // namespace hearth::kernels
