// Device kernels of the quantizer's GPTQ pass (kernels/quantizer_gptq.cu), launched by
// engine/quantizer/cuda_quant_math.cpp. Every matrix is row-major fp32 on the device;
// W is the permuted weight [K, N] (row = input feature), U the upper factor [K, K].
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace hearth::kernels {

// EXL2 group parameters on the device, as engine/quantizer/group_quantizer.cpp computes
// them on the host (bit for bit): candidates from the column maxima `base` (qscale 1..16,
// scale before the multiplier, smax) ...
cudaError_t quantizer_exl2_candidates(cudaStream_t s, const float* base, int64_t n, uint8_t* qscale,
                                      float* scale, float* smax);
// ... and, from the 97 grid errors, the chosen multiplier's scale and zero per column (scale
// also into scale_copy) and the group's q_scale_max.
cudaError_t quantizer_exl2_params(cudaStream_t s, const float* err, const float* smax,
                                  const uint8_t* qscale, int64_t n, int bits, float* scale,
                                  float* zero, float* scale_copy, float* qscale_max);
// h = float(sum · scale), full symmetric, from sum's lower triangle ([k, k] row-major).
cudaError_t quantizer_finish_hessian(cudaStream_t s, const double* sum, int64_t k, double scale,
                                     float* h);
// out[i] = in[count - 1 - i] (J·A·J of a square matrix is its flat reversal).
cudaError_t quantizer_reverse(cudaStream_t s, const float* in, int64_t count, float* out);
// a = I (n × n).
cudaError_t quantizer_identity(cudaStream_t s, float* a, int64_t n);
// u = J·X·J restricted to its upper triangle (zeros below), u row-major, X = x column-major;
// *bad = 1 (else 0) when an entry of that triangle is not finite.
cudaError_t quantizer_flip_upper(cudaStream_t s, const float* x, int64_t n, float* u, int* bad);
// wp[s][c] = w[c][perm[s]] for c < n, 0 for n <= c < n_pad (inv_perm[perm[s]] = s): the weight
// [N, K] as GPTQ's working matrix [K, n_pad], rows in act-order.
cudaError_t quantizer_permute_transpose(cudaStream_t s, const float* w, int64_t n, int64_t k,
                                        const int32_t* inv_perm, int64_t n_pad, float* wp);
// r[c][perm[s]] = d[s][c] for c < n: a [K, n_pad] result back as [N, K] in input order.
cudaError_t quantizer_unpermute(cudaStream_t s, const float* d, int64_t k, int64_t n, int64_t n_pad,
                                const int32_t* inv_perm, float* r);
// sum[i][j] += batch[i][j] for j <= i (row-major [k, k]; the upper part is left alone).
cudaError_t quantizer_accumulate_lower(cudaStream_t s, const float* batch, int64_t k, double* sum);
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
// GPTQ inside one block of rows [b0, b1) of W [k, n] (one group's part): each row quantized
// (codes, deq = fp16((q − zero)·scale)), its error e = (w − deq) / U[r][r] written to
// err[r − b0], and fed to the block's later rows (w[i] −= U[r][i]·e); err2[c] += Σ e² (double).
cudaError_t quantizer_quantize_block(cudaStream_t s, float* w, int64_t n, int64_t k, const float* u,
                                     int64_t b0, int64_t b1, const float* scale, const float* zero,
                                     float maxq, uint8_t* codes, float* deq, float* err,
                                     double* err2);

}  // namespace hearth::kernels
