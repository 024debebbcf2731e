// LoRA for a few rows: the shrink projects each row onto every adapter's A at once (one block
// per column of the stacked A, all rows together, so A is read once), and the expand adds
// t·Bᵀ into each target (one thread per output feature, reading Bᵀ coalesced). Many rows go
// through cuBLAS instead (engine/backend/cuda/cuda_lora.cpp); lora_scale_rows serves that path.
#include "kernels/common.cuh"

namespace hearth::kernels {
namespace {

constexpr int kShrinkThreads = 256;
constexpr int kExpandThreads = 128;
constexpr int kExpandRowChunk = 8;

template <class T>
__global__ void lora_shrink_kernel(const T* x, int64_t rows, int64_t k, const T* a, int cols,
                                   const int32_t* slot_of_col, const float* row_weights, int slots,
                                   T* out) {
  pdl_launch_dependents();
  pdl_wait();
  const int c = blockIdx.x;
  const T* a_row = a + static_cast<int64_t>(c) * k;
  float acc[kLoraKernelMaxRows];
#pragma unroll
  for (int r = 0; r < kLoraKernelMaxRows; ++r) acc[r] = 0.0f;
  for (int64_t i = threadIdx.x; i < k; i += kShrinkThreads) {
    const float av = to_f(a_row[i]);
#pragma unroll
    for (int r = 0; r < kLoraKernelMaxRows; ++r) {
      if (r < rows) acc[r] += av * to_f(x[r * k + i]);
    }
  }
  __shared__ float partial[kShrinkThreads / 32][kLoraKernelMaxRows];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kLoraKernelMaxRows; ++r) {
    float v = acc[r];
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) partial[warp][r] = v;
  }
  __syncthreads();
  if (threadIdx.x < rows) {
    const int r = threadIdx.x;
    float sum = 0.0f;
    for (int w = 0; w < kShrinkThreads / 32; ++w) sum += partial[w][r];
    const float weight = row_weights[r * slots + slot_of_col[c]];
    out[r * cols + c] = from_f<T>(weight * sum);
  }
}

template <class T>
__global__ void lora_expand_kernel(const T* t, int64_t rows, int total_cols,
                                   LoraExpandTargets targets) {
  pdl_launch_dependents();
  pdl_wait();
  int64_t n = blockIdx.x * int64_t(kExpandThreads) + threadIdx.x;
  int which = 0;
  while (which < targets.count && n >= targets.t[which].n) n -= targets.t[which++].n;
  if (which >= targets.count) return;
  const LoraExpandTarget& g = targets.t[which];
  const T* bt = static_cast<const T*>(g.bt);
  T* out = static_cast<T*>(g.out);
  for (int64_t r0 = 0; r0 < rows; r0 += kExpandRowChunk) {
    float acc[kExpandRowChunk];
#pragma unroll
    for (int r = 0; r < kExpandRowChunk; ++r) acc[r] = 0.0f;
    for (int c = 0; c < g.cols; ++c) {
      const float b = to_f(bt[static_cast<int64_t>(c) * g.n + n]);
#pragma unroll
      for (int r = 0; r < kExpandRowChunk; ++r) {
        if (r0 + r < rows) acc[r] += b * to_f(t[(r0 + r) * total_cols + g.col0 + c]);
      }
    }
#pragma unroll
    for (int r = 0; r < kExpandRowChunk; ++r) {
      if (r0 + r < rows) {
        T& y = out[(r0 + r) * g.n + n];
        y = from_f<T>(to_f(y) + acc[r]);
      }
    }
  }
}

template <class T>
__global__ void lora_scale_rows_kernel(const float* in, int64_t rows, int cols,
                                       const int32_t* slot_of_col, const float* row_weights,
                                       int slots, T* out) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols;
    const int c = static_cast<int>(i % cols);
    out[i] = from_f<T>(row_weights[r * slots + slot_of_col[c]] * in[i]);
  }
}

}  // namespace

cudaError_t lora_shrink(const Launch& l, Elem t, const void* x, int64_t rows, int64_t k,
                        const void* a, int cols, const int32_t* slot_of_col,
                        const float* row_weights, int slots, void* out) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > kLoraKernelMaxRows) return cudaErrorInvalidValue;
  if (t == Elem::kF32) {
    return launch_kernel(l, lora_shrink_kernel<float>, cols, kShrinkThreads, 0,
                         static_cast<const float*>(x), rows, k, static_cast<const float*>(a), cols,
                         slot_of_col, row_weights, slots, static_cast<float*>(out));
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, lora_shrink_kernel<T>, cols, kShrinkThreads, 0,
                         static_cast<const T*>(x), rows, k, static_cast<const T*>(a), cols,
                         slot_of_col, row_weights, slots, static_cast<T*>(out));
  });
}

cudaError_t lora_expand(const Launch& l, Elem t, const void* tmat, int64_t rows, int total_cols,
                        const LoraExpandTargets& targets) {
  if (rows <= 0 || targets.count <= 0) return cudaSuccess;
  if (targets.count > kLoraMaxTargets) return cudaErrorInvalidValue;
  int64_t outputs = 0;
  for (int i = 0; i < targets.count; ++i) outputs += targets.t[i].n;
  const auto grid = static_cast<unsigned>(ceil_div(outputs, kExpandThreads));
  if (t == Elem::kF32) {
    return launch_kernel(l, lora_expand_kernel<float>, grid, kExpandThreads, 0,
                         static_cast<const float*>(tmat), rows, total_cols, targets);
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, lora_expand_kernel<T>, grid, kExpandThreads, 0,
                         static_cast<const T*>(tmat), rows, total_cols, targets);
  });
}

cudaError_t lora_scale_rows(const Launch& l, Elem t, const float* in, int64_t rows, int cols,
                            const int32_t* slot_of_col, const float* row_weights, int slots,
                            void* out) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t blocks = ceil_div(rows * cols, 256);
  const auto grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
  if (t == Elem::kF32) {
    return launch_kernel(l, lora_scale_rows_kernel<float>, grid, 256, 0, in, rows, cols,
                         slot_of_col, row_weights, slots, static_cast<float*>(out));
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, lora_scale_rows_kernel<T>, grid, 256, 0, in, rows, cols, slot_of_col,
                         row_weights, slots, static_cast<T*>(out));
  });
}

}  // namespace hearth::kernels
