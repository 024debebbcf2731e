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

// Rows [b0, b1) of one group's block, one thread per column c (GPTQ's updates inside a block
// touch only the column being quantized): row r is quantized (codes, deq = fp16((q − zero)·
// scale)), its error e = (w − deq) / U[r][r] stored, and rows r < i < b1 get w[i] −= U[r][i]·e.
// Bit-identical to quantizing row by row with a rank-1 launch after each (the same operations
// in the same order); err2[c] += Σ e² over the block, in double.
__global__ void quantize_block_kernel(float* w, int64_t n, int64_t k, const float* u, int64_t b0,
                                      int64_t b1, const float* scale, const float* zero, float maxq,
                                      uint8_t* codes, float* deq, float* err, double* err2) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= n) return;
  const float s = scale[c], z = zero[c];
  double e2 = 0.0;
  for (int64_t r = b0; r < b1; ++r) {
    const float x = w[r * n + c];
    float v;
    if (!(s > 0.0f)) {
      codes[r * n + c] = static_cast<uint8_t>(z);
      v = 0.0f;
    } else {
      const float q = fminf(fmaxf(rintf(x / s) + z, 0.0f), maxq);
      codes[r * n + c] = static_cast<uint8_t>(q);
      v = __half2float(__float2half_rn((q - z) * s));
    }
    deq[r * n + c] = v;
    const float e = (x - v) / u[r * k + r];
    err[(r - b0) * n + c] = e;
    e2 += static_cast<double>(e) * e;
    const float* u_row = u + r * k;
    for (int64_t i = r + 1; i < b1; ++i) w[i * n + c] -= u_row[i] * e;
  }
  err2[c] += e2;
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

// sum[i][j] += batch[i][j] for j <= i: the float sum of one batch added to the double total.
__global__ void accumulate_lower_kernel(const float* batch, int64_t k, double* sum) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y;
  if (j > i || j >= k) return;
  sum[i * k + j] += static_cast<double>(batch[i * k + j]);
}

// Both transposes go through a 32 × 32 shared tile indexed by (original input feature j,
// output column c), so that reads and writes are each coalesced: one side walks j, the other c.
constexpr int kTile = 32;

// wp[inv[j]][c] = w[c][j] (c < n), 0 for n <= c < n_pad.
__global__ void permute_transpose_kernel(const float* w, int64_t n, int64_t k, const int32_t* inv,
                                         int64_t n_pad, float* wp) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t j0 = blockIdx.x * static_cast<int64_t>(kTile);
  const int64_t c0 = blockIdx.y * static_cast<int64_t>(kTile);
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int64_t c = c0 + r, j = j0 + threadIdx.x;
    tile[r][threadIdx.x] = c < n && j < k ? w[c * k + j] : 0.0f;
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int64_t j = j0 + r, c = c0 + threadIdx.x;
    if (j < k && c < n_pad) wp[static_cast<int64_t>(inv[j]) * n_pad + c] = tile[threadIdx.x][r];
  }
}

// r[c][j] = d[inv[j]][c] for c < n: the reconstruction back in [N, K] and input order.
__global__ void unpermute_kernel(const float* d, int64_t k, int64_t n, int64_t n_pad,
                                 const int32_t* inv, float* r_out) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t j0 = blockIdx.x * static_cast<int64_t>(kTile);
  const int64_t c0 = blockIdx.y * static_cast<int64_t>(kTile);
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int64_t j = j0 + r, c = c0 + threadIdx.x;
    tile[r][threadIdx.x] = j < k && c < n ? d[static_cast<int64_t>(inv[j]) * n_pad + c] : 0.0f;
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int64_t c = c0 + r, j = j0 + threadIdx.x;
    if (c < n && j < k) r_out[c * k + j] = tile[threadIdx.x][r];
  }
}

// out[i] = in[count - 1 - i].
__global__ void reverse_kernel(const float* in, int64_t count, float* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = in[count - 1 - i];
}

__global__ void set_diagonal_kernel(float* a, int64_t n, float value) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) a[i * n + i] = value;
}

// u[i][j] = x[(n-1-j)·n + (n-1-i)] for j >= i, else 0 (x column-major); *bad = 1 on a
// non-finite entry of the upper part. Tiled like the transposes above.
__global__ void flip_upper_kernel(const float* x, int64_t n, float* u, int* bad) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t j0 = blockIdx.x * static_cast<int64_t>(kTile);
  const int64_t i0 = blockIdx.y * static_cast<int64_t>(kTile);
  // Read x[a·n + b] with a = n-1-j (tile row), b = n-1-i walking along threadIdx.x.
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int64_t j = j0 + r, i = i0 + threadIdx.x;
    tile[r][threadIdx.x] = i < n && j < n ? x[(n - 1 - j) * n + (n - 1 - i)] : 0.0f;
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int64_t i = i0 + r, j = j0 + threadIdx.x;
    if (i >= n || j >= n) continue;
    float v = 0.0f;
    if (j >= i) {
      v = tile[threadIdx.x][r];
      if (!isfinite(v)) *bad = 1;
    }
    u[i * n + j] = v;
  }
}

// h[i][j] = h[j][i] = float(sum[i][j] · scale) for j <= i (sum's lower triangle).
__global__ void finish_hessian_kernel(const double* sum, int64_t k, double scale, float* h) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y;
  if (j >= k) return;
  // Row i takes its lower part from row i, its upper part from the mirrored entry.
  const double v = j <= i ? sum[i * k + j] : sum[j * k + i];
  h[i * k + j] = static_cast<float>(v * scale);
}

constexpr int kGroupThreads = 1024;

// One block: smax = max(base); per column qs = clamp(rint(sqrt(base / smax) · 16), 1, 16),
// scale = (qs / 16)² · smax (exl2_scale_candidates, operation for operation).
__global__ void exl2_candidates_kernel(const float* base, int64_t n, uint8_t* qscale, float* scale,
                                       float* smax_out) {
  __shared__ float red[kGroupThreads];
  float m = 0.0f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) m = fmaxf(m, base[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float smax = red[0];
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float t = __fmul_rn(sqrtf(__fdiv_rn(base[c], smax)), 16.0f);
    const float q = fminf(fmaxf(rintf(t), 1.0f), 16.0f);
    qscale[c] = static_cast<uint8_t>(q);
    const float qw = __fdiv_rn(q, 16.0f);
    scale[c] = __fmul_rn(__fmul_rn(qw, qw), smax);
  }
  if (threadIdx.x == 0) *smax_out = smax;
}

// One block: the grid point with the least error (the first on ties), then the group's
// parameters as exl2_params_from computes them: q_scale_max = fp16(smax · p), scale =
// fp16(qs² · fp16(q_scale_max / 256)), zero = qzero.
__global__ void exl2_params_kernel(const float* err, int grid, const float* smax_in,
                                   const uint8_t* qscale, int64_t n, float qzero, float min_p,
                                   float max_p, float steps, float* scale, float* zero,
                                   float* scale_copy, float* qscale_max_out) {
  __shared__ float premul;
  if (threadIdx.x == 0) {
    int best = 0;
    for (int i = 1; i < grid; ++i) {
      if (err[i] < err[best]) best = i;
    }
    const float f = __fdiv_rn(static_cast<float>(best), steps);
    const float p = __fadd_rn(__fmul_rn(max_p, f), __fmul_rn(min_p, __fsub_rn(1.0f, f)));
    const float qmax = __half2float(__float2half_rn(__fmul_rn(*smax_in, p)));
    *qscale_max_out = qmax;
    premul = __half2float(__float2half_rn(__fmul_rn(qmax, 1.0f / 256.0f)));
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float q = static_cast<float>(qscale[c]);
    const float v = __half2float(__float2half_rn(__fmul_rn(__fmul_rn(q, q), premul)));
    scale[c] = v;
    scale_copy[c] = v;
    zero[c] = qzero;
  }
}

}  // namespace

cudaError_t quantizer_exl2_candidates(cudaStream_t s, const float* base, int64_t n, uint8_t* qscale,
                                      float* scale, float* smax) {
  exl2_candidates_kernel<<<1, kGroupThreads, 0, s>>>(base, n, qscale, scale, smax);
  return cudaGetLastError();
}

cudaError_t quantizer_exl2_params(cudaStream_t s, const float* err, const float* smax,
                                  const uint8_t* qscale, int64_t n, int bits, float* scale,
                                  float* zero, float* scale_copy, float* qscale_max) {
  const float qzero = static_cast<float>(1 << (bits - 1));
  exl2_params_kernel<<<1, kGroupThreads, 0, s>>>(err, kPGrid + 1, smax, qscale, n, qzero, 0.70f,
                                                 1.2f, static_cast<float>(kPGrid), scale, zero,
                                                 scale_copy, qscale_max);
  return cudaGetLastError();
}

cudaError_t quantizer_finish_hessian(cudaStream_t s, const double* sum, int64_t k, double scale,
                                     float* h) {
  if (k <= 0) return cudaSuccess;
  const dim3 grid(blocks_for(k), static_cast<unsigned>(k));
  finish_hessian_kernel<<<grid, kThreads, 0, s>>>(sum, k, scale, h);
  return cudaGetLastError();
}

cudaError_t quantizer_reverse(cudaStream_t s, const float* in, int64_t count, float* out) {
  if (count <= 0) return cudaSuccess;
  reverse_kernel<<<blocks_for(count), kThreads, 0, s>>>(in, count, out);
  return cudaGetLastError();
}

cudaError_t quantizer_identity(cudaStream_t s, float* a, int64_t n) {
  if (n <= 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(a, 0, static_cast<size_t>(n * n) * sizeof(float), s);
  if (e != cudaSuccess) return e;
  set_diagonal_kernel<<<blocks_for(n), kThreads, 0, s>>>(a, n, 1.0f);
  return cudaGetLastError();
}

cudaError_t quantizer_flip_upper(cudaStream_t s, const float* x, int64_t n, float* u, int* bad) {
  if (n <= 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(bad, 0, sizeof(int), s);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((n + kTile - 1) / kTile));
  flip_upper_kernel<<<grid, dim3(kTile, 8), 0, s>>>(x, n, u, bad);
  return cudaGetLastError();
}

cudaError_t quantizer_permute_transpose(cudaStream_t s, const float* w, int64_t n, int64_t k,
                                        const int32_t* inv_perm, int64_t n_pad, float* wp) {
  if (n_pad <= 0 || k <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((k + kTile - 1) / kTile),
                  static_cast<unsigned>((n_pad + kTile - 1) / kTile));
  permute_transpose_kernel<<<grid, dim3(kTile, 8), 0, s>>>(w, n, k, inv_perm, n_pad, wp);
  return cudaGetLastError();
}

cudaError_t quantizer_unpermute(cudaStream_t s, const float* d, int64_t k, int64_t n, int64_t n_pad,
                                const int32_t* inv_perm, float* r) {
  if (n <= 0 || k <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((k + kTile - 1) / kTile),
                  static_cast<unsigned>((n + kTile - 1) / kTile));
  unpermute_kernel<<<grid, dim3(kTile, 8), 0, s>>>(d, k, n, n_pad, inv_perm, r);
  return cudaGetLastError();
}

cudaError_t quantizer_accumulate_lower(cudaStream_t s, const float* batch, int64_t k, double* sum) {
  if (k <= 0) return cudaSuccess;
  const dim3 grid(blocks_for(k), static_cast<unsigned>(k));
  accumulate_lower_kernel<<<grid, kThreads, 0, s>>>(batch, k, sum);
  return cudaGetLastError();
}

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

cudaError_t quantizer_quantize_block(cudaStream_t s, float* w, int64_t n, int64_t k, const float* u,
                                     int64_t b0, int64_t b1, const float* scale, const float* zero,
                                     float maxq, uint8_t* codes, float* deq, float* err,
                                     double* err2) {
  if (b1 <= b0 || n <= 0) return cudaSuccess;
  // Small blocks: the columns are few (1024 for a k_proj) and each thread's work is serial.
  constexpr int kColumns = 32;
  quantize_block_kernel<<<static_cast<unsigned>((n + kColumns - 1) / kColumns), kColumns, 0, s>>>(
      w, n, k, u, b0, b1, scale, zero, maxq, codes, deq, err, err2);
  return cudaGetLastError();
}

}  // namespace hearth::kernels
