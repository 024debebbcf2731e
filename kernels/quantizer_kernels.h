// Device kernels of the quantizer's GPTQ pass (kernels/quantizer_gptq.cu), launched by
// engine/quant/quantizer/cuda_quant_math.cpp. Every matrix is row-major fp32 on the device;
// W is the permuted weight [K, N] (row = input feature), U the upper factor [K, K].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace hearth::kernels {

// base[n] = (max over rows of |w[r][n]| + 1e-12) / (maxq / 2), rows [0, rows) of w (stride n).
cudaError_t quantizer_column_absmax(cudaStream_t s, const float* w, int64_t rows, int64_t n,
                                    float maxq, float* base);
// lo[n], hi[n] = min(0, min_r w), max(0, max_r w).
cudaError_t quantizer_column_minmax(cudaStream_t s, const float* w, int64_t rows, int64_t n,
                                    float* lo, float* hi);
// err[p] = Σ_r Σ_n |clamp(rint(w/(s[n]·p_i)), lo, hi)·s[n]·p_i − w|^3.5 for the 97 multipliers
// p_i = 0.70·(1 − i/96) + 1.2·(i/96); partial sums per column block, then summed in a fixed
// order (deterministic for a given shape). `err` has 97 floats.
cudaError_t quantizer_pgrid_error(cudaStream_t s, const float* w, int64_t rows, int64_t n,
                                  const float* scale, float qzero, float maxq, float* partial,
                                  float* err);
// Quantizes row c: codes, deq = fp16((q − zero)·scale), err_row = (w − deq) / d.
cudaError_t quantizer_quantize_row(cudaStream_t s, const float* w_row, int64_t n,
                                   const float* scale, const float* zero, float maxq, float d,
                                   uint8_t* codes, float* deq, float* err_row);
// w[i][:] −= u_row[i] · err_row[:] for i in [i0, i1) (the block's rows after c).
cudaError_t quantizer_rank1_update(cudaStream_t s, float* w, int64_t n, const float* u_row,
                                   int64_t i0, int64_t i1, const float* err_row);

}  // namespace hearth::kernels
