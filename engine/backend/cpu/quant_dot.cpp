#include "engine/backend/cpu/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/backend/cpu/quant_dot_kernels.h"
#include "engine/core/error.h"

namespace hearth::cpu {
namespace {

bool detect(DotKernel kernel) {
#if defined(__x86_64__) && defined(HEARTH_QUANT_DOT_SIMD)
  __builtin_cpu_init();
  switch (kernel) {
    case DotKernel::kPortable:
      return true;
    case DotKernel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case DotKernel::kAvx512Vnni:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
    case DotKernel::kNeon:
      return false;
  }
  return false;
#elif defined(__aarch64__) && defined(HEARTH_QUANT_DOT_NEON)
  // Advanced SIMD is part of the AArch64 baseline: every such CPU runs it.
  return kernel == DotKernel::kPortable || kernel == DotKernel::kNeon;
#else
  return kernel == DotKernel::kPortable;
#endif
}

}  // namespace

const char* dot_kernel_name(DotKernel kernel) {
  switch (kernel) {
    case DotKernel::kAvx2:
      return "avx2";
    case DotKernel::kAvx512Vnni:
      return "avx512-vnni";
    case DotKernel::kNeon:
      return "neon";
    case DotKernel::kPortable:
      break;
  }
  return "portable";
}

bool cpu_runs(DotKernel kernel) {
  static const bool avx2 = detect(DotKernel::kAvx2);
  static const bool vnni = detect(DotKernel::kAvx512Vnni);
  static const bool neon = detect(DotKernel::kNeon);
  switch (kernel) {
    case DotKernel::kAvx2:
      return avx2;
    case DotKernel::kAvx512Vnni:
      return vnni;
    case DotKernel::kNeon:
      return neon;
    case DotKernel::kPortable:
      break;
  }
  return true;
}

DotKernel best_dot_kernel() {
  if (cpu_runs(DotKernel::kAvx512Vnni)) return DotKernel::kAvx512Vnni;
  if (cpu_runs(DotKernel::kAvx2)) return DotKernel::kAvx2;
  if (cpu_runs(DotKernel::kNeon)) return DotKernel::kNeon;
  return DotKernel::kPortable;
}

void resize_quantized_rows(const Int8Weight& weight, int64_t rows, QuantizedRows& out) {
  out.rows = rows;
  out.stored_rows = weight.stored_rows;
  out.span_rows = weight.span_rows;
  out.q.resize(static_cast<size_t>(rows * weight.stored_rows));
  out.d.resize(static_cast<size_t>(rows * weight.stored_rows / 32));
  out.sums.resize(static_cast<size_t>(rows * weight.spans()));
}

void quantize_rows(const Int8Weight& weight, const float* x, int64_t r0, int64_t r1,
                   QuantizedRows& out) {
  const int64_t K = weight.in_features;
  const int64_t S = weight.stored_rows;
  const int64_t blocks = S / 32;
  const int span = weight.span_rows;
  float block[32];
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * K;
    int16_t* q = out.q.data() + r * S;
    float* sums = out.sums.data() + r * (S / span);
    for (int64_t b = 0; b < blocks; ++b) {
      float amax = 0.0f;
      bool finite = true;
      // Rows in order (GGUF, in-order GPTQ) are read straight from x, except in the padded tail.
      if (weight.rows_in_order && 32 * b + 32 <= K) {
        std::copy(xr + 32 * b, xr + 32 * b + 32, block);
      } else {
        for (int j = 0; j < 32; ++j) {
          const int32_t k = weight.row_src[32 * b + j];
          block[j] = k >= 0 ? xr[k] : 0.0f;
        }
      }
      for (int j = 0; j < 32; ++j) {
        finite = finite && std::isfinite(block[j]);
        amax = std::max(amax, std::fabs(block[j]));
      }
      // A NaN or Inf activation must not vanish into a zero block: it poisons the outputs as
      // the exact path's would.
      const float d = finite ? amax / 32767.0f : std::numeric_limits<float>::quiet_NaN();
      const float inv = finite && amax > 0.0f ? 32767.0f / amax : 0.0f;
      out.d[r * blocks + b] = d;
      for (int half = 0; half < 32; half += span) {
        int32_t total = 0;
        for (int j = half; j < half + span; ++j) {
          const int v = static_cast<int>(std::nearbyint(block[j] * inv));
          q[32 * b + j] = static_cast<int16_t>(std::clamp(v, -32767, 32767));
          total += q[32 * b + j];
        }
        sums[(32 * b + half) / span] = d * static_cast<float>(total);
      }
    }
  }
}

void quant_dot_portable(const QuantDotArgs& a) {
  const int64_t blocks = a.stored_rows / 32;
  const int64_t spans = a.stored_rows / a.span_rows;
  for (int64_t n = a.n0; n < a.n1; ++n) {
    const uint8_t* codes = a.codes + n * a.code_stride;
    int16_t* v = a.scratch;
    for (int64_t b = 0; b < a.stored_rows; b += 32) {
      for (int j = 0; j < 32; ++j) {
        uint8_t u;
        if (a.nibbles) {
          const uint8_t byte = codes[b / 2 + j % 16];
          u = a.lut[j < 16 ? byte & 15 : byte >> 4];
        } else {
          u = codes[b + j];
        }
        v[b + j] = static_cast<int16_t>(static_cast<int>(u) - 128);
      }
    }
    const float* scale = a.scales + n * spans;
    const float* offset = a.offsets ? a.offsets + n * spans : nullptr;
    for (int64_t r = 0; r < a.rows; ++r) {
      const int16_t* q = a.xq + r * a.stored_rows;
      float total = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        float block = 0.0f;
        for (int half = 0; half < 32; half += a.span_rows) {
          int32_t isum = 0;
          for (int j = half; j < half + a.span_rows; ++j) isum += v[32 * b + j] * q[32 * b + j];
          block += scale[(32 * b + half) / a.span_rows] * static_cast<float>(isum);
        }
        total += block * a.xd[r * blocks + b];
      }
      if (offset) {
        const float* sums = a.xsums + r * spans;
        for (int64_t s = 0; s < spans; ++s) total += offset[s] * sums[s];
      }
      a.y[r * a.ldy + n] = total;
    }
  }
}

void quant_dot_outputs(const Int8Weight& weight, const QuantizedRows& x, int64_t n0, int64_t n1,
                       float* y, int64_t ldy, DotKernel kernel, std::vector<int16_t>& scratch) {
  HEARTH_CHECK(x.stored_rows == weight.stored_rows && x.span_rows == weight.span_rows,
               "fast quantized linear: activations quantized for another weight");
  HEARTH_CHECK(cpu_runs(kernel),
               std::string("fast quantized linear: this CPU lacks ") + dot_kernel_name(kernel));
  scratch.resize(static_cast<size_t>(weight.stored_rows));
  QuantDotArgs a;
  a.codes = weight.codes.data();
  a.code_stride = weight.code_bytes_per_output();
  a.nibbles = weight.nibbles;
  a.lut = weight.lut.data();
  a.scales = weight.scales.data();
  a.offsets = weight.offsets.empty() ? nullptr : weight.offsets.data();
  a.stored_rows = weight.stored_rows;
  a.span_rows = weight.span_rows;
  a.xq = x.q.data();
  a.xd = x.d.data();
  a.xsums = x.sums.data();
  a.rows = x.rows;
  a.n0 = n0;
  a.n1 = n1;
  a.y = y;
  a.ldy = ldy;
  a.scratch = scratch.data();
  switch (kernel) {
#if defined(__x86_64__) && defined(HEARTH_QUANT_DOT_SIMD)
    case DotKernel::kAvx512Vnni:
      return quant_dot_avx512_vnni(a);
    case DotKernel::kAvx2:
      return quant_dot_avx2(a);
#endif
#if defined(__aarch64__) && defined(HEARTH_QUANT_DOT_NEON)
    case DotKernel::kNeon:
      return quant_dot_neon(a);
#endif
    default:
      return quant_dot_portable(a);
  }
}

}  // namespace hearth::cpu
