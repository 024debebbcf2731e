// EXL2 / GPTQ / GGUF fused dequantize-and-multiply for 1..32 x rows (decode; one to four 8-row MMA
// tiles per weight fragment: faster than the tensor-core kernel for 9..64 rows it replaced,
// docs/PERFORMANCE.md). Layout and per-chunk arithmetic:
// kernels/quant_tile_codec.cuh and kernels/quant_chunk_math.cuh (tiles of 32 outputs × 32 stored
// rows whose lane words hold the codes of mma.sync A fragments; each weight is decoded
// bit-identically to the reference dequantizer, multiplied on the tensor cores with fp32
// accumulators; GGUF's kGguf, whose weights fp16 cannot hold, multiplies the codes and scales the
// fp32 sums, its form of scales a template parameter of the chunk loop). Organised for few rows,
// where the weights are the whole cost and every instruction per chunk counts.
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
// others so that they are dispatched first, project each 32-chunk slice of K onto a's 16-column
// tiles (mma.sync, with x staged as the main blocks stage it, as the B operand exactly as the
// weights meet it), weighed per row. Up to QuantGemmScratch::lora_delta_max_rows rows, a delta
// block per column group, after the main blocks, waits for the projections (made by blocks
// dispatched before it, so they run), adds them in slice order and writes bt · t for its outputs
// as one more slice of partials, which the completion adds last like any other: the completion,
// on every launch's critical path, has no LoRA work (done there, it cost ~2 µs a launch at batch
// 1). With more rows a delta block's serial work (every row's t, rows × columns products) grew
// past the launch, so there the completion adds the projections and bt · t itself: the last block
// of a column group waits for them, or quant_gemm_sum_kernel, one block per row, finds them done.
// Both add Σ slices + bt · t in that order, from t summed the same way: the same bits. No
// launches of their own, and each projection is made once: the first fold had every block
// project its slice again (56 times for gate) and add its share of bt · t, +38 % at batch 1 on
// the 8B shape (docs/PERFORMANCE.md).
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
  return 16 / qtile::width_bits(B) >= 2 ? 16 / qtile::width_bits(B) : 2;
}

// Whether a warp stages a super-block's (d, dmin) only into the record of its first chunk, not
// into every group's (kGguf: Q4_K_M's batch 1 +2.3 % on an H200; IQ4_XS, the codebook kind,
// measured −1.4 % and keeps one in every record, as do Q4_1 / Q5_1, a super-block per group).
template <QuantKind KIND>
constexpr bool kSuperRecordOnce = KIND == QuantKind::kGguf;

// One chunk (index j of the slice) from the lane's words in registers. xs: the lane's x
// fragments of chunk 0 for rows 0..7 (16 bytes per lane per chunk, see the staging below); those
// of rows 8mt .. 8mt + 7 are mt · xs1 halves further.
template <int B, QuantKind KIND, int MT, int FORM>
__device__ __forceinline__ void slice_chunk(const uint32_t* w, int j, uint32_t group_starts,
                                            uint32_t super_starts, int& super_j,
                                            const uint32_t* meta, uint32_t mode, const __half* xs,
                                            int xs1, int g, GroupScales<KIND>& scales,
                                            float acc[2][MT][4]) {
  constexpr int kMeta = meta_words<KIND>();
  if constexpr (kSuperRecordOnce<KIND>) {
    if ((super_starts >> j) & 1u) super_j = j;
  }
  if ((group_starts >> j) & 1u) {  // a run always starts with a group
    if constexpr (kSuperRecordOnce<KIND>) {
      scales.template load_form<FORM>(meta + super_j * kMeta, meta + j * kMeta, g);
    } else if constexpr (has_gguf_scales(KIND)) {
      scales.template load_form<FORM>(meta + j * kMeta, g);
    } else {
      scales.load(meta + j * kMeta, g, B, mode);
    }
  }
  uint32_t bf[MT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const uint4 v = *reinterpret_cast<const uint4*>(xs + j * 32 + mt * xs1);
    bf[mt][0] = v.x, bf[mt][1] = v.y, bf[mt][2] = v.z, bf[mt][3] = v.w;
  }
  qchunk::chunk_mma<B, MT, FORM>(w, bf, scales, acc);
}

// Chunks [j0, j1) of the warp's slice, all of width code B (W = width_bits(B) words a lane).
// wl: word 0 of chunk j0 for this lane. Full batches of U chunks load all their words before any
// is decoded; the rest one by one. kSuperRecordOnce: super_starts marks the chunks that begin a
// super-block, whose records alone hold its (d, dmin).
template <int B, QuantKind KIND, int MT, int FORM>
__device__ __forceinline__ void run_chunks(const uint32_t* wl, int j0, int j1,
                                           uint32_t group_starts, uint32_t super_starts,
                                           const uint32_t* meta, uint32_t mode, const __half* xs,
                                           int xs1, int g, float acc[2][MT][4]) {
  constexpr int U = batch_chunks<B>();
  constexpr int W = qtile::width_bits(B);
  GroupScales<KIND> scales;
  if constexpr (has_gguf_scales(KIND)) scales.set_zero(mode);
  // The chunk that began the super-block of chunk j0 (chunk 0 always begins one).
  int super_j = 0;
  if constexpr (kSuperRecordOnce<KIND>) super_j = 31 - __clz(super_starts & ((2u << j0) - 1u));
  int j = j0;
  for (; j + U <= j1; j += U, wl += U * W * 32) {
    uint32_t w[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int i = 0; i < W; ++i) w[u][i] = load_weight(wl + (u * W + i) * 32);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      slice_chunk<B, KIND, MT, FORM>(w[u], j + u, group_starts, super_starts, super_j, meta, mode,
                                     xs, xs1, g, scales, acc);
    }
  }
  for (; j < j1; ++j, wl += W * 32) {
    uint32_t w[W];
#pragma unroll
    for (int i = 0; i < W; ++i) w[i] = load_weight(wl + i * 32);
    slice_chunk<B, KIND, MT, FORM>(w, j, group_starts, super_starts, super_j, meta, mode, xs, xs1,
                                   g, scales, acc);
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
// lora_blocks, one per projection slice and tile, ahead of the part's other blocks so that they
// are dispatched first). A projection slice is 32 chunks (1,024 rows of K), or all of a shorter
// K: from the shape alone, so a row's t does not depend on the batch, and longer than the main
// loop's slices (4-16 chunks), so that few projectors join a launch (one per main slice took
// q/k/v's launch of 512 blocks to 592, past one wave of 528).
constexpr int kLoraTileCols = 16;
constexpr int kLoraWarpTile = kLoraTileCols * 8;  // floats: one warp's tile of one row tile
constexpr int kLoraSliceChunks = 32;
__host__ __device__ constexpr int lora_tiles(int cols) {
  return (cols + kLoraTileCols - 1) / kLoraTileCols;
}
__host__ __device__ constexpr int lora_slice_chunks(int64_t chunks) {
  return chunks < kLoraSliceChunks ? static_cast<int>(chunks) : kLoraSliceChunks;
}
__host__ __device__ constexpr int lora_slices(int64_t chunks) {
  return static_cast<int>((chunks + kLoraSliceChunks - 1) / kLoraSliceChunks);
}
// A projector block's shared memory: the slice's x rows [staged rows][stride] fp16 (stride:
// 16-byte rows that start in different banks), whose area then takes each warp's fp32 sums
// [warps][MT][16 · 8]. a's fragments go to registers: a tile in shared memory (33 KB) had doubled
// the launch's shared memory per block at batch 1.
__host__ __device__ constexpr int lora_stride(int lp) {
  return lp * 32 + 8;
}
__host__ __device__ constexpr int projector_smem_bytes(int lp, int mt, int staged_rows) {
  const int x = staged_rows * lora_stride(lp) * 2;
  const int sums = kMaxWarps * mt * kLoraWarpTile * 4;
  return x > sums ? x : sums;
}
// A delta block's shared memory, or a finishing block's LoRA area (from the start of shared
// memory: its main loop is done with it): the rows' t [rows][cols] fp32, then bt [cols][256] fp16.
__host__ __device__ constexpr int lora_delta_bt_offset(int cols, int rows) {
  return (rows * cols * 4 + 15) / 16 * 16;
}
__host__ __device__ constexpr int lora_delta_smem_bytes(int cols, int rows) {
  return lora_delta_bt_offset(cols, rows) + cols * kQuantNormSlotColumns * 2;
}

// The counters after a matrix's column groups: [column_groups] the residual's second round,
// [+1] slice projections made, [+2] delta or finishing blocks done with them.

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
// projection slices by two neighbouring lanes: lane j adds slices j, j + 2, ... in order, then
// the two sums are added. Every completion sums this way, so a row gets the same bits in any.
// issue() starts the loads of the lane's first kTBatch slices (one round trip, which the caller
// overlaps with its own loads); finish() adds them and any further ones; every lane of the warp
// calls it (a shuffle), with valid false where it has no entry.
constexpr int kTLanes = 2;
constexpr int kTBatch = 8;
static_assert(kQuantGemmLoraMaxCols * kTLanes <= kQuantNormSlotColumns,
              "one pass of a 256-thread block sums a row's t");
struct LoraTSum {
  float v[kTBatch];
  const float* p;  // this lane's first slice of the entry
  int64_t stride;  // kTLanes slices
  int count;       // this lane's slices
  __device__ __forceinline__ void issue(const GemvLora& lora, int slices, int rows, int entry,
                                        bool valid) {
    const int j = threadIdx.x % kTLanes;
    const int64_t slice_stride = int64_t(rows) * lora.cols;
    p = lora.t_part + entry + j * slice_stride;
    stride = kTLanes * slice_stride;
    count = valid && j < slices ? (slices - 1 - j) / kTLanes + 1 : 0;
#pragma unroll
    for (int i = 0; i < kTBatch; ++i) v[i] = i < count ? __ldcg(p + i * stride) : 0.0f;
  }
  __device__ __forceinline__ float finish() const {
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kTBatch; ++i) {
      if (i < count) sum += v[i];
    }
    for (int i = kTBatch; i < count; ++i) sum += __ldcg(p + i * stride);  // long K only
    return sum + __shfl_xor_sync(kFull, sum, 1);
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
// What the LoRA adds to an output of a row whose t is t_row: Σ_c bt[c][o] · t[c], c in order,
// over the columns whose t is not zero. A column the row gives no weight has t = 0 exactly
// (project_lora), so a row adds the same terms whatever other adapters its batch weighs (its
// batch's columns span them all). bt_o: the output's bt in stage_lora_bt's layout.
__device__ __forceinline__ float lora_delta(int cols, const __half* bt_o, const float* t_row) {
  float d = 0.0f;
  for (int c = 0; c < cols; ++c) {
    const float t = t_row[c];
    if (t != 0.0f) d += __half2float(bt_o[c * kQuantNormSlotColumns]) * t;
  }
  return d;
}

// One matrix of a launch: its blocks are [block_begin, block_begin + lora_blocks +
// column_groups · slices (+ column_groups with a LoRA)): the LoRA's projectors, the main blocks,
// the LoRA's delta blocks.
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
  int sum_slices;  // the slices the completion adds: slices, and one for delta blocks' bt · t
  int column_groups;
  int block_begin;
  int sum_block_begin;    // its blocks of quant_gemm_sum_kernel (column groups × rows)
  int stage_block_begin;  // its blocks of quant_stage_x_kernel
  __half* staged_x;       // x in this matrix's staging order (QuantGemmScratch), or null
  GemvLora lora;
  int lora_blocks;    // its first blocks, which project x onto a (lora_slices · tiles; 0 without)
  int lora_p_chunks;  // chunks per projection slice (lora_slice_chunks)
  int lora_slices;
  bool lora_delta;  // the LoRA's bt · t made by delta blocks (GemvPart::sum_slices)
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

// The last block of a column group: the group's outputs, Σ of the slices' partials in slice order
// (+ bias), stored; with a residual, also added into it, and the group's sum of squares of each
// row left in norm_sums, from which the last group to finish computes the rows' inverse RMS.
// Every thread takes one output of each row (the block is as wide as the column group).
// The slices added are GemvPart::sum_slices (delta blocks' bt · t the last of them). With a LoRA
// added here (t_s: shared memory for the rows' t; many rows), bt · t joins each output, once the
// slices' projections are all made.
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
  const int entries = t_s ? rows * lora.cols : 0;
  if (t_s) {
    bt_s = reinterpret_cast<__half*>(reinterpret_cast<unsigned char*>(t_s) +
                                     lora_delta_bt_offset(lora.cols, rows));
    stage_lora_bt(lora, N, column_group * kQuantNormSlotColumns, bt_s);  // while awaiting t
    cp_async_commit();
    if (threadIdx.x == 0 && !projections_seen) {
      const int32_t made = part.lora_slices * lora_tiles(lora.cols);
      while (load_acquire_gpu(&part.counters[column_groups + 1]) < made) __nanosleep(32);
    }
    __syncthreads();
  }
  // The rows' t, kTLanes threads an entry: the first pass's loads in flight beside the first
  // rows' partials (one row, the usual case here: the only pass).
  constexpr int kTPass = kQuantNormSlotColumns / kTLanes;  // entries per pass
  LoraTSum t_first;
  if (t_s) {
    const int e = static_cast<int>(threadIdx.x) / kTLanes;
    t_first.issue(lora, part.lora_slices, rows, e, e < entries);
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
                                           int64_t(rows) * N, part.sum_slices, sums);
    }
    if (t_s && tok0 == 0) {  // the same for the whole block
      // The entry's index again rather than kept from above: kept, it cost the one-tile kernel
      // a spill.
      const int e = static_cast<int>(threadIdx.x) / kTLanes;
      const bool writes = threadIdx.x % kTLanes == 0;
      const float first = t_first.finish();
      if (writes && e < entries) t_s[e] = first;
      for (int more = e + kTPass; more - e < entries; more += kTPass) {  // uniform
        LoraTSum t;
        t.issue(lora, part.lora_slices, rows, more, more < entries);
        const float sum = t.finish();
        if (writes && more < entries) t_s[more] = sum;
      }
      cp_async_wait<0>();
      __syncthreads();
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

// A LoRA's delta block for a column group (one row group: a LoRA launch has one): once the
// projectors have published (a counter; they were dispatched before it, so they run), the rows'
// t summed over the projection slices (LoraTSum), and lora_delta for the group's 256 outputs
// written as partial slice `slices`, which the completion adds last. So a row gets sum of slices
// + bt · t in that order, as before, while the completion's own chain has no LoRA work. bt is
// copied before the dependency wait (it is weights). Then it arrives like a main block, and
// finishes the group when it is the last. Shared memory: lora_delta_smem_bytes.
__device__ __forceinline__ void lora_delta_block(const GemvGroup& launch_group, int which,
                                                 int column_group, int rows) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GemvPart& part = launch_group.part[which];
  const GemvLora& lora = part.lora;
  const int N = static_cast<int>(part.m.out_features);
  auto* t_s = reinterpret_cast<float*>(smem);
  auto* bt_s = reinterpret_cast<__half*>(smem + lora_delta_bt_offset(lora.cols, rows));
  stage_lora_bt(lora, N, column_group * kQuantNormSlotColumns, bt_s);
  cp_async_commit();
  pdl_wait();  // the partials: the previous launch's completion reads them
  if (threadIdx.x == 0) {
    const int32_t made = part.lora_slices * lora_tiles(lora.cols);
    while (load_acquire_gpu(&part.counters[part.column_groups + 1]) < made) __nanosleep(32);
  }
  __syncthreads();
  // kTLanes threads an entry, all of a pass's loads in flight together.
  const int entries = rows * lora.cols;
  constexpr int kTPass = kQuantNormSlotColumns / kTLanes;
  for (int e0 = 0; e0 < entries; e0 += kTPass) {  // uniform
    const int e = e0 + static_cast<int>(threadIdx.x) / kTLanes;
    LoraTSum t;
    t.issue(lora, part.lora_slices, rows, e, e < entries);
    const float sum = t.finish();
    if (threadIdx.x % kTLanes == 0 && e < entries) t_s[e] = sum;
  }
  // Done with the projections: the last delta block readies their counters for the next launch.
  if (threadIdx.x == 0 &&
      atomicAdd(&part.counters[part.column_groups + 2], 1) == part.column_groups - 1) {
    part.counters[part.column_groups + 1] = 0;
    part.counters[part.column_groups + 2] = 0;
  }
  cp_async_wait<0>();
  __syncthreads();
  const int o = column_group * kQuantNormSlotColumns + static_cast<int>(threadIdx.x);
  if (o < N) {
    float* delta = part.partials + int64_t(part.slices) * rows * N + o;
    for (int tok = 0; tok < rows; ++tok) {
      delta[int64_t(tok) * N] = lora_delta(lora.cols, bt_s + threadIdx.x, t_s + tok * lora.cols);
    }
  }
  if (launch_group.sum_kernel) return;
  if (last_to_arrive(&part.counters[column_group], part.sum_slices)) {
    finish_column_group<false>(part, part.column_groups, column_group, rows, nullptr, false);
  }
}

// The slice's x rows as quant_stage_x_kernel laid them out (QuantGemmScratch::staged_x), into
// shared memory rows of `stride` halves: 16-byte copies, all in flight at once; the staged rows
// past `rows` (the zero row, the last tile's padding) zero-filled. The caller commits them.
__device__ __forceinline__ void copy_staged_x(__half* s_x, int stride, const __half* staged,
                                              int64_t stored, int c0, int slice_rows,
                                              int staged_rows, int rows) {
  const int vecs = slice_rows / 8;
  for (int e = threadIdx.x; e < staged_rows * vecs; e += blockDim.x) {
    const int tok = e / vecs, v = e - tok * vecs;
    cp_async16(s_x + tok * stride + v * 8,
               staged + int64_t(tok < rows ? tok : 0) * stored + int64_t(c0) * 32 + v * 8,
               tok < rows);
  }
}

// A projector block: x's rows of its projection slice onto a's tile, t[tok][c] = w(tok, slot c) ·
// Σ_r a[c][r] · x[tok][r] over the slice, into the part's t_part (exactly 0 where the row gives
// the slot no weight, for lora_delta). x is staged as the main blocks stage it (the staged copy,
// or gathered through row_src, normalized with a QuantInputNorm: the same fp16 values) in the
// same order as a (lora_gather_features), so that on the tensor cores the tile is the A operand
// and x the B operand exactly as the weights meet x. Warp w takes chunks w, w + 8, ... of every
// row tile, and the warps' sums are added in warp order: a row's t does not depend on the
// batch. Called first thing by the kernel, which then returns: nothing of the main loop is live.
// Before the wait: a's tile into L2, the act-order sources and the rows' weights (none of them
// written by the kernels a launch waits for, QuantGemmLora).
template <int MT>
__device__ __forceinline__ void project_lora(const GemvGroup& launch_group, int which, int local,
                                             const __half* x, int rows) {
  extern __shared__ __align__(16) unsigned char smem[];
  const GemvPart& part = launch_group.part[which];
  const GemvLora& lora = part.lora;
  const QuantMatrix& m = part.m;
  const GemvNorm& norm = launch_group.norm;
  const int tiles = lora_tiles(lora.cols);
  const int slice = local / tiles, tile = local - slice * tiles;
  const int lp = part.lora_p_chunks;
  const int c0 = slice * lp;
  const int n = min(static_cast<int>(m.chunks) - c0, lp);  // chunks of the slice
  const int slice_rows = n * 32;
  const int stride = lora_stride(lp);
  const int staged_rows = staged_x_rows(MT, rows);
  auto* xs_all = reinterpret_cast<__half*>(smem);
  auto* sums = reinterpret_cast<float*>(smem);  // after the products
  const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
  const int bd = static_cast<int>(blockDim.x);
  const int64_t stored = m.chunks * 32;
  // a's tile over the slice into L2 (one bulk prefetch per column): its fragments are loaded
  // into registers once x is staged, so that they are not held through the staging (the one-tile
  // kernel's 64 registers spilled).
  if (threadIdx.x < kLoraTileCols &&
      tile * kLoraTileCols + static_cast<int>(threadIdx.x) < lora.cols) {
    prefetch_l2(lora.a + int64_t(tile * kLoraTileCols + threadIdx.x) * stored + int64_t(c0) * 32,
                static_cast<unsigned>(slice_rows) * 2u);
  }
  // This thread's outputs (two at most): e = (row tile, column within the tile, row).
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
  // The slice rows this thread gathers, with their sources and norm weights (without a staged x).
  constexpr int kRowsPerThread = kLoraSliceChunks * 32 / (kMaxWarps * 32);
  const __half* staged = part.staged_x;
  int src[kRowsPerThread];
#pragma unroll
  for (int k = 0; k < kRowsPerThread; ++k) {
    const int r = threadIdx.x + k * bd;
    src[k] = !staged && r < slice_rows ? m.row_src[int64_t(c0) * 32 + r] : -1;
  }

  pdl_wait();
  if (staged) {
    copy_staged_x(xs_all, stride, staged, stored, c0, slice_rows, staged_rows, rows);
    cp_async_commit();
  } else {
    // All of a thread's rows for kTok x rows at a time in flight: one round trip per kTok rows.
    const int K = static_cast<int>(m.in_features);
    constexpr int kTok = MT == 1 ? 2 : 4;
    float nw[kRowsPerThread];  // the norm weights of the thread's rows (with a QuantInputNorm)
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
      nw[k] = norm.inv_rms && src[k] >= 0 ? norm.weight[src[k]] : 0.0f;
    }
    for (int tok0 = 0; tok0 < staged_rows; tok0 += kTok) {
      __half v[kRowsPerThread][kTok];
      float inv[kTok];
#pragma unroll
      for (int j = 0; j < kTok; ++j) {
        inv[j] = norm.inv_rms && tok0 + j < rows ? norm.inv_rms[tok0 + j] : 0.0f;
      }
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k) {
#pragma unroll
        for (int j = 0; j < kTok; ++j) {
          const int tok = tok0 + j;
          v[k][j] =
              src[k] >= 0 && tok < rows ? x[int64_t(tok) * K + src[k]] : __float2half_rn(0.0f);
        }
      }
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k) {
        const int r = threadIdx.x + k * bd;
        if (r >= slice_rows) continue;
        const int at = staged_position(r);
#pragma unroll
        for (int j = 0; j < kTok; ++j) {
          const int tok = tok0 + j;
          if (tok >= staged_rows) continue;
          // add_rms_norm's formula with a QuantInputNorm, as the main blocks stage it.
          xs_all[tok * stride + at] =
              norm.inv_rms && src[k] >= 0 && tok < rows
                  ? __float2half_rn(nw[k] * (__half2float(v[k][j]) * inv[j]))
                  : v[k][j];
        }
      }
    }
  }
  // a's fragments of the warp's chunks (warp, warp + 8, ...): rows g and g + 8 of the tile (zeros
  // past cols), loaded while the staged x arrives.
  constexpr int kChunksPerWarp = kLoraSliceChunks / kMaxWarps;
  uint4 a_lo[kChunksPerWarp], a_hi[kChunksPerWarp];
  {
    const int col = tile * kLoraTileCols + g;
    const __half* lo = lora.a + int64_t(col) * stored + int64_t(c0) * 32 + 8 * t;
    const __half* hi = lo + 8 * stored;
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < kChunksPerWarp; ++k) {
      const int j = warp + k * kMaxWarps;
      a_lo[k] =
          j < n && col < lora.cols ? __ldg(reinterpret_cast<const uint4*>(lo + j * 32)) : zero;
      a_hi[k] =
          j < n && col + 8 < lora.cols ? __ldg(reinterpret_cast<const uint4*>(hi + j * 32)) : zero;
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // Lane (g, t) reads x row 8mt + g, as in the main loop (one tile: absent rows read zeros).
  float c[MT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) c[mt][0] = c[mt][1] = c[mt][2] = c[mt][3] = 0.0f;
  const __half* xs = xs_all + (MT == 1 ? min(g, rows) : g) * stride + 8 * t;
#pragma unroll
  for (int k = 0; k < kChunksPerWarp; ++k) {
    const int j = warp + k * kMaxWarps;
    if (j >= n) break;
    const uint4 lo = a_lo[k], hi = a_hi[k];
    const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const uint4 b = *reinterpret_cast<const uint4*>(xs + j * 32 + mt * 8 * stride);
      mma_16816<__half>(c[mt], a0, b.x, b.y);
      mma_16816<__half>(c[mt], a1, b.z, b.w);
    }
  }
  __syncthreads();  // every warp is done with x: its area takes the sums
  // c[mt]: (column g, x row 8mt + 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) of the tile.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    float* mine = sums + (warp * MT + mt) * kLoraWarpTile;
    mine[g * 8 + 2 * t] = c[mt][0];
    mine[g * 8 + 2 * t + 1] = c[mt][1];
    mine[(g + 8) * 8 + 2 * t] = c[mt][2];
    mine[(g + 8) * 8 + 2 * t + 1] = c[mt][3];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int e = threadIdx.x + i * kMaxWarps * 32;
    const int tl = e / kLoraWarpTile, at = e % kLoraWarpTile;
    const int col = tile * kLoraTileCols + at / 8, tok = tl * 8 + at % 8;
    if (e < MT * kLoraWarpTile && col < lora.cols && tok < rows) {
      float sum = 0.0f;
#pragma unroll
      for (int wp = 0; wp < kMaxWarps; ++wp) sum += sums[(wp * MT + tl) * kLoraWarpTile + at];
      lora.t_part[(int64_t(slice) * rows + tok) * lora.cols + col] =
          w[i] == 0.0f ? 0.0f : sum * w[i];
    }
  }
  // Made: for the delta or finishing blocks of this launch (quant_gemm_sum_kernel needs no word).
  // The barrier, then thread 0's release, publish the block's t as last_to_arrive publishes
  // partials.
  if (part.lora_delta || !launch_group.sum_kernel) {
    __syncthreads();
    if (threadIdx.x == 0) arrive_at(&part.counters[part.column_groups + 1]);
  }
}

// launch_group is a __grid_constant__: its fields are read from the constant bank where they are
// used, with no copy into registers or local memory.
// LORA: kLoraNone, the plain kernel (no LoRA code at all); kLoraDelta, projector and delta
// blocks beside the plain main blocks and completion; kLoraInCompletion, projector blocks, and
// the completion adds bt · t. Instances of their own, so that the LoRA code of one does not
// shape the code generation of another's main loop and completion (an instance holding both
// completions, or the LoRA completion code, cost ~1 µs a launch at batch 1, measured with the
// LoRA work switched off). Shared memory: each warp's group records, the staged x rows
// (xs_stride halves each), the norm weights of the slice's rows (with a QuantInputNorm).
enum LoraMode : int { kLoraNone = 0, kLoraDelta = 1, kLoraInCompletion = 2 };
template <QuantKind KIND, int MT, int LORA>
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
  // A LoRA's projector blocks come first, its delta blocks last (LoRA launches have one row
  // group).
  if constexpr (LORA != kLoraNone) {
    if (local < part.lora_blocks) {
      pdl_launch_dependents();
      project_lora<MT>(launch_group, which, local, x, rows);
      return;
    }
  }
  if constexpr (LORA == kLoraDelta) {
    const int delta_local = local - part.lora_blocks - part.column_groups * part.slices;
    if (delta_local >= 0) {
      pdl_launch_dependents();
      lora_delta_block(launch_group, which, delta_local, rows);
      return;
    }
  }
  const int main_local = local - (LORA != kLoraNone ? part.lora_blocks : 0);
  const int column_group = main_local % part.column_groups;
  const int slice = main_local / part.column_groups;
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int64_t nb = int64_t(column_group) * warps + warp;
  const bool active = nb < m.blocks;
  const int c0 = slice * p_chunks;
  const int n = min(static_cast<int>(m.chunks) - c0, p_chunks);  // chunks of the slice
  constexpr int kMeta = meta_words<KIND>();
  uint32_t* meta = reinterpret_cast<uint32_t*>(smem) + warp * p_chunks * kMeta;
  const int xs_stride = p_chunks * 32 + 8;  // halves; +8: conflict-free fragment loads
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
  const int width_code = qtile::chunk_width(info);
  const uint32_t group = qtile::chunk_group(info);
  const int prev_width = __shfl_up_sync(kFull, width_code, 1);
  const uint32_t prev_group = __shfl_up_sync(kFull, group, 1);
  const uint32_t group_starts =
      __ballot_sync(kFull, lane < n && (lane == 0 || group != prev_group));
  const uint32_t width_starts =
      __ballot_sync(kFull, lane < n && (lane == 0 || width_code != prev_width));
  // kSuperRecordOnce: the chunks that begin a super-block. Only their records get its (d, dmin):
  // copied into every group's, the 128-byte record made a chunk's records three times GPTQ's.
  uint32_t super_starts = 0;
  if constexpr (kSuperRecordOnce<KIND>) {
    super_starts = __ballot_sync(
        kFull,
        lane < n && (lane == 0 || (group >> m.super_shift) != (prev_group >> m.super_shift)));
  }
  const uint32_t* wcol = m.qweight + nb * m.lines * 32;
  if (active) {
    // The record of each group the slice starts: lane j copies the one of chunk j.
    if (lane < n && ((group_starts >> lane) & 1u)) {
      const int64_t gi = nb * m.groups + group;
      uint32_t* rec = meta + lane * kMeta;
      if constexpr (KIND == QuantKind::kExl2) {
        cp_async16(rec, m.scale_codes + gi * 8, true);
        rec[32] = m.scale_max[group];
      } else if constexpr (is_gguf_kind(KIND)) {
        if (!kSuperRecordOnce<KIND> || ((super_starts >> lane) & 1u)) {
          const uint32_t* sup = m.super_records + (nb * m.supers + (group >> m.super_shift)) * 32;
#pragma unroll
          for (int part = 0; part < 8; ++part) cp_async16(rec + part * 4, sup + part * 4, true);
        }
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
  // The slices the completion adds: with a LoRA, one more (its delta block's).
  const int sum_slices = LORA == kLoraDelta ? part.sum_slices : slices;

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
    copy_staged_x(s_x, xs_stride, staged, m.chunks * 32, c0, slice_rows, staged_rows, rows);
    cp_async_commit();
  } else if (norm.inv_rms) {
    // x is the residual: stage fp16(w · (x · inv_rms)), add_rms_norm's formula, with the row's
    // inverse RMS read alongside x (no round trip of its own). The blocks of column group 0 of
    // the first matrix also write those rows out (its slices cover every input feature once).
    cp_async_wait<0>();  // this thread's norm weights (copied before the wait)
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
  cp_async_wait<0>();  // the scales (and the staged x)
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
    const int b = __shfl_sync(kFull, width_code, j0);
    const uint32_t* wl = wcol + int64_t(__shfl_sync(kFull, line, j0)) * 32 + lane;
    qchunk::with_gguf_form<KIND>(m.gguf_mode, [&](auto form) {
      qchunk::with_form_width<KIND, decltype(form)::value>(b, [&](auto width) {
        run_chunks<decltype(width)::value, KIND, MT, decltype(form)::value>(
            wl, j0, j1, group_starts, super_starts, meta, m.gguf_mode, xs, xs1, g, acc);
      });
    });
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
  if (sum_slices == 1 && !part.residual && (LORA != kLoraInCompletion || part.lora.cols == 0)) {
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
  if constexpr (LORA == kLoraInCompletion) {
    if (part.lora.cols > 0) {  // bt · t added here; its projections are looked for while
      bool seen = false;       // arriving: made long before, as a rule
      if (!last_to_arrive_seeing(&part.counters[column_group], slices,
                                 &part.counters[part.column_groups + 1],
                                 part.lora_slices * lora_tiles(part.lora.cols), seen)) {
        return;
      }
      finish_column_group<true>(part, part.column_groups, column_group, rows,
                                reinterpret_cast<float*>(smem), seen);
      return;
    }
  }
  if (!last_to_arrive(&part.counters[column_group], sum_slices)) return;
  finish_column_group<false>(part, part.column_groups, column_group, rows, nullptr, false);
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
// is a LoRA's bt · t (delta blocks' as the last slice, or made here). One row a block: blocks of
// two to eight rows, which copied bt once for them, measured slower (docs/PERFORMANCE.md). LORA:
// the instance for launches whose bt · t it makes (the plain one keeps its few registers).
template <bool LORA>
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
  const int lora_cols = LORA && !part.lora_delta ? lora.cols : 0;  // else in the slices
  extern __shared__ __align__(16) unsigned char sum_smem[];        // a LoRA's bt [cols][256]
  auto* bt_s = reinterpret_cast<__half*>(sum_smem);
  if (lora_cols > 0) {  // weights: before the wait
    stage_lora_bt(lora, N, column_group * kQuantNormSlotColumns, bt_s);
    cp_async_commit();
  }
  pdl_wait();
  // The row's t (one pass: kTLanes threads a column), loaded alongside the slices.
  __shared__ float t_s[LORA ? kQuantGemmLoraMaxCols : 1];
  const int c = static_cast<int>(threadIdx.x) / kTLanes;
  LoraTSum t;
  if (lora_cols > 0) t.issue(lora, part.lora_slices, rows, tok * lora_cols + c, c < lora_cols);
  const int64_t at = int64_t(tok) * N + o;
  float sum =
      o < N ? qchunk::sum_slices(part.partials + at, int64_t(rows) * N, part.sum_slices) : 0.0f;
  if (lora_cols > 0) {
    const float tc = t.finish();
    if (threadIdx.x % kTLanes == 0 && c < lora_cols) t_s[c] = tc;
    cp_async_wait<0>();
    __syncthreads();
  }
  if (o >= N) return;
  if (lora_cols > 0) sum += lora_delta(lora_cols, bt_s + threadIdx.x, t_s);
  qchunk::store_out(part.out, part.out_f32, at, sum + bias);
}

}  // namespace

size_t quant_gemm_partial_floats(const QuantMatrix& m, int64_t rows, int lora_cols) {
  // One slice needs none, except when its sums go into a residual (through the same completion).
  const int64_t splits = ceil_div(m.chunks, qchunk::slice_chunks(m)) + (lora_cols > 0 ? 1 : 0);
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
  return static_cast<size_t>(lora_slices(m.chunks) * rows * cols);
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
  // Delta blocks make bt · t for all of a launch's LoRAs, or for none.
  const bool delta_rows = rows <= scratch.lora_delta_max_rows;
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
    part.lora_delta = lora.cols > 0 && delta_rows;
    part.sum_slices = part.slices + (part.lora_delta ? 1 : 0);
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
    part.lora_p_chunks = lora_slice_chunks(tg.m->chunks);
    part.lora_slices = lora_slices(tg.m->chunks);
    part.lora_blocks = lora.cols > 0 ? part.lora_slices * lora_tiles(lora.cols) : 0;
    part.stage_block_begin = stage_blocks;
    part.staged_x = stage ? staged_x : nullptr;
    if (stage) {
      staged_x += quant_gemm_staged_x_halves(*tg.m, rows);
      stage_blocks += static_cast<int>(ceil_div(tg.m->chunks * 32, kStageThreads));
    }
    partials += quant_gemm_partial_floats(*tg.m, rows, lora.cols);
    counters += quant_gemm_counters(*tg.m);
    // The LoRA's projectors, the main blocks, the LoRA's delta blocks.
    blocks += part.lora_blocks + part.column_groups * part.slices * group.row_groups +
              (part.lora_delta ? part.column_groups : 0);
    // One slice stores its results itself (unless a LoRA joins them); a residual is added by the
    // last block of a group.
    if (part.slices > 1 || lora.cols > 0) sum_blocks += part.column_groups * static_cast<int>(rows);
    if (tg.residual) group.sum_kernel = false;
    const int meta =
        is_gguf_kind(kind) ? meta_words<QuantKind::kGguf>() : meta_words<QuantKind::kExl2>();
    const int staged_rows = staged_x_rows(row_tiles(block_rows), block_rows);
    const size_t main_smem =
        size_t(kMaxWarps) * part.p_chunks * meta * 4 +
        size_t(staged_rows) * (size_t(part.p_chunks) * 32 + 8) * sizeof(__half) +
        (norm ? size_t(part.p_chunks) * 32 * sizeof(float) : 0);
    smem = std::max(smem, main_smem);
    if (lora.cols > 0) {
      smem = std::max(smem, size_t(projector_smem_bytes(part.lora_p_chunks, row_tiles(block_rows),
                                                        staged_rows)));
    }
  }
  // A delta block's area, or a finishing block's LoRA area (in place of its main area).
  int sum_kernel_lora_cols = 0;
  for (int i = 0; i < count; ++i) {
    const GemvPart& part = group.part[i];
    if (part.lora.cols == 0) continue;
    if (part.lora_delta || !group.sum_kernel) {
      smem = std::max(smem, size_t(lora_delta_smem_bytes(part.lora.cols, static_cast<int>(rows))));
    } else {
      sum_kernel_lora_cols = std::max(sum_kernel_lora_cols, part.lora.cols);
    }
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
    if (with_lora && delta_rows) {
      return by_tiles(quant_gemv_kernel<K, 1, kLoraDelta>, quant_gemv_kernel<K, 2, kLoraDelta>,
                      quant_gemv_kernel<K, 3, kLoraDelta>, quant_gemv_kernel<K, 4, kLoraDelta>);
    }
    if (with_lora) {
      return by_tiles(
          quant_gemv_kernel<K, 1, kLoraInCompletion>, quant_gemv_kernel<K, 2, kLoraInCompletion>,
          quant_gemv_kernel<K, 3, kLoraInCompletion>, quant_gemv_kernel<K, 4, kLoraInCompletion>);
    }
    return by_tiles(quant_gemv_kernel<K, 1, kLoraNone>, quant_gemv_kernel<K, 2, kLoraNone>,
                    quant_gemv_kernel<K, 3, kLoraNone>, quant_gemv_kernel<K, 4, kLoraNone>);
  });
  if (e != cudaSuccess || !group.sum_kernel || sum_blocks == 0) return e;
  return launch_kernel(
      l, sum_kernel_lora_cols > 0 ? quant_gemm_sum_kernel<true> : quant_gemm_sum_kernel<false>,
      dim3(static_cast<unsigned>(sum_blocks)), dim3(kQuantNormSlotColumns),
      size_t(sum_kernel_lora_cols) * kQuantNormSlotColumns * sizeof(__half), group, r);
}

}  // namespace hearth::kernels
