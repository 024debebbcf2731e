#include "engine/quantizer/exl2_grid_search.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/quantizer/group_quantizer.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HEARTH_GRID_X86 1
#endif

namespace hearth::quantizer {
namespace {

constexpr int kLanes = 8;
constexpr int kGridPadded = 104;  // exl2_grid_size() rounded up to whole vectors of kLanes

// The multipliers, padded with copies of the last one (their lanes are computed and dropped).
struct Multipliers {
  std::array<float, kGridPadded> p;
  Multipliers() {
    const int size = exl2_grid_size();
    for (int i = 0; i < kGridPadded; ++i) p[i] = exl2_grid_multiplier(std::min(i, size - 1));
  }
};
const Multipliers& multipliers() {
  static const Multipliers m;
  return m;
}

// |x|^3.5 without pow: x³·√x, as a·a·a·√a in this order (the vector path repeats it exactly).
inline float pow35(float x) {
  const float a = std::fabs(x);
  return a * a * a * std::sqrt(a);
}

// out[i] = Σ_c (in float, in column order) of multiplier i's term for one row.
void row_errors_scalar(const float* w, int64_t n, const float* s, float lo, float hi, float* out) {
  const int size = exl2_grid_size();
  for (int i = 0; i < size; ++i) {
    const float pm = multipliers().p[i];
    float acc = 0;
    for (int64_t c = 0; c < n; ++c) {
      const float sp = s[c] * pm;
      const float q = std::clamp(std::nearbyint(w[c] / sp), lo, hi);
      acc += pow35(q * sp - w[c]);
    }
    out[i] = acc;
  }
}

#ifdef HEARTH_GRID_X86
// AVX only (no FMA, so nothing is contracted): the same divisions, roundings (to nearest even,
// as nearbyint in the default mode), clamps, products and square roots as the scalar loop.
__attribute__((target("avx"))) void row_errors_avx(const float* w, int64_t n, const float* s,
                                                   float lo, float hi, float* out) {
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int g = 0; g < kGridPadded; g += kLanes) {
    const __m256 pm = _mm256_loadu_ps(multipliers().p.data() + g);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t c = 0; c < n; ++c) {
      const __m256 wc = _mm256_set1_ps(w[c]);
      const __m256 sp = _mm256_mul_ps(_mm256_set1_ps(s[c]), pm);
      __m256 q =
          _mm256_round_ps(_mm256_div_ps(wc, sp), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm256_min_ps(_mm256_max_ps(q, vlo), vhi);
      const __m256 a = _mm256_and_ps(_mm256_sub_ps(_mm256_mul_ps(q, sp), wc), abs_mask);
      const __m256 a3 = _mm256_mul_ps(_mm256_mul_ps(a, a), a);
      acc = _mm256_add_ps(acc, _mm256_mul_ps(a3, _mm256_sqrt_ps(a)));
    }
    _mm256_storeu_ps(out + g, acc);
  }
}

bool cpu_has_avx() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx");
}
#endif

using RowErrors = void (*)(const float*, int64_t, const float*, float, float, float*);

RowErrors vector_row_errors() {
#ifdef HEARTH_GRID_X86
  static const bool avx = cpu_has_avx();
  if (avx) return row_errors_avx;
#endif
  return row_errors_scalar;
}

// Each row's sums (in parallel, rows independent), then the rows added in order in double.
std::vector<double> grid_errors(RowErrors row_errors, const float* w, int64_t rows, int64_t n,
                                int64_t stride, const float* scale, int bits, ThreadPool* pool) {
  const float maxq = static_cast<float>((1 << bits) - 1);
  const float qzero = static_cast<float>(1 << (bits - 1));
  const float lo = -qzero, hi = maxq - qzero;
  std::vector<float> per_row(static_cast<size_t>(std::max<int64_t>(rows, 0) * kGridPadded));
  auto run = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      row_errors(w + r * stride, n, scale, lo, hi, per_row.data() + r * kGridPadded);
    }
  };
  if (pool) {
    pool->parallel_for(rows, 1, run);
  } else {
    run(0, rows);
  }
  std::vector<double> errors(static_cast<size_t>(exl2_grid_size()), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < errors.size(); ++i) errors[i] += per_row[r * kGridPadded + i];
  }
  return errors;
}

}  // namespace

std::vector<double> exl2_grid_errors(const float* w, int64_t rows, int64_t n, int64_t stride,
                                     const float* scale, int bits, ThreadPool* pool) {
  return grid_errors(vector_row_errors(), w, rows, n, stride, scale, bits, pool);
}

std::vector<double> exl2_grid_errors_scalar(const float* w, int64_t rows, int64_t n, int64_t stride,
                                            const float* scale, int bits, ThreadPool* pool) {
  return grid_errors(row_errors_scalar, w, rows, n, stride, scale, bits, pool);
}

}  // namespace hearth::quantizer
