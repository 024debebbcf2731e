// Host-side entry points of the EXL2 / GPTQ kernels (kernels/quant_gemv.cu,
// kernels/quant_dequant.cu). Plain C++, like kernels/kernels.h, whose conventions hold here too
// (device pointers, row-major, nothing syncs with the host, launches on Launch::stream, returns
// the launch status).
//
// The weights are in the tile layout of kernels/quant_tile_codec.cuh, built at load time by
// engine/formats/quant_tile_layout.cpp and copied to the device as they are.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace hearth::kernels {

// kGguf: GGUF blocks with fp32 scales (GgufCodeForm), applied to the fused kernels' fp32 sums of
// x times the codes; kGgufHalf: Q4_1/Q5_1 exact in fp16; kGgufCodebook: IQ4_NL/IQ4_XS, kGguf's
// scales on 4-bit indices into IQ4's codebook (chunks of width qtile::kIq4Width only). The
// codebook is a kind of its own so that its longer decode has kernels of its own: inside
// kGguf's, it cost the K-quants' kernels registers and halved their speed at 16 and 32 rows.
enum class QuantKind : int {
  kExl2 = 0,
  kGptqSym = 1,
  kGptqAsym = 2,
  kGguf = 3,
  kGgufHalf = 4,
  kGgufCodebook = 5
};
// The GGUF kinds (their group record: (d, dmin) per super-block, sub-scales per group).
constexpr bool is_gguf_kind(QuantKind k) {
  return k == QuantKind::kGguf || k == QuantKind::kGgufHalf || k == QuantKind::kGgufCodebook;
}
// The kinds with kGguf's fp32 scales on the sums (GroupScales<kGguf>).
constexpr bool has_gguf_scales(QuantKind k) {
  return k == QuantKind::kGguf || k == QuantKind::kGgufCodebook;
}

// A quantized matrix on the device (see QuantTileLayout for the meaning of every array).
struct QuantMatrix {
  QuantKind kind = QuantKind::kExl2;
  const uint32_t* qweight = nullptr;        // [blocks][lines][32]
  const int32_t* chunk_line = nullptr;      // [chunks + 1]
  const uint32_t* chunk_info = nullptr;     // [chunks]
  const int32_t* row_src = nullptr;         // [chunks · 32]
  const uint16_t* scale_codes = nullptr;    // kExl2: [blocks][groups][8]
  const uint16_t* scale_max = nullptr;      // kExl2: [groups] (fp16)
  const uint16_t* scales = nullptr;         // GPTQ: [blocks][groups][8][4] (fp16)
  const uint16_t* zeros = nullptr;          // kGptqAsym: [blocks][groups][8][4] (fp16, 1024 + z)
  const uint32_t* super_records = nullptr;  // GGUF: [blocks][supers][8][4] (fp16 d, dmin)
  const uint16_t* sub_records = nullptr;    // GGUF: [blocks][groups][8][4], or null (kNone)
  int64_t in_features = 0;
  int64_t out_features = 0;
  int64_t blocks = 0;
  int64_t chunks = 0;
  int64_t groups = 0;
  int64_t lines = 0;
  int max_bits = 8;    // widest chunk (sizes the shared-memory staging)
  int64_t supers = 0;  // GGUF: super-blocks per row, each of 2^super_shift groups
  int super_shift = 0;
  uint32_t gguf_mode = 0;  // GGUF kinds: QuantTileLayout::SubScales | zero << 8
};

// Most x rows one block of the fused kernel serves. A launch of more rows (up to
// kQuantGemmMaxLaunchRows) gives each group of kQuantGemmMaxRows rows blocks of their own, which
// read the same weights side by side (mostly from L2) and compute each row as a launch of its
// group alone would: a row's bits do not depend on the batch. Beyond the rows where that pays
// (CudaBackendOptions::quant_fused_max_rows), batches take the dequantize + cuBLAS path below.
constexpr int kQuantGemmMaxRows = 32;
constexpr int kQuantGemmMaxLaunchRows = 256;

// Split-K scratch: partial sums and per-column-group arrival counters (start at zero; the kernel
// leaves them at zero). From sum_kernel_min_rows rows on, the slices' partials are added by a
// kernel of their own, one thread per output of a row over every multiprocessor, instead of by
// the last block of each column group, whose one-block tail grew with the rows (at 32 rows it
// was most of the launch, docs/PERFORMANCE.md); both add the slices in the same order, so the bits
// are the same. Launches that add into a residual (QuantGemmTarget) always sum in the kernel.
//
// With staged_x set (the caller's choice; ignored for launches with a QuantInputNorm), x is first
// laid out by a kernel of its own in each matrix's staging order (act-order gather and the MMA
// fragment order applied), so that a block copies its slice's rows with 16-byte asynchronous copies
// in one round trip instead of gathering them two bytes at a time, a round trip per few rows,
// before its first weight load (the same values, so the same bits). staged_x holds the matrices'
// copies one after the other, each quant_gemm_staged_x_halves long.
struct QuantGemmScratch {
  float* partials = nullptr;
  int32_t* counters = nullptr;
  int64_t sum_kernel_min_rows = kQuantGemmMaxRows + 1;
  void* staged_x = nullptr;  // fp16, or null: the blocks gather x themselves
  // The slices' LoRA projections, quant_gemm_lora_floats per matrix with a LoRA, one after the
  // other in order; needed only by launches that fold a LoRA in.
  float* lora_t = nullptr;
  // Up to these rows a LoRA's bt · t is made by blocks of its own beside the main blocks (one
  // more partial slice), from more rows by the completion (the same bits either way).
  int64_t lora_delta_max_rows = 4;
};
// With a LoRA (lora_cols > 0) one slice more: its bt · t, which the completion adds last.
size_t quant_gemm_partial_floats(const QuantMatrix& m, int64_t rows, int lora_cols = 0);
size_t quant_gemm_counters(const QuantMatrix& m);
size_t quant_gemm_staged_x_halves(const QuantMatrix& m, int64_t rows);
size_t quant_gemm_lora_floats(const QuantMatrix& m, int64_t rows, int cols);

// Fused dequantize-and-multiply, out[R, N] = x[R, K] · Wᵀ (+ bias), for up to kQuantGemmMaxGroup
// matrices of the same kind that multiply the same x (q/k/v, gate/up), 1..kQuantGemmMaxLaunchRows
// rows (a QuantInputNorm, a residual or a LoRA: at most kQuantGemmMaxRows),
// in one launch. x: fp16 [R, K]; bias: f32 [N] or null; out: fp16 or f32 [R, N]; the act-order
// gather of x happens while x is staged in shared memory. Deterministic: an output's value does not
// depend on R (the K split depends only on the matrix shape). The scratch holds the matrices'
// partials and counters one after the other, in order, each sized as quant_gemm_partial_floats /
// quant_gemm_counters say.
//
// RMSNorm between two such launches (a decode step's o_proj → gate/up and down → next q/k/v) needs
// no pass of its own: the producer adds its result into the residual stream, each of its column
// groups leaves the sum of squares of its 256 columns, and the last of them turns those into each
// row's inverse RMS; the consumer normalizes the residual rows as it stages them (reading that one
// number per row alongside x) and writes the normalized rows out too, for any later reader. The
// roundings of kernels::add_rms_norm and its order of adding the sum of squares
// (kernels/rms_sum.cuh): the same bits.
constexpr int kQuantGemmMaxGroup = 3;
constexpr int kQuantNormSlotColumns = 256;
constexpr int64_t quant_norm_slots(int64_t cols) {
  return (cols + kQuantNormSlotColumns - 1) / kQuantNormSlotColumns;
}
// LoRA folded into a matrix of the launch: out += Σ_c w[r, slot_of_col[c]] · (x·a[c]) · bt[c],
// so the adapters cost no launches of their own. Blocks of their own (dispatched first) project
// each 1,024-row slice of K onto a's 16-column tiles on the tensor cores, weighed per row; those
// projections are added in slice order and multiplied by bt, up to
// QuantGemmScratch::lora_delta_max_rows rows by blocks of their own that leave bt · t as one more
// slice of partials, from more rows where the slices' sums are (the last block of a column
// group, which waits for them, or quant_gemm_sum_kernel). fp32
// throughout, one rounding with the base output; a row adds only the columns it weighs, so its
// value depends neither on the batch nor on the adapters other rows weigh.
// a, bt, slot_of_col and row_weights are read before the launch waits on the kernel before it
// (programmatic dependent launch): no kernel of the stream's chain may write them (the backend
// copies row_weights with the batch layout, before the step's kernels).
// a: fp16 [cols, chunks · 32], A's rows in the matrix's staging order
// (kernels::lora_gather_features: stored row order, then the MMA fragment order within each
// chunk; zeros on padding rows); bt: fp16 [cols, N] (Bᵀ, adapter scales folded in; N a multiple
// of 8); row_weights: [rows, slots], the weight each row gives each slot.
constexpr int kQuantGemmLoraMaxCols = 64;
constexpr int kQuantGemmLoraMaxRows = kQuantGemmMaxRows;  // x rows of a launch with a LoRA
struct QuantGemmLora {
  const void* a = nullptr;
  const void* bt = nullptr;
  const int32_t* slot_of_col = nullptr;
  const float* row_weights = nullptr;
  int cols = 0;  // 0: no LoRA; at most kQuantGemmLoraMaxCols
  int slots = 0;
};
struct QuantGemmTarget {
  const QuantMatrix* m = nullptr;
  const float* bias = nullptr;
  void* out = nullptr;
  Elem out_t = Elem::kF16;
  // Optional (out fp16): residual[R, N] (fp16) += out, rounded as add_rms_norm rounds, and
  // inv_rms[R] = 1 / sqrt(mean(residual²) + norm_eps) per row; norm_sums: scratch of
  // R · quant_norm_slots(N) floats.
  void* residual = nullptr;
  float* norm_sums = nullptr;
  float* inv_rms = nullptr;
  float norm_eps = 0.0f;
  QuantGemmLora lora;  // optional
};
// The consumer's side: x is the residual, and the matrices multiply
// fp16(weight · (x · inv_rms)), add_rms_norm's output.
struct QuantInputNorm {
  const float* inv_rms = nullptr;  // [R], left by the producer
  const float* weight = nullptr;   // f32 [K]
  void* normed = nullptr;          // fp16 [R, K]: receives the normalized rows
};
cudaError_t quant_gemm_group(const Launch& l, const QuantGemmTarget* targets, int count,
                             const void* x, int64_t rows, const QuantGemmScratch& scratch,
                             const QuantInputNorm* norm = nullptr);

// The large-batch path (cuBLAS on dequantized weights), in the weights' stored row order so the
// dequantized rows are written contiguously: out = x_stored · w_storedᵀ with K' = chunks · 32.
// quant_dequantize writes outputs [n_begin, n_begin + count) to fp16 w[count][K'] (row s of the
// tile layout in column s; padding rows decode to finite values that meet zeros in x_stored);
// n_begin must be a multiple of 32. quant_gather_x writes x_stored[r][s] = x[r][row_src[s]] (0
// for padding rows), r < rows: the act-order permutation applied to x once per product. With
// `up` (fp16 [rows, K]), x is the MLP's gate and the values gathered are silu(x) · up, with
// kernels::silu_mul's bits: down's input in its order without writing the activation first.
cudaError_t quant_dequantize(const Launch& l, const QuantMatrix& m, int64_t n_begin, int64_t count,
                             void* w);
cudaError_t quant_gather_x(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                           void* x_stored, const void* up = nullptr);

// The many-row product on the tensor cores without the fp16 copy (kernels/quant_mma_gemm.cu):
// out[R, N] = x_stored[R, K'] · w_storedᵀ (+ bias), the weights decoded in registers from the
// packed tiles. x: fp16, ld_x elements between rows (a multiple of 8, 16-byte aligned), in the
// weights' stored row order (quant_gather_x's output, or x itself when the rows are in order);
// columns from k_valid on (a multiple of 8, at most chunks · 32) are taken as zeros. bias: f32
// [N] or null; out: fp16 or f32 [R, N].
// A block computes 128 outputs × 128 rows (kTall) or 256 outputs × 64 rows (kWide: half the x
// traffic per weight, and more blocks for fewer rows); the same bits either way.
// k_splits 1: every output is summed over all of K by one block, so a row's result does not depend
// on R. More: K is split over that many blocks, whose fp32 partials (quant_mma_partial_floats in
// `partials`) a second kernel adds in split order; quant_mma_k_splits chooses the count from R and
// the multiprocessors (so that the last wave of blocks is nearly full), so rows then depend on R.
// kWgmma: the wide block on Hopper's warpgroup MMA, where the module was built for sm_90a and the
// driver loaded that code (wgmma_supported); its bits may differ from the other shapes' in the last
// place.
enum class QuantMmaBlock { kTall, kWide, kWgmma };
constexpr size_t kQuantMmaPartialBytes = size_t(64) << 20;  // the most partials a split may write
int quant_mma_k_splits(const QuantMatrix& m, int64_t rows, QuantMmaBlock shape,
                       int multiprocessors);
size_t quant_mma_partial_floats(const QuantMatrix& m, int64_t rows, int k_splits);
cudaError_t quant_mma_gemm(const Launch& l, const QuantMatrix& m, const void* x, int64_t ld_x,
                           int64_t k_valid, int64_t rows, const float* bias, void* out, Elem out_t,
                           QuantMmaBlock shape = QuantMmaBlock::kTall, int k_splits = 1,
                           float* partials = nullptr);

// An embedding lookup in a packed table (GGUF's token_embd, a tied head): out[r][k] = W[id][k] in
// fp16, decoded as the fused product decodes it, id = tokens[r]; ids outside [0, N) give zeros.
// out is [rows, K].
cudaError_t quant_embed(const Launch& l, const QuantMatrix& m, const int32_t* tokens, int64_t rows,
                        void* out);

}  // namespace hearth::kernels
