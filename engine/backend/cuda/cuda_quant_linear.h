// The CUDA backend's EXL2 / GPTQ linear layers (implementation: cuda_quant_linear.cpp, which
// defines CudaBackend::upload_quantized_linear and CudaBackend::linear_quantized).
//
// Upload: the layer's tile layout (quant_tile_layout.h) is built on the host once and copied to
// the device as it is. Forward: up to CudaBackendOptions::quant_fused_max_rows rows of x run the
// fused dequantize-and-multiply kernel (kernels/quant_gemv.cu, one launch per group of linears;
// graph-safe: fixed scratch, no host sync); larger batches (prefill) dequantize slices of at most
// 64 MiB of fp16 weights in their stored row order (in steps outside CUDA graphs on a side
// stream, the next slice beside this one's product: dequant_slots.h), gather x into that order,
// and use cuBLAS, or, from CudaBackendOptions::quant_mma_min_rows to quant_mma_max_rows rows
// (97-128 by default; from 33 for a matrix the fused kernel refuses), multiply the packed tiles
// directly (kernels/quant_mma_gemm.cu). fp16 activations only: a bf16 backend keeps quantized
// layers dequantized (dense).
#pragma once

#include "engine/backend/backend.h"
#include "kernels/quant_kernels.h"

namespace hearth::cuda {

// Whether `w` is a quantized linear layer uploaded by CudaBackend::upload_quantized_linear.
bool is_quantized_linear(const BackendWeight& w);
// Its matrix on the device (`w` must be one).
const kernels::QuantMatrix& quantized_matrix(const BackendWeight& w);

// The fused kernel's split-K partial sums of one matrix stay within this (the memory plan counts
// three matrices' worth, cuda_workspace_bytes): beyond 32 rows, a matrix whose partials would
// outgrow it (a large vocabulary's head) takes the packed-tile product (or, past its rows,
// cuBLAS) instead.
constexpr size_t kQuantPartialBytesPerMatrix = size_t(64) << 20;

// Scratch of the large-batch path for up to `rows` rows of x and inputs of up to
// `max_in_features` features: the dequantized weight slice and x in stored row order.
size_t quant_large_batch_workspace_bytes(int64_t rows, int64_t max_in_features);

}  // namespace hearth::cuda
