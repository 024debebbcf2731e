// GPTQ's inner steps on the GPU (see kernels/quantizer_kernels.h). One thread per column;
// results of the row quantization are bit-identical to the CPU reference for the same inputs
// (IEEE division, rintf, one fp16 rounding of an exact product).
#include <cuda_fp16.h>

#include "kernels/quantizer_kernels.h"

namespace hearth::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kPGrid = 96;

__global__ void absmax_kernel(const float* w, int64_t rows, int64_t n, float maxq, float* base) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= n) return;
  float m = 0.0f;
  for (int64_t r = 0; r < rows; ++r) m = fmaxf(m, fabsf(w[r * n + c]));
  base[c] = (m + 1e-12f) / (maxq / 2.0f);
}

__global__ void minmax_kernel(const float* w, int64_t rows, int64_t n, float* lo, float* hi) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= n) return;
  float a = 0.0f, b = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    a = fminf(a, w[r * n + c]);
    b = fmaxf(b, w[r * n + c]);
  }
  lo[c] = a;
  hi[c] = b;
}

__device__ inline float pow35(float x) {
  const float a = fabsf(x);
  return a * a * a * sqrtf(a);
}

// partial[p][block] = Σ over the block's columns and all rows.
__global__ void pgrid_partial_kernel(const float* w, int64_t rows, int64_t n, const float* scale,
                                     float qzero, float maxq, float* partial) {
  __shared__ float red[kThreads];
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const float lo = -qzero, hi = maxq - qzero;
  for (int i = 0; i <= kPGrid; ++i) {
    const float pi = static_cast<float>(i) / static_cast<float>(kPGrid);
    const float pm = 0.70f * (1.0f - pi) + 1.2f * pi;
    float acc = 0.0f;
    if (c < n) {
      const float sp = scale[c] * pm;
      for (int64_t r = 0; r < rows; ++r) {
        const float x = w[r * n + c];
        const float q = fminf(fmaxf(rintf(x / sp), lo), hi);
        acc += pow35(q * sp - x);
      }
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) partial[i * gridDim.x + blockIdx.x] = red[0];
    __syncthreads();
  }
}

__global__ void pgrid_sum_kernel(const float* partial, int blocks, float* err) {
  const int i = threadIdx.x;
  if (i > kPGrid) return;
  double s = 0;
  for (int b = 0; b < blocks; ++b) s += partial[i * blocks + b];
  err[i] = static_cast<float>(s);
}

__global__ void quantize_row_kernel(const float* w, int64_t n, const float* scale,
                                    const float* zero, float maxq, float d, uint8_t* codes,
                                    float* deq, float* err) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= n) return;
  const float s = scale[c];
  float v;
  if (!(s > 0.0f)) {
    codes[c] = static_cast<uint8_t>(zero[c]);
    v = 0.0f;
  } else {
    const float q = fminf(fmaxf(rintf(w[c] / s) + zero[c], 0.0f), maxq);
    codes[c] = static_cast<uint8_t>(q);
    v = __half2float(__float2half_rn((q - zero[c]) * s));
  }
  deq[c] = v;
  err[c] = (w[c] - v) / d;
}

__global__ void rank1_kernel(float* w, int64_t n, const float* u_row, int64_t i0, int64_t i1,
                             const float* err) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = i0 + blockIdx.y;
  if (c >= n || i >= i1) return;
  w[i * n + c] -= u_row[i] * err[c];
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

}  // namespace

cudaError_t quantizer_column_absmax(cudaStream_t s, const float* w, int64_t rows, int64_t n,
                                    float maxq, float* base) {
  absmax_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, rows, n, maxq, base);
  return cudaGetLastError();
}

cudaError_t quantizer_column_minmax(cudaStream_t s, const float* w, int64_t rows, int64_t n,
                                    float* lo, float* hi) {
  minmax_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, rows, n, lo, hi);
  return cudaGetLastError();
}

cudaError_t quantizer_pgrid_error(cudaStream_t s, const float* w, int64_t rows, int64_t n,
                                  const float* scale, float qzero, float maxq, float* partial,
                                  float* err) {
  const unsigned b = blocks_for(n);
  pgrid_partial_kernel<<<b, kThreads, 0, s>>>(w, rows, n, scale, qzero, maxq, partial);
  pgrid_sum_kernel<<<1, 128, 0, s>>>(partial, static_cast<int>(b), err);
  return cudaGetLastError();
}

cudaError_t quantizer_quantize_row(cudaStream_t s, const float* w_row, int64_t n,
                                   const float* scale, const float* zero, float maxq, float d,
                                   uint8_t* codes, float* deq, float* err_row) {
  quantize_row_kernel<<<blocks_for(n), kThreads, 0, s>>>(w_row, n, scale, zero, maxq, d, codes, deq,
                                                         err_row);
  return cudaGetLastError();
}

cudaError_t quantizer_rank1_update(cudaStream_t s, float* w, int64_t n, const float* u_row,
                                   int64_t i0, int64_t i1, const float* err_row) {
  if (i1 <= i0) return cudaSuccess;
  const dim3 grid(blocks_for(n), static_cast<unsigned>(i1 - i0));
  rank1_kernel<<<grid, kThreads, 0, s>>>(w, n, u_row, i0, i1, err_row);
  return cudaGetLastError();
}

}  // namespace hearth::kernels
