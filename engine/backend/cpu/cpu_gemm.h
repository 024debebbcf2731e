// Prompt-sized linears and prompt attention of the CPU backend's fast mode (CpuLinears::kFast)
// on an optimized BLAS
// (OpenBLAS's SGEMM): many rows share each weight, so the weights are brought to fp32 once per
// block of outputs (their exact values) and multiplied by every row at the rate of a tuned
// matrix kernel, where the row-by-row dot products re-read each block per row; a prompt's
// queries meet its keys and values the same way. Builds without BLAS (cpu_gemm_stub.cpp) keep
// the row-by-row paths for every size.
//
// OpenBLAS runs single-threaded: the backend's ThreadPool shares out blocks of outputs, and
// OpenBLAS's own threads would spin beside the pool's on the same cores.
#pragma once

#include <cstdint>

namespace hearth::cpu {

// Whether this build has BLAS.
bool cpu_gemm_available();

// y[r][j] = Σ_i x[r][i]·w[j][i] for r < rows and j < n: x [rows, k], w [n, k] (both row-major,
// dense), y with row stride ldy. On the calling thread. Error(kUnsupported) without BLAS.
void gemm_x_wt(const float* x, int64_t rows, int64_t k, const float* w, int64_t n, float* y,
               int64_t ldy);
// y[r][j] = Σ_i x[r][i]·w[i][j]: x [rows, k], w [k, n] (both row-major, dense), y with row
// stride ldy. On the calling thread. Error(kUnsupported) without BLAS.
void gemm_x_w(const float* x, int64_t rows, int64_t k, const float* w, int64_t n, float* y,
              int64_t ldy);

}  // namespace hearth::cpu
