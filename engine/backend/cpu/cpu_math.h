// Inner loops of the CPU backend, with an AVX2+FMA path chosen at run time where the CPU has it.
#pragma once

#include <cstdint>

namespace hearth::cpu {

// Σ a[i]·b[i] over n elements, fp32 accumulation.
float dot(const float* a, const float* b, int64_t n);
// out[j] = Σ x[i]·w[j][i] for the 4 rows w0..w3 (shares each load of x).
void dot4(const float* x, const float* w0, const float* w1, const float* w2, const float* w3,
          int64_t n, float out[4]);
// y[i] += a · x[i]
void axpy(float a, const float* x, float* y, int64_t n);
// Whether the AVX2 path is in use (for reports).
bool using_avx2();

}  // namespace hearth::cpu
