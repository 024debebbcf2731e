// LoRA for a few rows: the shrink projects rows onto every adapter's A at once (one block per
// column of the stacked A and tile of rows), and the expand adds t·Bᵀ into each target (one
// thread per output feature and tile of rows, reading Bᵀ coalesced). Many rows go
// through cuBLAS instead (engine/backend/cuda/cuda_lora.cpp); lora_scale_rows serves that path.
#include <utility>

#include "kernels/common.cuh"
#include "kernels/quant_tile_codec.cuh"

namespace hearth::kernels {
namespace {

constexpr int kShrinkThreads = 256;
constexpr int kShrinkPreloadVecs = 8;  // 16-byte vectors of A per thread loaded before the wait
constexpr int kExpandThreads = 128;
constexpr int kExpandPreload = 16;  // values of Bᵀ per thread loaded before the wait

// Row tiles: each block takes R rows (blockIdx.y picks which), so more rows bring more blocks
// instead of longer chains of loads in each thread.
constexpr int kShrinkRowTile = 4;
constexpr int kExpandRowTile = 8;

// Launches `Launcher<R>` for the smallest R in {1, 2, 4, 8} (up to `max_tile`) that holds
// `rows`, or `max_tile`.
template <template <int> class Launcher, class... Args>
cudaError_t by_rows(int64_t rows, int max_tile, Args&&... args) {
  if (rows <= 1) return Launcher<1>::go(std::forward<Args>(args)...);
  if (rows <= 2) return Launcher<2>::go(std::forward<Args>(args)...);
  if (rows <= 4 || max_tile <= 4) return Launcher<4>::go(std::forward<Args>(args)...);
  return Launcher<8>::go(std::forward<Args>(args)...);
}

// One block per column of the stacked A and tile of R rows. The block's slice of A is loaded
// before griddepcontrol.wait (no earlier kernel of the step writes weights), then each thread
// reads 8 elements of each of its rows of x per 16-byte load. Rows past the end repeat the
// last row (no branches in the loop) and are not written.
template <class T, int R>
__global__ void lora_shrink_vec_kernel(const T* x, int rows, int64_t k, const T* a, int cols,
                                       const int32_t* slot_of_col, const float* row_weights,
                                       int slots, T* out) {
  pdl_launch_dependents();
  const int c = blockIdx.x;
  const int r0 = blockIdx.y * R;
  const int here = min(R, rows - r0);
  const int64_t vecs = k / 8;
  const uint4* a_row = reinterpret_cast<const uint4*>(a + static_cast<int64_t>(c) * k);
  uint4 a_pre[kShrinkPreloadVecs];
#pragma unroll
  for (int i = 0; i < kShrinkPreloadVecs; ++i) {
    const int64_t v = threadIdx.x + static_cast<int64_t>(i) * kShrinkThreads;
    if (v < vecs) a_pre[i] = load_stream(a_row + v);
  }
  pdl_wait();
  const T* xr[R];
#pragma unroll
  for (int r = 0; r < R; ++r) xr[r] = x + static_cast<int64_t>(r0 + min(r, here - 1)) * k;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  auto step = [&](const uint4& a_vec, int64_t v) {
    float av[8];
    unpack8<T>(a_vec, av);
    uint4 xv_raw[R];
#pragma unroll
    for (int r = 0; r < R; ++r) xv_raw[r] = load16(xr[r] + v * 8);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float xv[8];
      unpack8<T>(xv_raw[r], xv);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r] += av[e] * xv[e];
    }
  };
#pragma unroll
  for (int i = 0; i < kShrinkPreloadVecs; ++i) {
    const int64_t v = threadIdx.x + static_cast<int64_t>(i) * kShrinkThreads;
    if (v < vecs) step(a_pre[i], v);
  }
  // Beyond the preloaded part (k > 8 · kShrinkThreads · kShrinkPreloadVecs).
  for (int64_t v = threadIdx.x + static_cast<int64_t>(kShrinkPreloadVecs) * kShrinkThreads;
       v < vecs; v += kShrinkThreads) {
    step(load_stream(a_row + v), v);
  }
  __shared__ float partial[kShrinkThreads / 32][R];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float v = acc[r];
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) partial[warp][r] = v;
  }
  __syncthreads();
  if (threadIdx.x < here) {
    const int r = threadIdx.x;
    float sum = 0.0f;
    for (int w = 0; w < kShrinkThreads / 32; ++w) sum += partial[w][r];
    const int row = r0 + r;
    out[row * cols + c] = from_f<T>(row_weights[row * slots + slot_of_col[c]] * sum);
  }
}

// Any element type and k (f32 activations, k not a multiple of 8): one element per load.
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

// One thread per output feature of all targets and tile of R rows. The first kExpandPreload
// values of the thread's column of Bᵀ are loaded before griddepcontrol.wait; then the block
// stages its rows of t in shared memory at once (one round trip instead of one per column).
template <class T, int R>
__global__ void lora_expand_kernel(const T* t, int rows, int total_cols,
                                   LoraExpandTargets targets) {
  pdl_launch_dependents();
  int64_t n = blockIdx.x * int64_t(kExpandThreads) + threadIdx.x;
  const int r0 = blockIdx.y * R;
  const int here = min(R, rows - r0);
  // Constant indices only: a dynamic index would copy the parameters to local memory.
  int which = 0;
  if (which < targets.count && n >= targets.t[0].n) {
    n -= targets.t[0].n;
    which = 1;
    if (which < targets.count && n >= targets.t[1].n) {
      n -= targets.t[1].n;
      which = 2;
      if (which < targets.count && n >= targets.t[2].n) which = 3;
    }
  }
  const bool active = which < targets.count;
  const LoraExpandTarget g = which == 0 ? targets.t[0] : which == 1 ? targets.t[1] : targets.t[2];
  const T* bt = static_cast<const T*>(g.bt);
  float b_pre[kExpandPreload];
#pragma unroll
  for (int c = 0; c < kExpandPreload; ++c) {
    b_pre[c] = active && c < g.cols ? to_f(bt[static_cast<int64_t>(c) * g.n + n]) : 0.0f;
  }
  pdl_wait();
  extern __shared__ float t_s[];  // [R, total_cols]
  const T* t_rows = t + static_cast<int64_t>(r0) * total_cols;
  for (int i = threadIdx.x; i < here * total_cols; i += kExpandThreads) t_s[i] = to_f(t_rows[i]);
  __syncthreads();
  if (!active) return;
  T* out = static_cast<T*>(g.out) + static_cast<int64_t>(r0) * g.n;
  float y[R];
#pragma unroll
  for (int r = 0; r < R; ++r) y[r] = r < here ? to_f(out[r * g.n + n]) : 0.0f;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  const float* tg = t_s + g.col0;
#pragma unroll
  for (int c = 0; c < kExpandPreload; ++c) {
    if (c < g.cols) {
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] += b_pre[c] * tg[min(r, here - 1) * total_cols + c];
    }
  }
#pragma unroll 4
  for (int c = kExpandPreload; c < g.cols; ++c) {
    const float b = to_f(bt[static_cast<int64_t>(c) * g.n + n]);
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] += b * tg[min(r, here - 1) * total_cols + c];
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r < here) out[r * g.n + n] = from_f<T>(y[r] + acc[r]);
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

template <class T>
struct ShrinkVec {
  template <int R>
  struct At {
    static cudaError_t go(const Launch& l, const void* x, int64_t rows, int64_t k, const void* a,
                          int cols, const int32_t* slot_of_col, const float* row_weights, int slots,
                          void* out) {
      const dim3 grid(static_cast<unsigned>(cols), static_cast<unsigned>(ceil_div(rows, R)));
      return launch_kernel(l, lora_shrink_vec_kernel<T, R>, grid, kShrinkThreads, 0,
                           static_cast<const T*>(x), static_cast<int>(rows), k,
                           static_cast<const T*>(a), cols, slot_of_col, row_weights, slots,
                           static_cast<T*>(out));
    }
  };
};

template <class T>
struct Expand {
  template <int R>
  struct At {
    static cudaError_t go(const Launch& l, unsigned blocks, const void* tmat, int64_t rows,
                          int total_cols, const LoraExpandTargets& targets) {
      const auto smem = static_cast<unsigned>(R * total_cols * sizeof(float));
      const dim3 grid(blocks, static_cast<unsigned>(ceil_div(rows, R)));
      return launch_kernel(l, lora_expand_kernel<T, R>, grid, kExpandThreads, smem,
                           static_cast<const T*>(tmat), static_cast<int>(rows), total_cols,
                           targets);
    }
  };
};

// out[c][staged_position(s)] = a[c][row_src[s]] (0 where row_src[s] < 0), one thread per
// element.
__global__ void lora_gather_features_kernel(const __half* a, int cols, int64_t k,
                                            const int32_t* row_src, int64_t stored, __half* out) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= cols * stored) return;
  const int64_t c = i / stored, s = i - c * stored;
  const int32_t src = row_src[s];
  out[c * stored + qtile::staged_position(static_cast<int>(s))] =
      src >= 0 && src < k ? a[c * k + src] : __float2half_rn(0.0f);
}

}  // namespace

cudaError_t lora_gather_features(const Launch& l, const void* a, int cols, int64_t k,
                                 const int32_t* row_src, int64_t stored, void* out) {
  if (cols < 1 || k < 1 || stored < 1 || stored % 32 != 0) return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  const int64_t n = cols * stored;
  lora_gather_features_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0,
                                l.stream>>>(static_cast<const __half*>(a), cols, k, row_src, stored,
                                            static_cast<__half*>(out));
  return cudaGetLastError();
}

cudaError_t lora_shrink(const Launch& l, Elem t, const void* x, int64_t rows, int64_t k,
                        const void* a, int cols, const int32_t* slot_of_col,
                        const float* row_weights, int slots, void* out) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > kLoraKernelMaxRows) return cudaErrorInvalidValue;
  const bool aligned =
      (reinterpret_cast<uintptr_t>(x) & 15u) == 0 && (reinterpret_cast<uintptr_t>(a) & 15u) == 0;
  if (t != Elem::kF32 && k % 8 == 0 && aligned) {
    HEARTH_DISPATCH_16(t, T, {
      return by_rows<ShrinkVec<T>::template At>(rows, kShrinkRowTile, l, x, rows, k, a, cols,
                                                slot_of_col, row_weights, slots, out);
    });
  }
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
  if (targets.count > kLoraMaxTargets || rows > kLoraKernelMaxRows ||
      !lora_expand_fits(rows, total_cols)) {
    return cudaErrorInvalidValue;
  }
  int64_t outputs = 0;
  for (int i = 0; i < targets.count; ++i) outputs += targets.t[i].n;
  const auto grid = static_cast<unsigned>(ceil_div(outputs, kExpandThreads));
  if (t == Elem::kF32) {
    return by_rows<Expand<float>::template At>(rows, kExpandRowTile, l, grid, tmat, rows,
                                               total_cols, targets);
  }
  HEARTH_DISPATCH_16(t, T, {
    return by_rows<Expand<T>::template At>(rows, kExpandRowTile, l, grid, tmat, rows, total_cols,
                                           targets);
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
