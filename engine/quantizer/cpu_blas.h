// The quantizer's dense CPU linear algebra through an optimized BLAS/LAPACK (OpenBLAS): the
// Hessian's XᵀX, the Cholesky factor and its triangular inverse, and GPTQ's blocked update.
// Builds without BLAS (cpu_blas_stub.cpp) keep the loops in hessian.cpp, cholesky.cpp and
// gptq_solver.cpp, which stay the reference the BLAS path is tested against.
//
// OpenBLAS runs single-threaded here, and the level-3 work is cut into pieces of a fixed size
// that the engine's ThreadPool shares out: OpenBLAS's own threads would spin beside the pool's
// on the same cores, and a fixed cut keeps every element's sum in one order whatever the thread
// count. (OpenBLAS's thread count is process-wide, so each call sets it.) The factorizations run
// whole on the calling thread.
#pragma once

#include <cstdint>

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

// Which code does the work: the loops (the reference; the only choice without BLAS) or BLAS.
enum class CpuMathPath { kLoops, kBlas };

// Whether this build has BLAS.
bool cpu_blas_available();
// kBlas where available, else kLoops.
CpuMathPath default_cpu_math_path();

// The calls below fail with Error(kUnsupported) in builds without BLAS. Matrices are row-major.

// sum[i][j] += Σ_t x[t][i]·x[t][j] for j ≤ i, the sum over t formed in float (SGEMM over panels
// of columns); the strict upper triangle of sum is not touched. x is [rows, k], sum [k, k].
void blas_add_gram_lower(const float* x, int64_t rows, int64_t k, double* sum, ThreadPool& pool);

// c[m, n] −= aᵀ·b with a [inner, m] (row stride lda), b [inner, n] (ldb), c (ldc); SGEMM over
// fixed blocks of c.
void blas_subtract_at_b(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m,
                        int64_t n, int64_t inner, float* c, int64_t ldc, ThreadPool& pool);

// The lower Cholesky factor L of the symmetric n×n matrix `a` (lower triangle read), in place
// in the lower triangle (LAPACK spotrf); the strict upper triangle is left as it was. False
// when `a` is not positive definite.
bool lapack_cholesky_lower(float* a, int64_t n);

// The inverse of the lower triangular n×n matrix `l`, in place in the lower triangle (LAPACK
// strtri); the strict upper triangle is not read and left as it was. False when l is singular.
bool lapack_invert_lower(float* l, int64_t n);

}  // namespace hearth::quantizer
