// Host-side entry points of Hearth's CUDA kernels. Plain C++ (no CUDA syntax), so that the
// backend's .cpp files can include it; the kernels themselves live in the .cu files beside it.
//
// Conventions for every launcher:
//  - all pointers are device pointers; 2-D tensors are row-major and contiguous;
//  - `Elem` says the element type of activation / weight tensors (fp16 or bf16; a few take f32);
//  - nothing synchronises with the host; the launch runs on `Launch::stream`;
//  - the return value is the launch status (cudaSuccess or the error of the launch itself).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hearth::kernels {

enum class Elem : int { kF16 = 0, kBF16 = 1, kF32 = 2 };

inline size_t elem_size(Elem e) {
  return e == Elem::kF32 ? 4 : 2;
}

// Sets the per-device kernel attributes (large shared-memory opt-ins). Call once per device,
// with that device current, before launching anything.
cudaError_t prepare_device();

// Whether the current device runs the kernels built for sm_90a (Hopper's warpgroup MMA,
// kernels/wgmma.cuh): a probe launch, once per device, so not during a graph capture.
bool wgmma_supported();

struct Launch {
  cudaStream_t stream = nullptr;
  // Programmatic dependent launch (sm_90+): the kernel may start while the previous one drains;
  // it prefetches what does not depend on it (weights) and waits before touching activations.
  bool pdl = false;
  int sm_count = 0;  // multiprocessors of the device (sizes split-K work); 0: assume 132
};

// A packed batch as the kernels see it. T rows (tokens) belong to S sequences; both counts may
// include padding (pad rows: position -1, sequence -1; pad sequences: no tokens, kv_len 0).
struct BatchView {
  const int32_t* tokens = nullptr;       // [T] token id of each row (pad rows: 0)
  const int32_t* positions = nullptr;    // [T] cache position of each row (pad rows: -1)
  const int32_t* token_seq = nullptr;    // [T] sequence of each row (pad rows: -1)
  const int32_t* seq_q_start = nullptr;  // [S + 1] first row of each sequence (prefix sums)
  const int32_t* seq_kv_len = nullptr;   // [S] cached positions once this step is stored
  const int32_t* seq_pages = nullptr;    // [S] offset of each sequence's page table in `pages`
  const int32_t* pages = nullptr;        // page tables, concatenated
  const int32_t* logit_rows = nullptr;   // [L] row of each logit row (pad: -1, gives zeros)
  int32_t num_tokens = 0;                // T
  int32_t num_seqs = 0;                  // S
  int32_t num_logit_rows = 0;            // L
};

// One layer of the paged KV cache. A page holds, for every layer, `page_size` positions of keys
// then values, each [num_kv_heads][page_size][head_dim] (head-major: one head's keys of a page
// are contiguous). Element (page p, head h, slot s, dim d) of the keys of this layer is at
// base + p * page_stride + (h * page_size + s) * head_dim + d; values add v_offset.
struct KvLayerView {
  void* base = nullptr;     // this layer's part of page 0
  int64_t page_stride = 0;  // elements from one page to the next (all layers of a page)
  int64_t v_offset = 0;     // elements from a page's keys to its values
  int32_t page_size = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t num_pages = 0;
  // 16: the layout above, in elements. 8, 6 or 4: a quantized cache (kernels/kv_quant.cuh, the
  // layout of engine/backend/kv_cache_quant.h): base, page_stride and v_offset (from the keys'
  // codes to the values') count bytes, and each layer-page's scales start k_scales / v_scales
  // bytes from its keys' codes. Kernels reading it see keys and values rotated.
  int32_t bits = 16;
  int64_t k_scales = 0;
  int64_t v_scales = 0;
  // ... and its fp16 keys of a sequence's first position [kv heads][head_dim] start first_keys
  // bytes from its keys' codes (read instead of position 0's codes).
  int64_t first_keys = 0;
  // Quantized caches: this layer's key offsets [kv heads][head_dim] (rotated), taken from each
  // key after its rotation and before it is quantized (KvCacheStorage::set_key_offsets).
  const float* key_offsets = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Element-wise and row ops (elementwise.cu)

// out[T, hidden] = table[tokens[t]] (ids outside [0, vocab) give zero rows).
cudaError_t embed(const Launch& l, Elem t, const void* table, int64_t vocab, int64_t hidden,
                  const BatchView& batch, int64_t rows, void* out);

// out[r] = x[r] / sqrt(mean(x[r]²) + eps) * w, fp32 arithmetic. x, out: [rows, cols]; w: [cols].
cudaError_t rms_norm(const Launch& l, Elem t, const void* x, const void* w, float eps, int64_t rows,
                     int64_t cols, void* out);

// residual[r] += delta[r] (rounded to t), then out[r] = rms_norm(residual[r]) * w.
cudaError_t add_rms_norm(const Launch& l, Elem t, void* residual, const void* delta, const void* w,
                         float eps, int64_t rows, int64_t cols, void* out);

// In place on q[rows, q_cols] and k[rows, k_cols] (heads of head_dim, rotate-half layout over
// the first rotary_dim dims): angle = positions[r] * inv_freq[i] in fp32, cos/sin scaled by
// attention_factor. Rows with a negative position are left alone. inv_freq: f32 [rotary_dim/2].
cudaError_t rope(const Launch& l, Elem t, void* q, int64_t q_cols, void* k, int64_t k_cols,
                 int64_t rows, const int32_t* positions, const float* inv_freq,
                 float attention_factor, int head_dim, int rotary_dim);

// out = silu(gate) * up, element-wise over n elements.
cudaError_t silu_mul(const Launch& l, Elem t, const void* gate, const void* up, void* out,
                     int64_t n);

// LoRA of a group of linears that read one input (lora.cu). `a` [cols, k] stacks the A matrices
// of every adapter and target; column c belongs to adapter slot slot_of_col[c]; row_weights
// [rows, slots] is the weight each row gives each slot.
// lora_shrink: out[r, c] = row_weights[r, slot_of_col[c]] · Σ_i x[r, i] · a[c, i], fp32
// arithmetic, rounded once; rows ≤ kLoraKernelMaxRows.
inline constexpr int kLoraKernelMaxRows = 32;
cudaError_t lora_shrink(const Launch& l, Elem t, const void* x, int64_t rows, int64_t k,
                        const void* a, int cols, const int32_t* slot_of_col,
                        const float* row_weights, int slots, void* out);
// lora_expand: for each target, out[r, j] += Σ_c t[r, col0 + c] · bt[c, j] (bt = Bᵀ, [cols, n],
// its adapter scale folded in), fp32 arithmetic, one rounding into out; rows ≤
// kLoraKernelMaxRows.
inline constexpr int kLoraMaxTargets = 3;
struct LoraExpandTarget {
  void* out = nullptr;       // [rows, n]
  const void* bt = nullptr;  // [cols, n]
  int64_t n = 0;
  int col0 = 0;
  int cols = 0;
};
struct LoraExpandTargets {
  LoraExpandTarget t[kLoraMaxTargets];
  int count = 0;
};
cudaError_t lora_expand(const Launch& l, Elem t, const void* tmat, int64_t rows, int total_cols,
                        const LoraExpandTargets& targets);
// Whether lora_expand takes these sizes (it stages up to 8 rows of t in shared memory).
inline bool lora_expand_fits(int64_t rows, int64_t total_cols) {
  return rows <= kLoraKernelMaxRows && 8 * total_cols * 4 <= 48 * 1024;
}
// fp16 out[c][qtile::staged_position(s)] = a[c][row_src[s]] for c < cols, s < stored (a whole
// number of 32-row chunks; 0 where row_src[s] < 0): the A rows of a LoRA in a quantized matrix's
// staging order (kernels::QuantGemmLora).
cudaError_t lora_gather_features(const Launch& l, const void* a, int cols, int64_t k,
                                 const int32_t* row_src, int64_t stored, void* out);
// out[r, c] = row_weights[r, slot_of_col[c]] · in[r, c] (in: fp32 from a GEMM), rounded to t.
cudaError_t lora_scale_rows(const Launch& l, Elem t, const float* in, int64_t rows, int cols,
                            const int32_t* slot_of_col, const float* row_weights, int slots,
                            void* out);

// out[L, cols] = x[rows[i]] (rows[i] < 0 gives zeros).
cudaError_t gather_rows(const Launch& l, Elem t, const void* x, int64_t cols, const int32_t* rows,
                        int64_t num_rows, void* out);

// partials[block] = Σ (a[i] − b[i])² over the block's share of n elements, in double, for
// `blocks` blocks (at most kSquaredDistanceMaxBlocks): the caller adds the partials in block
// order. Every element goes to a fixed thread and every sum has a fixed order: deterministic.
constexpr int kSquaredDistanceMaxBlocks = 1024;
cudaError_t squared_distance(const Launch& l, Elem t, const void* a, const void* b, int64_t n,
                             double* partials, int blocks);

// dst[i] = src[i] converted (round to nearest even), n elements.
cudaError_t convert(const Launch& l, Elem src_type, const void* src, Elem dst_type, void* dst,
                    int64_t n);

// out[r, n] += bias[n] (bias f32), out: [rows, cols] of type t.
cudaError_t add_bias(const Launch& l, Elem t, void* out, const float* bias, int64_t rows,
                     int64_t cols);

// Fills n elements of type t with uniform values in [-scale, scale) from (seed, index):
// benchmarks and tests use it to make large random tensors on the device.
cudaError_t fill_random(const Launch& l, Elem t, void* out, int64_t n, uint64_t seed, float scale);

// ---------------------------------------------------------------------------------------------
// Tensor parallelism (all_reduce.cu)

inline constexpr int kAllReduceMaxRanks = 8;
inline constexpr int kAllReduceMaxBlocks = 32;

// What one device's all-reduce reaches, peer access enabled between every pair: each device's
// staging buffer (2 × ranks slots of slot_bytes, the largest message) and flags
// ([kAllReduceMaxBlocks][kAllReduceMaxRanks] uint32, zeroed once), and this device's call
// counters ([kAllReduceMaxBlocks] uint32, zeroed once).
struct AllReducePeers {
  void* staging[kAllReduceMaxRanks] = {};
  int64_t slot_bytes = 0;
  uint32_t* flags[kAllReduceMaxRanks] = {};
  uint32_t* epochs = nullptr;
  int rank = 0;
  int ranks = 0;
};

// data[0..count) = the sum over the devices of their data, in float in device order (the same bits
// on every device); data 16-byte aligned, a multiple of 16 bytes and at most slot_bytes. Every
// device must call it, in the same order, with the same count; it waits on the others' kernels
// (launch them on all devices before waiting on any from the host).
cudaError_t all_reduce_peers(const Launch& l, Elem t, void* data, int64_t count,
                             const AllReducePeers& peers);

// The all-reduce of a row-parallel linear's output `delta` [rows, cols] fused with the add and
// norm after it: delta = the sum over the devices (as all_reduce_peers), then add_rms_norm(
// residual, delta, w, eps, out), bit for bit as those two calls. One block per row: needs
// all_reduce_add_rms_norm_fits() (fp16 / bf16, rows <= kAllReduceMaxBlocks, cols a multiple of 8,
// the message within a slot) and 16-byte aligned tensors.
cudaError_t all_reduce_add_rms_norm_peers(const Launch& l, Elem t, void* delta, void* residual,
                                          const float* w, float eps, int64_t rows, int64_t cols,
                                          void* out, const AllReducePeers& peers);
bool all_reduce_add_rms_norm_fits(Elem t, int64_t rows, int64_t cols, const AllReducePeers& peers);

// ---------------------------------------------------------------------------------------------
// Matrix-vector products for few rows (gemv.cu): out[R, N] = x[R, K] · W[N, K]ᵀ (+ bias).

// Scratch for the split-K reduction; counters must start at zero (the kernel leaves them so).
struct GemvScratch {
  float* partials = nullptr;    // sum of gemv_partial_floats(...) over the matrices of a launch
  int32_t* counters = nullptr;  // sum of gemv_counters(N) over the matrices of a launch
};

constexpr int kGemvMaxRows = 64;     // most x rows the tensor-core GEMV takes
constexpr int kGemvMaxMatrices = 3;  // matrices sharing x in one launch

// Whether the tensor-core GEMV handles this shape (K a multiple of 8, R <= kGemvMaxRows).
bool gemv_supported(int64_t n, int64_t k, int64_t rows);
// Split-K scratch of one matrix on a device with `sms` multiprocessors (0: assume 132).
size_t gemv_partial_floats(int64_t n, int64_t k, int64_t rows, int sms);
size_t gemv_counters(int64_t n);

struct GemvOutput {
  const void* w = nullptr;      // [n, K] of the launch's element type, 16-byte aligned
  const float* bias = nullptr;  // f32 [n] or null
  void* out = nullptr;          // [R, n] of out_type (the element type or f32)
  Elem out_type = Elem::kF16;
  int64_t n = 0;
};

// Tensor-core (mma.sync) GEMV streaming W through per-warp cp.async pipelines, with a
// deterministic split-K sized from (N, K, SM count): an output row is computed the same way
// whatever R is (batch-invariant), and whether or not it shares a launch. out_i[R, n_i] =
// x[R, K] · W_iᵀ (+ bias_i) for `count` (<= kGemvMaxMatrices) matrices sharing x [R, K].
cudaError_t gemv_group(const Launch& l, Elem t, const GemvOutput* outputs, int count, const void* x,
                       int64_t rows, int64_t k, const GemvScratch& scratch);
// One matrix: out[R, N] = x[R, K] · W[N, K]ᵀ (+ bias).
cudaError_t gemv(const Launch& l, Elem t, const void* w, const float* bias, const void* x,
                 int64_t rows, int64_t n, int64_t k, void* out, Elem out_t,
                 const GemvScratch& scratch);

// CUDA-core GEMV, a warp per output feature, for up to kGemvMaxMatrices matrices sharing
// x [R, K] (K a multiple of 8, R <= kGemvRowsMaxRows). One row (batch-1 decode): variant 0, high
// occupancy, four loads per lane; 1: eight loads in flight and an L2 prefetch under PDL (see
// gemv.cu). Several rows (a speculative check batch): each row gets exactly the bits it gets
// alone, at a cost that grows with R (the products run on the CUDA cores).
constexpr int kGemvRowsMaxRows = 16;
cudaError_t gemv_row(const Launch& l, Elem t, const GemvOutput* outputs, int count, const void* x,
                     int64_t rows, int64_t k, int variant = 0);

// Any shape, any alignment: one warp per output, fp32 accumulation. The fallback.
cudaError_t gemv_generic(const Launch& l, Elem t, const void* w, const float* bias, const void* x,
                         int64_t rows, int64_t n, int64_t k, void* out, Elem out_t);

// ---------------------------------------------------------------------------------------------
// Attention over the paged cache (attention_*.cu). q: [T, num_heads * head_dim];
// k, v: [T, num_kv_heads * head_dim]; out: [T, num_heads * head_dim]. Query row t of sequence s
// sits at cache position positions[t] and sees positions 0..positions[t] of s (causal).

// Stores every real row's k and v into the cache at its position (a quantized cache: rotated and
// quantized, the exact bits of the CPU reference).
cudaError_t kv_store(const Launch& l, Elem t, const void* k, const void* v, const BatchView& batch,
                     const KvLayerView& kv);

// In place: each head_dim-wide head of x [rows, cols] ← H·head (the normalized Walsh-Hadamard
// rotation of a quantized cache; H = H⁻¹). head_dim 64 or 128.
cudaError_t hadamard_heads(const Launch& l, Elem t, void* x, int64_t rows, int64_t cols,
                           int head_dim);

// Whether the tiled kernels handle the shape (head_dim 64 or 128; group <= 8 for decode).
bool attention_fast_supported(int head_dim, int num_heads, int num_kv_heads);

// The prefill attention's blocks: warps (4 or 8), each with warp_tiles MMA tiles of 16 (query,
// head) rows (1 or 2), so 16 · warps · warp_tiles rows a block. A row's bits do not depend on it.
// warpgroup_mma: over a 16-bit cache, where wgmma_supported(), Hopper's warpgroup MMA multiplies
// (kernels/attention_prefill_wgmma.cu): warps 4 or 8 (one or two warpgroups of 64 rows), tiles 1;
// its rows' bits do not depend on the warps either, but may differ from the mma.sync kernel's.
struct PrefillBlock {
  int warps = 4;
  int warp_tiles = 1;
  bool warpgroup_mma = false;
};

// The prefill attention grid's blocks along the rows (grid.x; it is that × kv heads × sequences):
// the longest sequence's (query, head) rows of a kv head, max_q_len · group, 16 · warps ·
// warp_tiles a block.
int64_t attention_prefill_row_blocks(PrefillBlock block, int max_q_len, int group);

// Flash-style tiled attention (prefill; any number of new tokens per sequence). Reads keys and
// values from the cache, so kv_store must run first. max_q_len: the longest sequence's new
// tokens (sets the grid). No N×N matrix is formed.
// Over a quantized cache q must arrive rotated (hadamard_heads) and out leaves rotated.
cudaError_t attention_prefill(const Launch& l, Elem t, const void* q, const BatchView& batch,
                              const KvLayerView& kv, int num_heads, float scale, int max_q_len,
                              void* out, PrefillBlock block = {});

// Scratch of the split-K decode attention; counters start at zero and are left at zero.
struct DecodeScratch {
  float* partials = nullptr;    // decode_partial_floats(...) floats
  int32_t* counters = nullptr;  // num_seqs * num_kv_heads ints
};
constexpr int kDecodeMaxSplits = 32;
size_t decode_partial_floats(int num_seqs, int num_heads, int head_dim);

// Split-K flash decoding: every sequence has exactly one new row (row seq_q_start[s]); the
// kernel also stores that row's k and v in the cache (no kv_store needed). The grid is fixed
// by (num_seqs, heads), so one launch serves any lengths (CUDA-graph friendly); each sequence's
// split count depends only on its own length.
// Over a quantized cache (attention_decode_quant.cu) the same holds (the new rows quantized as
// kv_store would); with keys_stored_this_step `rope` must be off. The kernel rotates q into the
// cache's space itself and un-rotates its output.
//
// With `rope` (inv_freq set), q and the new key arrive unrotated and the kernel applies RoPE as
// it reads them, bit-identical to rope() then attention_decode() (kernels/rope_math.cuh), so the
// step needs no rope pass: the rotated key goes into the cache, q's buffer is left unrotated.
struct DecodeRope {
  const float* inv_freq = nullptr;  // [rotary_dim / 2]; nullptr: q and k are already rotated
  float attention_factor = 1.0f;
  int rotary_dim = 0;
};
struct DecodeShape {
  // A batch of one sequence, or the rows of one sequence's speculative check: larger blocks for
  // the CUDA-core kernel (a row's last bits depend on this choice there).
  bool one_sequence = false;
  // The step's keys and values were stored by kv_store just before (a check batch, whose rows
  // read each other's): no cache position is read before the previous kernel has finished.
  bool keys_stored_this_step = false;
  // Blocks per multiprocessor the batch's blocks aim at: a sequence's splits go to fewer blocks,
  // each taking several in turn, once the batch has enough (sequence, kv head) pairs to fill the
  // GPU (0: every split a block of its own). The bits do not depend on it.
  int blocks_per_sm = 1;
  // 16-bit caches: the products on the tensor cores (attention_decode_mma.cu), where the heads
  // allow (64 or 128 dims, at most 8 query heads per kv head). A row's bits then depend on
  // nothing but its own sequence (one_sequence is ignored).
  bool tensor_cores = false;
};
// The rotation pairs dims i and i + rotary_dim/2 through lanes of 8 dims: rotary_dim must be
// 16 · 2^k and at most head_dim.
bool attention_decode_rope_supported(int head_dim, int rotary_dim);
cudaError_t attention_decode(const Launch& l, Elem t, const void* q, const void* k, const void* v,
                             const BatchView& batch, const KvLayerView& kv, int num_heads,
                             float scale, void* out, const DecodeScratch& scratch,
                             const DecodeShape& shape, const DecodeRope& rope = {});

// Any head_dim <= 256: one warp per (row, head), reading the cache (after kv_store).
cudaError_t attention_generic(const Launch& l, Elem t, const void* q, const BatchView& batch,
                              const KvLayerView& kv, int num_heads, float scale, void* out);

// ---------------------------------------------------------------------------------------------
// Sampling (sampling.cu). Logits rows are first copied to f32 scratch [rows, vocab].

struct PenaltyEntry {
  int32_t row = 0;
  int32_t token = 0;
  float repetition = 1.0f;  // 1: none; else logit / p if > 0, logit * p otherwise
  float subtract = 0.0f;    // then logit -= subtract (frequency and presence)
};

struct SampleRowParams {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float uniform = 0.0f;  // the draw, sampling_uniform(seed, draw_index)
  // A speculative proposal to check instead of drawing (-1: none), as verify_proposal does
  // (engine/sampling/speculative_sampling.h): kept when accept_uniform × q < p, else replaced by
  // a draw from max(0, p - q) scaled by residual_uniform. q is row draft_row of the draft
  // probabilities ([*, vocab], by token id), or certain (-1: 1 on the proposal, 0 elsewhere).
  int32_t proposed = -1;
  int32_t draft_row = -1;
  float accept_uniform = 0.0f;
  float residual_uniform = 0.0f;
};

// dst[r, v] = float(src[r, v]) with -0 turned into +0 (so sorting ties match the reference).
cudaError_t logits_to_f32(const Launch& l, Elem t, const void* src, int64_t rows, int64_t vocab,
                          float* dst);
cudaError_t apply_penalties(const Launch& l, float* logits, int64_t vocab,
                            const PenaltyEntry* entries, int64_t count);
// First maximum of each row.
cudaError_t argmax_rows(const Launch& l, const float* logits, int64_t rows, int64_t vocab,
                        int32_t* out);
// Sorts each row descending (stable: equal logits keep ascending ids). Scratch: query with
// sort_rows_scratch_bytes; ids_in/offsets are filled here.
size_t sort_rows_scratch_bytes(int64_t rows, int64_t vocab);
cudaError_t sort_rows_desc(const Launch& l, const float* keys_in, float* keys_out, int32_t* ids_in,
                           int32_t* ids_out, int32_t* offsets, int64_t rows, int64_t vocab,
                           void* scratch, size_t scratch_bytes);
// Picks one token per row from sorted logits: temperature, top-k, top-p, min-p and the draw, in
// double precision as the CPU sampler does; a row with a proposal checks it instead
// (SampleRowParams), reading q from `draft_probs` (null when no row has a draft_row).
cudaError_t sample_sorted(const Launch& l, const float* sorted_logits, const int32_t* sorted_ids,
                          int64_t rows, int64_t vocab, const SampleRowParams* params,
                          const float* draft_probs, int32_t* out);

}  // namespace hearth::kernels
