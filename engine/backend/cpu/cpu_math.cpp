#include "engine/backend/cpu/cpu_math.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hearth::cpu {
namespace {

float dot_generic(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void dot4_generic(const float* x, const float* w0, const float* w1, const float* w2,
                  const float* w3, int64_t n, float out[4]) {
  out[0] = dot_generic(x, w0, n);
  out[1] = dot_generic(x, w1, n);
  out[2] = dot_generic(x, w2, n);
  out[3] = dot_generic(x, w3, n);
}

void axpy_generic(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) inline float hsum256(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  float s = hsum256(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

__attribute__((target("avx2,fma"))) void dot4_avx2(const float* x, const float* w0, const float* w1,
                                                   const float* w2, const float* w3, int64_t n,
                                                   float out[4]) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w0 + i), a0);
    a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w1 + i), a1);
    a2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w2 + i), a2);
    a3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w3 + i), a3);
  }
  out[0] = hsum256(a0);
  out[1] = hsum256(a1);
  out[2] = hsum256(a2);
  out[3] = hsum256(a3);
  for (; i < n; ++i) {
    out[0] += x[i] * w0[i];
    out[1] += x[i] * w1[i];
    out[2] += x[i] * w2[i];
    out[3] += x[i] * w3[i];
  }
}

__attribute__((target("avx2,fma"))) void axpy_avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

bool detect_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
bool detect_avx2() {
  return false;
}
#endif

const bool kAvx2 = detect_avx2();

}  // namespace

bool using_avx2() {
  return kAvx2;
}

float dot(const float* a, const float* b, int64_t n) {
#if defined(__x86_64__)
  if (kAvx2) return dot_avx2(a, b, n);
#endif
  return dot_generic(a, b, n);
}

void dot4(const float* x, const float* w0, const float* w1, const float* w2, const float* w3,
          int64_t n, float out[4]) {
#if defined(__x86_64__)
  if (kAvx2) return dot4_avx2(x, w0, w1, w2, w3, n, out);
#endif
  dot4_generic(x, w0, w1, w2, w3, n, out);
}

void axpy(float a, const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (kAvx2) return axpy_avx2(a, x, y, n);
#endif
  axpy_generic(a, x, y, n);
}

}  // namespace hearth::cpu
