// The CUDA backend: the Backend interface on one NVIDIA GPU (sm_80 and newer), and the device
// queries the engine needs before it loads anything. Only compiled when HEARTH_CUDA is on
// (HEARTH_WITH_CUDA is then defined for every engine user).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/cuda_status.h"

namespace hearth {

struct CudaBackendOptions {
  int device = 0;
  DType activation_dtype = DType::kF16;  // kF16 or kBF16: activations, weights and KV cache
  bool cuda_graphs = true;  // capture decode steps per batch-size bucket and replay them
  bool pdl = true;          // programmatic dependent launch between kernels (sm_90+ only)
  // A linear layer with one row runs on Hearth's row GEMV; with 2..gemv_max_rows rows on its
  // tensor-core GEMV (measured slower than cuBLAS on H200 for R >= 2, hence off); else cuBLAS.
  int64_t gemv_max_rows = 1;
  // Dense linears of 1..dense_invariant_max_rows rows all run the tensor-core GEMV (where it takes
  // the shape), whose split of K depends on the matrix alone, so a row gets the same bits at any
  // of those row counts: a speculative check batch then gives the logits of one-row decode steps
  // for fp16 weights, as the quantized kernels do up to quant_fused_max_rows. 0: one row runs the
  // row GEMV (faster) and the rows' bits depend on the batch. Off: one-row steps of the fp16 8B
  // shape are 13-17 % slower on it (H200, cuda_bench's batch-1 variants).
  int64_t dense_invariant_max_rows = 0;
  // Dense linears of a speculative check batch of one sequence (up to kernels::kGemvRowsMaxRows
  // rows) run the row GEMV's several-row form, which gives each row the bits of a one-row decode
  // step, so greedy speculation on fp16 weights keeps the tokens of batch-1 decoding, as the
  // quantized kernels do by design. Its cost grows with the rows (docs/PERFORMANCE.md). Checks of
  // several sequences stay on cuBLAS: their plain decode steps run cuBLAS too, several rows at a
  // time. Off: cuBLAS for every check, whose last bits may differ.
  bool exact_check_rows = true;
  // LoRA of up to this many rows runs on Hearth's shrink/expand kernels (at most
  // kernels::kLoraKernelMaxRows), more rows on cuBLAS. Measured on an H200 (8B shape, rank 16):
  // equal at 4 rows, cuBLAS ahead from 8 (docs/PERFORMANCE.md, "LoRA").
  int64_t lora_kernel_max_rows = 4;
  // LoRA of quantized linears of up to this many rows (at most 32; 0: never) is folded into
  // their fused kernel (kernels::QuantGemmLora: no launches of its own) when the adapters in use
  // add at most kernels::kQuantGemmLoraMaxCols columns to each. Blocks of their own project each
  // K slice onto A once; the outputs get Bᵀ·t as one more slice (lora_delta_max_rows) or where
  // the slices are added. On an H200 (8B shape, EXL2 4.0, rank 16 on all seven projections) one
  // adapter costs +4.7 % at 1 row and +3-7 % at 2-32, four +19.1 % at 32, against +38 % (1 row,
  // the earlier fold) and +23-58 % on the separate paths (docs/PERFORMANCE.md, "LoRA").
  int64_t lora_fold_max_rows = 32;
  // Up to this many rows a folded LoRA's Bᵀ·t is made by delta blocks beside the main blocks
  // (kernels::QuantGemmScratch; the same bits); from more rows, by the completion that adds the
  // slices. 4: on an H200 (as above) one adapter at batch 1 +4.7 % against +11.2 % with 0, four
  // adapters at 4 rows +12.8 % against +15.8 %; with delta blocks at 8-32 rows, where one block
  // per column group makes every row's Bᵀ·t, four adapters at 32 rows cost +62.9 %.
  int64_t lora_delta_max_rows = 4;
  // Prefill attention blocks (kernels::PrefillBlock): 4 or 8 warps of 1 or 2 tiles of 16 rows
  // (the same bits in all). Tiles 0: two where their grid has more blocks than half the
  // multiprocessors, else one (twice the blocks, of half the rows, then finish sooner). On an
  // H200 (Llama-3-8B shape) 8 × 2 does 321 TFLOP/s at 8,192 tokens against 220 for 8 × 1, and
  // 255 against 185 at 2,048; at 512 tokens (64 blocks of 8 × 2) 8 × 1 is ahead
  // (docs/PERFORMANCE.md).
  int attention_warps = 8;
  int attention_warp_tiles = 0;
  // Over a 16-bit cache on Hopper (kernels::wgmma_supported), prefill attention on the warpgroup
  // MMA (PrefillBlock::warpgroup_mma): blocks of attention_warps (4 or 8: one or two warpgroups
  // of 64 rows); with attention_warp_tiles 0, two warpgroups where their grid has more blocks
  // than half the multiprocessors, else one. Dropped where the GPU or the build lacks sm_90a.
  // Off: exact, but on an H200 (Llama-3-8B shape) its two warpgroups do 189 / 231 TFLOP/s at
  // 2,048 / 8,192 tokens against 254 / 319 for the mma.sync kernel's 8 × 2 (docs/PERFORMANCE.md).
  bool attention_warpgroup_mma = false;
  int row_gemv_variant = 0;  // batch-1 GEMV: 0 high occupancy, 1 deeper loads + L2 prefetch
  // In a decode step, RoPE is applied by the attention kernel as it reads q and the new key,
  // instead of by a pass of its own (same bits; off only to compare).
  bool fuse_decode_rope = true;
  // Between quantized linears of up to this many rows (decode; at most 32, 0: never), RMSNorm is
  // folded into them: the linear before adds into the residual and leaves each row's inverse
  // RMS, the ones after normalize x as they read it (kernels::QuantInputNorm). 2: on an H100
  // (Llama-3-8B EXL2 4.0) the fold gains ~2 % at 1 and 2 rows and loses 3-5 % at 8 to 32,
  // where staging normalized rows costs every block more than the separate pass saves
  // (docs/PERFORMANCE.md).
  int64_t fold_norm_max_rows = 2;
  // From this many rows on (at most 33: never), the K slices of a fused quantized linear are
  // added by a kernel of their own over every multiprocessor instead of by one block per column
  // group (kernels::QuantGemmScratch; the same bits). 2: on an H200 (Llama-3-8B EXL2 4.0) +2.5 %
  // at 2 rows, +9 % at 4, +12 % at 8, +28 % at 32 (docs/PERFORMANCE.md).
  int64_t slice_sum_kernel_min_rows = 2;
  // From this many rows on (at most 33: never), a fused quantized linear's x is laid out in each
  // matrix's staging order by a kernel of its own, which the blocks then copy with 16-byte
  // asynchronous copies instead of gathering it element by element (kernels::QuantGemmScratch;
  // the same bits). Not with a folded norm (fold_norm_max_rows). On an H200 (Llama-3-8B EXL2
  // 4.0): +2 to +4 % at 3 to 4 rows, +8 % at 8, +22 % at 16, +39 % at 32; even at 2.
  int64_t staged_x_min_rows = 3;
  // Quantized linears of up to this many rows (at most kernels::kQuantGemmMaxLaunchRows) run the
  // fused kernel, in groups of 32 rows beyond 32, and a row's bits do not depend on the batch;
  // more rows go to the packed-tile product below, or dequantize the weights for cuBLAS.
  // On an H200 (Llama-3-8B EXL2 4.0, tokens/s, fused against cuBLAS): 33 rows 3389 / 2146, 48
  // 3829 / 2731, 64 4879 / 3587, 96 5057 / 4615, 128 5188 / 5469.
  int64_t quant_fused_max_rows = 96;
  // Quantized linears of quant_mma_min_rows to quant_mma_max_rows rows, when the fused kernel
  // does not take them, run kernels::quant_mma_gemm (the weights decoded in registers into the
  // tensor-core operands); more rows dequantize the weights for cuBLAS, which is faster once the
  // product's arithmetic outweighs writing and reading the fp16 copy. min 0: never. On an H200
  // (Llama-3-8B EXL2 4.0, decode ms per step, this product with wide blocks against the fused
  // kernel up to 96 rows and cuBLAS above): 48 rows 10.59 / 11.03, 64 11.02 / 11.77, 96 15.60 /
  // 16.56, 128 17.55 / 19.64, 160 23.81 / 21.91, 256 32.01 / 26.79; prompts of 512 tokens
  // 13.1k / 21.1k tokens/s (docs/PERFORMANCE.md). Up to 96 rows the fused kernel's batch
  // invariance is worth more than the product's few per cent; past 128 rows a third 64-row block
  // costs as much as a full one. A matrix the fused kernel refuses for its partials' size (the
  // head of a large vocabulary past 32 rows) takes the product from 33 rows, not cuBLAS.
  int64_t quant_mma_min_rows = 97;
  int64_t quant_mma_max_rows = 128;
  // Its blocks: 256 outputs × 64 rows, or 128 × 128 (kernels::QuantMmaBlock; the same bits).
  bool quant_mma_wide_blocks = true;
  // The wide blocks on Hopper's warpgroup MMA (kernels::QuantMmaBlock::kWgmma) where the GPU and
  // the build have it (else the option is dropped when the backend starts). Off: as exact as the
  // mma.sync blocks but 2-8 % slower at 33-256 rows and in prefill (H200, docs/PERFORMANCE.md).
  bool quant_mma_wgmma = false;
  // Its K split over several blocks when its blocks would not fill the GPU (few rows); off: every
  // row's result is the same whatever the batch (kernels::quant_mma_k_splits).
  bool quant_mma_split_k = true;
  // Decode attention over a batch: the blocks per multiprocessor its (sequence, kv head) pairs'
  // splits aim at (kernels::DecodeShape::blocks_per_sm; 0: every split a block; the same bits).
  // 1 measured best against 0, 2 and 4 at batches 4 to 32 (docs/PERFORMANCE.md).
  int decode_attention_blocks_per_sm = 1;
  // Decode attention over a 16-bit cache on the tensor cores (kernels::DecodeShape::tensor_cores);
  // off: the CUDA-core kernel (to compare).
  bool decode_attention_tensor_cores = true;
  // A batch of short slices that want every logit (speculative checks: a sequence's last token
  // and its proposals) runs as a decode step with one row per token, each row attending up to
  // its own position: the decode kernels and a CUDA graph instead of the prefill path, and the
  // same bits for a row as when that token is decoded alone. Slices of up to this many tokens
  // (0: off; at most kMaxCheckRows in all).
  int64_t check_slice_max_tokens = 16;
  // Bytes of fp16 weights written per cuBLAS call where many rows dequantize a quantized matrix
  // (at most 64 MiB, the plan's share; 0: 64 MiB).
  size_t dequant_slice_bytes = 0;
  // Those slices written on a stream of their own into two buffers in turn, so that the next
  // slice's dequantization runs beside cuBLAS's product of this one (DequantSlots; in steps
  // without a graph key; up to 128 MiB more, which the plan counts). Off: one buffer,
  // dequantization and product one after the other. On an H200 (Llama-3-8B EXL2 4.0) prompts of 512
  // tokens run 4 % faster, 2,048 about 1 %, 1,024 and 8,192 the same (docs/PERFORMANCE.md).
  bool dequant_overlap = true;
  size_t cublas_workspace_bytes = size_t(32) << 20;
  // Tensor parallelism's all-reduces of decode steps (up to 1 MiB), where the GPUs have peer
  // access: by Hearth's peer kernel, fused with the add and RMSNorm that follow (kFused), by that
  // kernel alone (kPeer), or by NCCL as larger messages always are (kNccl). kFused unless
  // measuring the choices.
  enum class AllReduce { kFused, kPeer, kNccl };
  AllReduce tensor_parallel_all_reduce = AllReduce::kFused;
};

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  double memory_bandwidth_gbs = 0;  // from the memory clock and bus width (nominal)
};

// The driver, its devices and cuBLAS, for cuda_status.h to judge. Never throws.
CudaProbe probe_cuda();
// Devices CUDA can use; 0 without a driver or a GPU. Never throws.
int cuda_device_count();
// Throws Error(kInvalidArgument) for a bad index, Error(kBackend) when the driver fails.
CudaDeviceInfo cuda_device_info(int device);
// Free memory on `device` now, in bytes (for the engine's load plan).
size_t cuda_free_memory(int device);

// What the backend allocates besides weights, KV cache and activations, for the load plan:
// cuBLAS workspace, split-K scratch of the GEMV and of decode attention, batch metadata and the
// sampler's scratch (sized for sorting `max_logit_rows` rows of `vocab` logits).
size_t cuda_workspace_bytes(int64_t max_batch_tokens, int64_t max_logit_rows, int64_t vocab,
                            int64_t num_heads, int64_t head_dim, int64_t max_out_features);

// Throws Error(kBackend) / Error(kInvalidArgument) when the device cannot be used.
std::unique_ptr<Backend> create_cuda_backend(const CudaBackendOptions& options = {});

// How the CUDA backend pads decode batches (PreparedBatch::tokens and logit_rows): sequence
// counts are rounded up to 1, 2, 4, 8, then multiples of 8 up to 256, but never beyond the
// fewest rows of any buffer from alloc_activation; larger decode batches and all other batches
// are not padded.
int64_t cuda_decode_bucket(int64_t sequences);
// Most rows of a check batch (CudaBackendOptions::check_slice_max_tokens).
inline constexpr int64_t kMaxCheckRows = 256;

}  // namespace hearth
