// Matrix-vector products for decode: out[R, N] = x[R, K] · W[N, K]ᵀ with R small (1..64).
//
// The tensor-core kernel reads W once with 16-byte streaming loads, issued for a whole K slice
// before the first use (many bytes in flight, and, with programmatic dependent launch, before
// the previous kernel has finished). Each warp owns a tile of 16 output features × 256 inputs:
// thread (g = lane/4, t = lane%4) loads 8 consecutive inputs of features g and g+8. mma.sync
// m16n8k16 wants a different k order in its fragments, but a dot product does not care about
// the order of k as long as x uses the same one, so x is loaded with the identical layout and the
// 16-byte words are fed to the MMA as they are. x rows are the MMA's N dimension (8 per tile).
//
// Four warps share a block (1024 inputs); blocks along K write fp32 partials and the last block
// to finish a tile sums them in a fixed order. The split depends only on (N, K), so an output
// row is bit-identical whatever R is: decode is batch-invariant.
#include "kernels/common.cuh"

namespace hearth::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kSteps = 8;                 // 32-input steps per warp
constexpr int kWarpK = kSteps * 32;       // 256 inputs per warp
constexpr int kBlockK = kWarps * kWarpK;  // 1024 inputs per block
constexpr int kTileN = 16;                // output features per block

int tiles_n(int64_t n) {
  return static_cast<int>(ceil_div(n, kTileN));
}
int splits_k(int64_t k) {
  return static_cast<int>(ceil_div(k, kBlockK));
}
int ntiles_for(int64_t rows) {
  return rows <= 8 ? 1 : rows <= 16 ? 2 : rows <= 32 ? 4 : 8;
}

template <class T, int NT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_mma_kernel(const T* __restrict__ w, const T* x, const float* __restrict__ bias, void* out,
                    bool out_f32, int n, int k, int rows, float* partials, int32_t* counters) {
  // The block's weight slice (32 KB), fetched with cp.async: the copies are all in flight at
  // once and the compiler cannot sink them past the dependency wait as it does plain loads.
  // Each thread reads back only what it copied itself. Reused for the cross-warp reduction.
  __shared__ uint4 s_w[kWarps][kSteps][2][32];
  __shared__ bool last_block;
  static_assert(sizeof(float) * kWarps * NT * 4 * 32 <= sizeof(s_w), "reduction fits");
  float(*red)[NT][4][32] = reinterpret_cast<float(*)[NT][4][32]>(&s_w[0][0][0][0]);

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int tile = blockIdx.x;
  const int split = blockIdx.y;
  const int row0 = tile * kTileN + g;
  const int row1 = row0 + 8;
  const int kbase = split * kBlockK + warp * kWarpK + t * 8;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  pdl_launch_dependents();
  // Weights do not depend on the previous kernel: fetch the whole slice before waiting for it.
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int kk = kbase + s * 32;
    const bool in_k = kk < k;
    cp_async16(&s_w[warp][s][0][lane], in_k && row0 < n ? w + int64_t(row0) * k + kk : w,
               in_k && row0 < n);
    cp_async16(&s_w[warp][s][1][lane], in_k && row1 < n ? w + int64_t(row1) * k + kk : w,
               in_k && row1 < n);
  }
  cp_async_commit();
  pdl_wait();

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  cp_async_wait<0>();
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int kk = kbase + s * 32;
    const uint4 w0 = s_w[warp][s][0][lane];
    const uint4 w1 = s_w[warp][s][1][lane];
    const uint32_t a_lo[4] = {w0.x, w1.x, w0.y, w1.y};
    const uint32_t a_hi[4] = {w0.z, w1.z, w0.w, w1.w};
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int r = j * 8 + g;
      const uint4 xv = (r < rows && kk < k) ? load16(x + int64_t(r) * k + kk) : zero;
      mma_16816<T>(acc[j], a_lo, xv.x, xv.y);
      mma_16816<T>(acc[j], a_hi, xv.z, xv.w);
    }
  }

  __syncthreads();  // every warp is done with s_w before it becomes `red`
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) red[warp][j][c][lane] = acc[j][c];
  }
  __syncthreads();

  // Thread (c = tid/32, ln = tid%32) finishes accumulator c of lane ln for every tile j.
  const int c = threadIdx.x >> 5;
  const int ln = threadIdx.x & 31;
  const int out_row = tile * kTileN + (ln >> 2) + (c >= 2 ? 8 : 0);
  const int rows_padded = NT * 8;
  float v[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    v[j] = ((red[0][j][c][ln] + red[1][j][c][ln]) + red[2][j][c][ln]) + red[3][j][c][ln];
  }

  auto store = [&](int col, float value) {
    if (bias) value += bias[out_row];
    if (out_f32) {
      static_cast<float*>(out)[int64_t(col) * n + out_row] = value;
    } else {
      static_cast<T*>(out)[int64_t(col) * n + out_row] = from_f<T>(value);
    }
  };

  if (gridDim.y == 1) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int col = j * 8 + 2 * (ln & 3) + (c & 1);
      if (out_row < n && col < rows) store(col, v[j]);
    }
    return;
  }

#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int col = j * 8 + 2 * (ln & 3) + (c & 1);
    if (out_row < n && col < rows) {
      partials[(int64_t(split) * rows_padded + col) * n + out_row] = v[j];
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const int done = atomicAdd(&counters[tile], 1);
    last_block = done == static_cast<int>(gridDim.y) - 1;
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int col = j * 8 + 2 * (ln & 3) + (c & 1);
    if (out_row < n && col < rows) {
      float sum = 0.0f;
      for (int s = 0; s < static_cast<int>(gridDim.y); ++s) {
        sum += __ldcg(&partials[(int64_t(s) * rows_padded + col) * n + out_row]);
      }
      store(col, sum);
    }
  }
  if (threadIdx.x == 0) counters[tile] = 0;  // ready for the next launch
}

// One warp per output feature, one x row, CUDA cores (for comparison in benchmarks).
template <class T>
__global__ void gemv_fma_kernel(const T* __restrict__ w, const T* x, T* out, int n, int k) {
  constexpr int kUnroll = 4;
  const int feature = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  pdl_launch_dependents();
  if (feature >= n) return;
  const T* wr = w + int64_t(feature) * k;
  float acc = 0.0f;
  pdl_wait();
  for (int base = lane * 8; base < k; base += 32 * 8 * kUnroll) {
    uint4 wv[kUnroll], xv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int kk = base + u * 256;
      wv[u] = kk < k ? load_stream(wr + kk) : make_uint4(0, 0, 0, 0);
      xv[u] = kk < k ? load16(x + kk) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float a[8], b[8];
      unpack8<T>(wv[u], a);
      unpack8<T>(xv[u], b);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc = fmaf(a[i], b[i], acc);
    }
  }
  acc = warp_sum(acc);
  if (lane == 0) out[feature] = from_f<T>(acc);
}

// One warp per (x row, output feature); scalar loads, any K and alignment.
template <class T>
__global__ void gemv_generic_kernel(const T* __restrict__ w, const float* __restrict__ bias,
                                    const T* x, int rows, int n, int k, void* out, bool out_f32) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t item = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (item >= int64_t(rows) * n) return;
  const int r = static_cast<int>(item / n);
  const int f = static_cast<int>(item % n);
  const T* wr = w + int64_t(f) * k;
  const T* xr = x + int64_t(r) * k;
  float acc = 0.0f;
  for (int i = lane; i < k; i += 32) acc = fmaf(to_f(wr[i]), to_f(xr[i]), acc);
  acc = warp_sum(acc);
  if (lane == 0) {
    if (bias) acc += bias[f];
    if (out_f32) {
      static_cast<float*>(out)[item] = acc;
    } else {
      static_cast<T*>(out)[item] = from_f<T>(acc);
    }
  }
}

template <class T, int NT>
cudaError_t launch_mma(const Launch& l, const void* w, const float* bias, const void* x,
                       int64_t rows, int64_t n, int64_t k, void* out, bool out_f32,
                       const GemvScratch& scratch) {
  const dim3 grid(static_cast<unsigned>(tiles_n(n)), static_cast<unsigned>(splits_k(k)));
  return launch_kernel(l, gemv_mma_kernel<T, NT>, grid, dim3(kWarps * 32), 0,
                       static_cast<const T*>(w), static_cast<const T*>(x), bias, out, out_f32,
                       static_cast<int>(n), static_cast<int>(k), static_cast<int>(rows),
                       scratch.partials, scratch.counters);
}

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace

bool gemv_supported(int64_t n, int64_t k, int64_t rows) {
  return rows >= 1 && rows <= kGemvMaxRows && k % 8 == 0 && k > 0 && n > 0 &&
         n < (int64_t(1) << 30) && k < (int64_t(1) << 30);
}

size_t gemv_partial_floats(int64_t n, int64_t k, int64_t rows) {
  const int splits = splits_k(k);
  if (splits <= 1) return 0;
  return static_cast<size_t>(splits) * static_cast<size_t>(ntiles_for(rows) * 8) *
         static_cast<size_t>(n);
}

size_t gemv_counters(int64_t n) {
  return static_cast<size_t>(tiles_n(n));
}

cudaError_t gemv(const Launch& l, Elem t, const void* w, const float* bias, const void* x,
                 int64_t rows, int64_t n, int64_t k, void* out, Elem out_t,
                 const GemvScratch& scratch) {
  if (!gemv_supported(n, k, rows) || !aligned16(w) || !aligned16(x)) return cudaErrorInvalidValue;
  const bool out_f32 = out_t == Elem::kF32;
  HEARTH_DISPATCH_16(t, T, {
    switch (ntiles_for(rows)) {
      case 1:
        return launch_mma<T, 1>(l, w, bias, x, rows, n, k, out, out_f32, scratch);
      case 2:
        return launch_mma<T, 2>(l, w, bias, x, rows, n, k, out, out_f32, scratch);
      case 4:
        return launch_mma<T, 4>(l, w, bias, x, rows, n, k, out, out_f32, scratch);
      default:
        return launch_mma<T, 8>(l, w, bias, x, rows, n, k, out, out_f32, scratch);
    }
  });
}

cudaError_t gemv_fma_row(const Launch& l, Elem t, const void* w, const void* x, int64_t n,
                         int64_t k, void* out) {
  if (k % 8 != 0 || !aligned16(w) || !aligned16(x)) return cudaErrorInvalidValue;
  const int threads = 128;
  const dim3 grid(static_cast<unsigned>(ceil_div(n * 32, threads)));
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, gemv_fma_kernel<T>, grid, threads, 0, static_cast<const T*>(w),
                         static_cast<const T*>(x), static_cast<T*>(out), static_cast<int>(n),
                         static_cast<int>(k));
  });
}

cudaError_t gemv_generic(const Launch& l, Elem t, const void* w, const float* bias, const void* x,
                         int64_t rows, int64_t n, int64_t k, void* out, Elem out_t) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  const int threads = 256;
  const dim3 grid(static_cast<unsigned>(ceil_div(rows * n * 32, threads)));
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, gemv_generic_kernel<T>, grid, threads, 0, static_cast<const T*>(w),
                         bias, static_cast<const T*>(x), static_cast<int>(rows),
                         static_cast<int>(n), static_cast<int>(k), out, out_t == Elem::kF32);
  });
}

}  // namespace hearth::kernels
