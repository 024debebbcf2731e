// out[R, N] = x[R, K] · Wᵀ + bias. Work is split over blocks of output features; each block of
// W rows is brought to fp32 once (converted or dequantized into a small per-thread buffer) and
// used for every input row, so quantized weights never exist whole in fp32. In the fast mode,
// prompt-sized inputs multiply each block by all their rows at once on BLAS (cpu_gemm.h), and
// fewer rows of quantized weights take the integer dot products (quant_dot.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/cpu_backend_impl.h"
#include "engine/backend/cpu/cpu_gemm.h"
#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/error.h"

namespace hearth::cpu {
namespace {

constexpr int64_t kBlock = 16;  // output features per work item
// The fast mode's BLAS path: from this many rows, and this many output features per SGEMM.
constexpr int64_t kGemmMinRows = 32;
constexpr int64_t kGemmBlock = 128;

// Rows [n0, n1) of a linear's weights in fp32: a pointer into them when they are F32, else
// converted or dequantized into `buffer`.
const float* weight_rows(const CpuLinearWeight& w, int64_t n0, int64_t n1,
                         std::vector<float>& buffer) {
  const int64_t K = w.in_features;
  if (!w.quantized && w.weight.dtype == DType::kF32) return w.weight.as<float>() + n0 * K;
  buffer.resize(static_cast<size_t>((n1 - n0) * K));
  if (w.quantized) {
    w.quantized->dequantize_rows(n0, n1, buffer.data());
  } else {
    const size_t esize = dtype_size(w.weight.dtype);
    convert_to_float(w.weight.dtype, static_cast<const std::byte*>(w.weight.data) + n0 * K * esize,
                     buffer.data(), static_cast<size_t>((n1 - n0) * K));
  }
  return buffer.data();
}

}  // namespace

void CpuBackend::linear(const BackendWeight& weight, DeviceTensor x, DeviceTensor out) {
  const auto& w = static_cast<const CpuLinearWeight&>(weight);
  const int64_t K = w.in_features;
  const int64_t N = w.out_features;
  HEARTH_CHECK(x.cols == K, "linear: input has " + std::to_string(x.cols) + " columns, weight " +
                                std::to_string(K));
  HEARTH_CHECK(out.cols == N && out.rows >= x.rows, "linear: output shape");
  const int64_t R = x.rows;
  const float* xs = static_cast<const float*>(x.data);
  float* ys = static_cast<float*>(out.data);
  if (linears_ == CpuLinears::kFast && R >= kGemmMinRows && cpu_gemm_available()) {
    return linear_gemm(w, xs, R, ys);
  }
  if (w.int8) return linear_fast(w, xs, R, ys);
  const int64_t blocks = (N + kBlock - 1) / kBlock;

  pool_.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> buffer;
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t n0 = blk * kBlock;
      const int64_t n1 = std::min(N, n0 + kBlock);
      const float* rows = weight_rows(w, n0, n1, buffer);
      for (int64_t r = 0; r < R; ++r) {
        const float* xr = xs + r * K;
        float* yr = ys + r * N;
        int64_t n = n0;
        for (; n + 4 <= n1; n += 4) {
          const float* w0 = rows + (n - n0) * K;
          dot4(xr, w0, w0 + K, w0 + 2 * K, w0 + 3 * K, K, yr + n);
        }
        for (; n < n1; ++n) yr[n] = dot(xr, rows + (n - n0) * K, K);
        if (!w.bias.empty()) {
          for (int64_t j = n0; j < n1; ++j) yr[j] += w.bias[j];
        }
      }
    }
  });
}

void CpuBackend::linear_gemm(const CpuLinearWeight& w, const float* x, int64_t rows, float* y) {
  const int64_t K = w.in_features, N = w.out_features;
  const int64_t blocks = (N + kGemmBlock - 1) / kGemmBlock;
  pool_.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> buffer;
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t n0 = blk * kGemmBlock, n1 = std::min(N, n0 + kGemmBlock);
      gemm_x_wt(x, rows, K, weight_rows(w, n0, n1, buffer), n1 - n0, y + n0, N);
      if (w.bias.empty()) continue;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = n0; j < n1; ++j) y[r * N + j] += w.bias[j];
      }
    }
  });
}

void CpuBackend::linear_fast(const CpuLinearWeight& w, const float* x, int64_t rows, float* y) {
  const Int8Weight& weight = *w.int8;
  const int64_t N = w.out_features;
  resize_quantized_rows(weight, rows, quantized_rows_);
  pool_.parallel_for(
      rows, 4, [&](int64_t r0, int64_t r1) { quantize_rows(weight, x, r0, r1, quantized_rows_); });
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  pool_.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    const int64_t n0 = b0 * kBlock, n1 = std::min(N, b1 * kBlock);
    std::vector<int16_t> scratch;
    quant_dot_outputs(weight, quantized_rows_, n0, n1, y, N, dot_kernel_, scratch);
    if (w.bias.empty()) return;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t n = n0; n < n1; ++n) y[r * N + n] += w.bias[n];
    }
  });
}

}  // namespace hearth::cpu
