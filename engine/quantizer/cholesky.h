// Dense symmetric factorizations on the CPU (the reference the GPU path is tested against):
// the upper Cholesky factor of a matrix's inverse, which GPTQ's error feedback needs.
// Row-major float matrices; work split over a thread pool in a way that does not depend on the
// number of threads (each element is computed by one fixed sequence of operations). With BLAS
// the same factor comes from LAPACK (cpu_blas.h); the loops here are the fallback.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/quantizer/cpu_blas.h"

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

// Lower Cholesky factor of the symmetric n×n matrix `a` (only its lower triangle is read), in
// place: on success the lower triangle holds L with a = L·Lᵀ and the strict upper triangle is
// zeroed. Returns false (leaving `a` undefined) when a pivot is not positive or not finite.
bool cholesky_lower_inplace(std::vector<float>& a, int64_t n, ThreadPool& pool);

// Inverse of the lower triangular n×n matrix `l` (lower triangular as well).
std::vector<float> invert_lower_triangular(const std::vector<float>& l, int64_t n,
                                           ThreadPool& pool);

// U, upper triangular with a positive diagonal, such that h⁻¹ = Uᵀ·U (the factor
// torch.linalg.cholesky(cholesky_inverse(cholesky(h)), upper=True) gives), computed with one
// factorization: U = J·inv(chol(J·h·J))·J with J the reversal permutation. Returns false when h
// is not (numerically) positive definite. `path`: the loops above or LAPACK (spotrf, strtri).
bool inverse_upper_cholesky(const std::vector<float>& h, int64_t n, ThreadPool& pool,
                            std::vector<float>& u, CpuMathPath path = default_cpu_math_path());

}  // namespace hearth::quantizer
