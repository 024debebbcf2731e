// Row and element-wise kernels: embedding gather, RMSNorm (with the residual add fused), RoPE,
// SwiGLU, logit-row gather, dtype conversion, bias add and random fill. All arithmetic in fp32;
// results rounded once to the storage type.
#include "kernels/common.cuh"
#include "kernels/rms_sum.cuh"
#include "kernels/rope_math.cuh"

namespace hearth::kernels {
namespace {

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// ---- embedding ----
template <class T, int VEC>
__global__ void embed_kernel(const T* __restrict__ table, int64_t vocab, int64_t hidden,
                             const int32_t* tokens, int64_t rows, T* out) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t per_row = hidden / VEC;
  const int64_t total = rows * per_row;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / per_row;
    const int64_t c = (i % per_row) * VEC;
    const int32_t id = tokens[r];
    T* dst = out + r * hidden + c;
    if (id < 0 || id >= vocab) {
      if constexpr (VEC == 8) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
      } else {
        *dst = from_f<T>(0.0f);
      }
      continue;
    }
    const T* src = table + int64_t(id) * hidden + c;
    if constexpr (VEC == 8) {
      *reinterpret_cast<uint4*>(dst) = load16(src);
    } else {
      *dst = *src;
    }
  }
}

// ---- RMSNorm ----
// One block per row. With `delta`, the residual is updated first (rounded to T) and the norm is
// taken of the rounded residual, exactly what the next layer will read. The sum of squares in
// rms_sum.cuh's order.
// A thread keeps its first kNormKeptPieces 16-byte pieces of the row in registers for the second
// pass and reads the weights 16 bytes at a time: re-reading the row and loading the weights a
// float at a time left the kernel bound by L1 traffic (76 % busy, DRAM 30 %; H200, 2,048 rows of
// 4,096) rather than by memory.
constexpr int kNormKeptPieces = 4;

template <class T, int VEC>
__global__ void rms_norm_kernel(T* x, const T* delta, const float* __restrict__ w, float eps,
                                int64_t cols, T* out) {
  __shared__ float unit_sums[kRmsSumMaxCols / 32];
  __shared__ float slot_sums[kRmsMaxSlots];
  pdl_launch_dependents();
  // The weights are read only in the second pass: have L2 fetch them while waiting.
  if (threadIdx.x == 0 && blockIdx.x == 0) prefetch_l2(w, static_cast<unsigned>(cols * 4));
  pdl_wait();
  const int64_t row = blockIdx.x;
  T* xr = x + row * cols;
  const T* dr = delta ? delta + row * cols : nullptr;
  const bool in_sum_order = cols <= kRmsSumMaxCols;
  const int64_t stride = int64_t(blockDim.x) * VEC;
  float sum = 0.0f;
  // One pass's columns c .. c + VEC - 1 (zeros past the row); `kept` receives them as stored.
  auto first_pass = [&](int64_t base, uint4* kept) {
    const int64_t c = base + threadIdx.x * int64_t(VEC);
    const bool valid = c < cols;
    float v[VEC] = {};
    if (valid) {
      if constexpr (VEC == 8) {
        uint4 piece = load16(xr + c);
        unpack8<T>(piece, v);
        if (dr) {
          float d[8];
          unpack8<T>(load16(dr + c), d);
#pragma unroll
          for (int i = 0; i < 8; ++i) v[i] = to_f(from_f<T>(v[i] + d[i]));
          piece = pack8<T>(v);
          *reinterpret_cast<uint4*>(xr + c) = piece;
        }
        if (kept) *kept = piece;
      } else {
        v[0] = to_f(xr[c]);
        if (dr) {
          v[0] = to_f(from_f<T>(v[0] + to_f(dr[c])));
          xr[c] = from_f<T>(v[0]);
        }
      }
    }
    if (!in_sum_order) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sum += v[i] * v[i];
    } else if constexpr (VEC == 8) {
      rms_unit_sum8(v, valid, c, unit_sums);
    } else {
      rms_unit_sum1(v[0], valid, c, unit_sums);
    }
  };
  // Every thread takes every pass (the unit sums shuffle within warps).
  constexpr int kKept = VEC == 8 ? kNormKeptPieces : 0;
  uint4 kept[kKept > 0 ? kKept : 1];
#pragma unroll
  for (int it = 0; it < kKept; ++it) {
    if (it * stride >= cols) break;
    first_pass(it * stride, &kept[it]);
  }
  for (int64_t base = kKept * stride; base < cols; base += stride) first_pass(base, nullptr);
  if (in_sum_order) {
    __syncthreads();
    sum = rms_total(unit_sums, slot_sums, cols);
  } else {
    sum = block_sum(sum, unit_sums);
  }
  const float inv = 1.0f / sqrtf(sum / static_cast<float>(cols) + eps);
  T* orow = out + row * cols;
  if constexpr (VEC == 8) {
    const bool w_vec = reinterpret_cast<uintptr_t>(w) % 16 == 0;
    auto second_pass = [&](int64_t c, const uint4& piece) {
      float v[8], wv[8];
      unpack8<T>(piece, v);
      if (w_vec) {
        const float4 a = *reinterpret_cast<const float4*>(w + c);
        const float4 b = *reinterpret_cast<const float4*>(w + c + 4);
        wv[0] = a.x, wv[1] = a.y, wv[2] = a.z, wv[3] = a.w;
        wv[4] = b.x, wv[5] = b.y, wv[6] = b.z, wv[7] = b.w;
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) wv[i] = w[c + i];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = wv[i] * (v[i] * inv);
      *reinterpret_cast<uint4*>(orow + c) = pack8<T>(v);
    };
#pragma unroll
    for (int it = 0; it < kKept; ++it) {
      const int64_t c = it * stride + threadIdx.x * int64_t(VEC);
      if (c < cols) second_pass(c, kept[it]);
    }
    for (int64_t c = kKept * stride + threadIdx.x * int64_t(VEC); c < cols; c += stride) {
      second_pass(c, load16(xr + c));
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      orow[c] = from_f<T>(w[c] * (to_f(xr[c]) * inv));
    }
  }
}

// ---- RoPE ----
// One thread per (row, i < rotary_dim/2), over every q and k head of the row: the angle's
// cosine and sine are computed once for all heads (per pair they took most of the pass: 26 us
// for 1,024 rows of Llama-3-8B's 40 heads, against 6 us of memory traffic).
template <class T>
__global__ void rope_kernel(T* q, int64_t q_cols, T* k, int64_t k_cols, const int32_t* positions,
                            const float* __restrict__ inv_freq, float attention_factor,
                            int head_dim, int half) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t row = blockIdx.y;
  const int pos = positions[row];
  if (pos < 0) return;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= half) return;
  const rope_math::CosSin r = rope_math::cos_sin(pos, inv_freq[i], attention_factor);
  // Eight heads' pairs loaded before any is stored, so their loads are in flight together.
  constexpr int kHeads = 8;
  auto rotate_heads = [&](T* base, int64_t cols) {
    const int heads = static_cast<int>(cols / head_dim);
    for (int h0 = 0; h0 < heads; h0 += kHeads) {
      float x1[kHeads], x2[kHeads];
#pragma unroll
      for (int h = 0; h < kHeads; ++h) {
        if (h0 + h < heads) {
          const T* v = base + int64_t(h0 + h) * head_dim;
          x1[h] = to_f(v[i]);
          x2[h] = to_f(v[i + half]);
        }
      }
#pragma unroll
      for (int h = 0; h < kHeads; ++h) {
        if (h0 + h < heads) {
          T* v = base + int64_t(h0 + h) * head_dim;
          v[i] = from_f<T>(rope_math::rotated_low(x1[h], x2[h], r));
          v[i + half] = from_f<T>(rope_math::rotated_high(x1[h], x2[h], r));
        }
      }
    }
  };
  rotate_heads(q + row * q_cols, q_cols);
  rotate_heads(k + row * k_cols, k_cols);
}

// The same rotation, two neighbouring pairs (i, i + 1) a thread: 4-byte loads and stores instead of
// 2-byte ones, and several rows a block (one row's threads are only rotary_dim / 4). The
// arithmetic of each element is rope_kernel's, so the bits are too. Where q, k and the heads are
// 4-byte aligned and rotary_dim / 2 is even.
template <class T>
struct alignas(2 * sizeof(T)) RopePair {
  T lo, hi;
};

template <class T>
__global__ void rope_pairs_kernel(T* q, int64_t q_cols, T* k, int64_t k_cols, int64_t rows,
                                  const int32_t* positions, const float* __restrict__ inv_freq,
                                  float attention_factor, int head_dim, int half) {
  pdl_launch_dependents();
  pdl_wait();
  const int per_row = half / 2;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / per_row) + threadIdx.x / per_row;
  const int i = 2 * static_cast<int>(threadIdx.x % per_row);
  if (row >= rows) return;
  const int pos = positions[row];
  if (pos < 0) return;
  const rope_math::CosSin r0 = rope_math::cos_sin(pos, inv_freq[i], attention_factor);
  const rope_math::CosSin r1 = rope_math::cos_sin(pos, inv_freq[i + 1], attention_factor);
  constexpr int kHeads = 8;  // eight heads' loads in flight before any store
  auto rotate_heads = [&](T* base, int64_t cols) {
    const int heads = static_cast<int>(cols / head_dim);
    for (int h0 = 0; h0 < heads; h0 += kHeads) {
      RopePair<T> x1[kHeads], x2[kHeads];
#pragma unroll
      for (int h = 0; h < kHeads; ++h) {
        if (h0 + h < heads) {
          const T* v = base + int64_t(h0 + h) * head_dim;
          x1[h] = *reinterpret_cast<const RopePair<T>*>(v + i);
          x2[h] = *reinterpret_cast<const RopePair<T>*>(v + i + half);
        }
      }
#pragma unroll
      for (int h = 0; h < kHeads; ++h) {
        if (h0 + h < heads) {
          T* v = base + int64_t(h0 + h) * head_dim;
          const float a0 = to_f(x1[h].lo), a1 = to_f(x1[h].hi);
          const float b0 = to_f(x2[h].lo), b1 = to_f(x2[h].hi);
          *reinterpret_cast<RopePair<T>*>(v + i) =
              RopePair<T>{from_f<T>(rope_math::rotated_low(a0, b0, r0)),
                          from_f<T>(rope_math::rotated_low(a1, b1, r1))};
          *reinterpret_cast<RopePair<T>*>(v + i + half) =
              RopePair<T>{from_f<T>(rope_math::rotated_high(a0, b0, r0)),
                          from_f<T>(rope_math::rotated_high(a1, b1, r1))};
        }
      }
    }
  };
  rotate_heads(q + row * q_cols, q_cols);
  rotate_heads(k + row * k_cols, k_cols);
}

// ---- SwiGLU ----
template <class T, int VEC>
__global__ void silu_mul_kernel(const T* gate, const T* up, T* out, int64_t n) {
  pdl_launch_dependents();
  pdl_wait();
  for (int64_t i = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * VEC; i < n;
       i += int64_t(gridDim.x) * blockDim.x * VEC) {
    if constexpr (VEC == 8) {
      float g[8], u[8];
      unpack8<T>(load16(gate + i), g);
      unpack8<T>(load16(up + i), u);
#pragma unroll
      for (int j = 0; j < 8; ++j) g[j] = swiglu(g[j], u[j]);
      *reinterpret_cast<uint4*>(out + i) = pack8<T>(g);
    } else {
      out[i] = from_f<T>(swiglu(to_f(gate[i]), to_f(up[i])));
    }
  }
}

// ---- logit rows ----
template <class T>
__global__ void gather_rows_kernel(const T* x, int64_t cols, const int32_t* rows, T* out) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t r = blockIdx.y;
  const int32_t src = rows[r];
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    out[r * cols + c] = src < 0 ? from_f<T>(0.0f) : x[int64_t(src) * cols + c];
  }
}

// ---- squared distance ----
template <class T>
__global__ void squared_distance_kernel(const T* a, const T* b, int64_t n, double* partials) {
  __shared__ double warp_sums[32];
  pdl_wait();
  double sum = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double d = static_cast<double>(to_f(a[i])) - static_cast<double>(to_f(b[i]));
    sum += d * d;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const int warp = threadIdx.x >> 5, warps = static_cast<int>(blockDim.x >> 5);
  if ((threadIdx.x & 31) == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < warps; ++w) total += warp_sums[w];  // fixed order
    partials[blockIdx.x] = total;
  }
}

// ---- conversion, bias, random fill ----
template <class S, class D>
__global__ void convert_kernel(const S* src, D* dst, int64_t n) {
  pdl_wait();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = from_f<D>(to_f(src[i]));
  }
}

template <class T>
__global__ void add_bias_kernel(T* out, const float* __restrict__ bias, int64_t rows,
                                int64_t cols) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = from_f<T>(to_f(out[i]) + bias[i % cols]);
  }
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void fill_random_kernel(T* __restrict__ out, int64_t n, uint64_t seed, float scale) {
  pdl_wait();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t z = splitmix64(seed + (uint64_t(i) + 1) * 0x9e3779b97f4a7c15ull);
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    out[i] = from_f<T>((2.0f * u - 1.0f) * scale);
  }
}

int grid_for(int64_t work, int threads) {
  const int64_t blocks = ceil_div(work, threads);
  return static_cast<int>(blocks < 65536 ? (blocks < 1 ? 1 : blocks) : 65536);
}

}  // namespace

cudaError_t embed(const Launch& l, Elem t, const void* table, int64_t vocab, int64_t hidden,
                  const BatchView& batch, int64_t rows, void* out) {
  if (rows <= 0) return cudaSuccess;
  const bool vec = hidden % 8 == 0 && aligned16(table) && aligned16(out);
  HEARTH_DISPATCH_16(t, T, {
    if (vec) {
      return launch_kernel(l, embed_kernel<T, 8>, grid_for(rows * hidden / 8, 256), 256, 0,
                           static_cast<const T*>(table), vocab, hidden, batch.tokens, rows,
                           static_cast<T*>(out));
    }
    return launch_kernel(l, embed_kernel<T, 1>, grid_for(rows * hidden, 256), 256, 0,
                         static_cast<const T*>(table), vocab, hidden, batch.tokens, rows,
                         static_cast<T*>(out));
  });
}

namespace {
cudaError_t norm_launch(const Launch& l, Elem t, void* x, const void* delta, const void* w,
                        float eps, int64_t rows, int64_t cols, void* out) {
  if (rows <= 0) return cudaSuccess;
  const bool vec =
      cols % 8 == 0 && aligned16(x) && aligned16(out) && (delta == nullptr || aligned16(delta));
  int threads = 256;
  if (cols <= 2048) threads = 128;
  if (cols > 8192) threads = 512;
  HEARTH_DISPATCH_16(t, T, {
    if (vec) {
      return launch_kernel(l, rms_norm_kernel<T, 8>, dim3(static_cast<unsigned>(rows)), threads, 0,
                           static_cast<T*>(x), static_cast<const T*>(delta),
                           static_cast<const float*>(w), eps, cols, static_cast<T*>(out));
    }
    return launch_kernel(l, rms_norm_kernel<T, 1>, dim3(static_cast<unsigned>(rows)), threads, 0,
                         static_cast<T*>(x), static_cast<const T*>(delta),
                         static_cast<const float*>(w), eps, cols, static_cast<T*>(out));
  });
}
}  // namespace

cudaError_t rms_norm(const Launch& l, Elem t, const void* x, const void* w, float eps, int64_t rows,
                     int64_t cols, void* out) {
  // x is only read when delta is null.
  return norm_launch(l, t, const_cast<void*>(x), nullptr, w, eps, rows, cols, out);
}

cudaError_t add_rms_norm(const Launch& l, Elem t, void* residual, const void* delta, const void* w,
                         float eps, int64_t rows, int64_t cols, void* out) {
  return norm_launch(l, t, residual, delta, w, eps, rows, cols, out);
}

cudaError_t rope(const Launch& l, Elem t, void* q, int64_t q_cols, void* k, int64_t k_cols,
                 int64_t rows, const int32_t* positions, const float* inv_freq,
                 float attention_factor, int head_dim, int rotary_dim) {
  if (rows <= 0 || rotary_dim < 2) return cudaSuccess;
  const int half = rotary_dim / 2;
  constexpr int kPairThreads = 256;
  const bool aligned4 = reinterpret_cast<uintptr_t>(q) % 4 == 0 &&
                        reinterpret_cast<uintptr_t>(k) % 4 == 0 && q_cols % 2 == 0 &&
                        k_cols % 2 == 0 && head_dim % 2 == 0;
  if (half % 2 == 0 && half / 2 <= kPairThreads && aligned4) {
    const int per_row = half / 2;
    const int rows_per_block = kPairThreads / per_row;
    const int64_t blocks = ceil_div(rows, int64_t(rows_per_block));
    if (blocks > INT32_MAX) return cudaErrorInvalidValue;
    HEARTH_DISPATCH_16(t, T, {
      return launch_kernel(l, rope_pairs_kernel<T>, dim3(static_cast<unsigned>(blocks)),
                           dim3(rows_per_block * per_row), 0, static_cast<T*>(q), q_cols,
                           static_cast<T*>(k), k_cols, rows, positions, inv_freq, attention_factor,
                           head_dim, half);
    });
  }
  const int threads = half <= 64 ? 64 : 128;
  const dim3 grid(static_cast<unsigned>(ceil_div(half, threads)), static_cast<unsigned>(rows));
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, rope_kernel<T>, grid, threads, 0, static_cast<T*>(q), q_cols,
                         static_cast<T*>(k), k_cols, positions, inv_freq, attention_factor,
                         head_dim, half);
  });
}

cudaError_t silu_mul(const Launch& l, Elem t, const void* gate, const void* up, void* out,
                     int64_t n) {
  if (n <= 0) return cudaSuccess;
  const bool vec = n % 8 == 0 && aligned16(gate) && aligned16(up) && aligned16(out);
  HEARTH_DISPATCH_16(t, T, {
    if (vec) {
      return launch_kernel(l, silu_mul_kernel<T, 8>, grid_for(n / 8, 256), 256, 0,
                           static_cast<const T*>(gate), static_cast<const T*>(up),
                           static_cast<T*>(out), n);
    }
    return launch_kernel(l, silu_mul_kernel<T, 1>, grid_for(n, 256), 256, 0,
                         static_cast<const T*>(gate), static_cast<const T*>(up),
                         static_cast<T*>(out), n);
  });
}

cudaError_t gather_rows(const Launch& l, Elem t, const void* x, int64_t cols, const int32_t* rows,
                        int64_t num_rows, void* out) {
  if (num_rows <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, 256) < 64 ? ceil_div(cols, 256) : 64),
                  static_cast<unsigned>(num_rows));
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, gather_rows_kernel<T>, grid, 256, 0, static_cast<const T*>(x), cols,
                         rows, static_cast<T*>(out));
  });
}

namespace {
template <class S>
cudaError_t convert_from(const Launch& l, const S* src, Elem dst_type, void* dst, int64_t n) {
  const int grid = grid_for(n, 256);
  switch (dst_type) {
    case Elem::kF16:
      return launch_kernel(l, convert_kernel<S, __half>, grid, 256, 0, src,
                           static_cast<__half*>(dst), n);
    case Elem::kBF16:
      return launch_kernel(l, convert_kernel<S, __nv_bfloat16>, grid, 256, 0, src,
                           static_cast<__nv_bfloat16*>(dst), n);
    case Elem::kF32:
      return launch_kernel(l, convert_kernel<S, float>, grid, 256, 0, src, static_cast<float*>(dst),
                           n);
  }
  return cudaErrorInvalidValue;
}
}  // namespace

cudaError_t squared_distance(const Launch& l, Elem t, const void* a, const void* b, int64_t n,
                             double* partials, int blocks) {
  if (n <= 0 || blocks < 1 || blocks > kSquaredDistanceMaxBlocks) return cudaErrorInvalidValue;
  if (t == Elem::kF32) {
    return launch_kernel(l, squared_distance_kernel<float>, blocks, 256, 0,
                         static_cast<const float*>(a), static_cast<const float*>(b), n, partials);
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, squared_distance_kernel<T>, blocks, 256, 0, static_cast<const T*>(a),
                         static_cast<const T*>(b), n, partials);
  });
}

cudaError_t convert(const Launch& l, Elem src_type, const void* src, Elem dst_type, void* dst,
                    int64_t n) {
  if (n <= 0) return cudaSuccess;
  switch (src_type) {
    case Elem::kF16:
      return convert_from(l, static_cast<const __half*>(src), dst_type, dst, n);
    case Elem::kBF16:
      return convert_from(l, static_cast<const __nv_bfloat16*>(src), dst_type, dst, n);
    case Elem::kF32:
      return convert_from(l, static_cast<const float*>(src), dst_type, dst, n);
  }
  return cudaErrorInvalidValue;
}

cudaError_t add_bias(const Launch& l, Elem t, void* out, const float* bias, int64_t rows,
                     int64_t cols) {
  if (rows * cols <= 0) return cudaSuccess;
  const int grid = grid_for(rows * cols, 256);
  if (t == Elem::kF32) {
    return launch_kernel(l, add_bias_kernel<float>, grid, 256, 0, static_cast<float*>(out), bias,
                         rows, cols);
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, add_bias_kernel<T>, grid, 256, 0, static_cast<T*>(out), bias, rows,
                         cols);
  });
}

cudaError_t fill_random(const Launch& l, Elem t, void* out, int64_t n, uint64_t seed, float scale) {
  if (n <= 0) return cudaSuccess;
  const int grid = grid_for(n, 256) < 8192 ? grid_for(n, 256) : 8192;
  if (t == Elem::kF32) {
    return launch_kernel(l, fill_random_kernel<float>, grid, 256, 0, static_cast<float*>(out), n,
                         seed, scale);
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, fill_random_kernel<T>, grid, 256, 0, static_cast<T*>(out), n, seed,
                         scale);
  });
}

}  // namespace hearth::kernels
