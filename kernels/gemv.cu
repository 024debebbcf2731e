// Matrix-vector products for decode: out[R, N] = x[R, K] · W[N, K]ᵀ with R small (1..64).
//
// Tensor-core GEMV, one warp per work item. An item is 16 output features × a slice of K; the
// warp streams its slice of W through a private ring of shared-memory stages filled with
// cp.async (16-byte copies, four stages in flight while one is consumed, no block barriers:
// each thread reads back only what it copied). The copies of the first stages are issued before
// griddepcontrol.wait, so under programmatic dependent launch they overlap the previous kernel.
//
// Fragments: thread (g = lane/4, t = lane%4) copies 8 consecutive inputs of features g and g+8.
// mma.sync m16n8k16 wants another k order in its fragments, but a dot product does not care
// about the order of k as long as x uses the same one, so x is loaded with the identical layout
// and the 16-byte words go to the MMA as they are. x rows are the MMA's N (8 per n-tile).
//
// Split-K: slices are sized from (N, K, SM count) only, so every output row is computed the same
// way whatever R is (decode is batch-invariant). Items of one tile write fp32 partials; the last
// warp to finish a tile sums them in a fixed order. Up to three matrices that share x (q, k, v;
// gate, up) run in one launch.
#include "kernels/common.cuh"

namespace hearth::kernels {
namespace {

constexpr int kWarps = 4;    // warps (items) per block
constexpr int kStages = 5;   // ring depth per warp
constexpr int kStageK = 64;  // inputs per stage (two 32-input MMA steps)
constexpr int kTileN = 16;   // output features per item
constexpr int kItemsPerSm = 8;

struct Plan {
  int tiles = 0;
  int splits = 0;
  int kps = 0;  // inputs per split, a multiple of kStageK
};

Plan make_plan(int64_t n, int64_t k, int sms) {
  Plan p;
  p.tiles = static_cast<int>(ceil_div(n, kTileN));
  const int64_t target = int64_t(sms > 0 ? sms : 132) * kItemsPerSm;
  int64_t splits = std::max<int64_t>(1, ceil_div(target, p.tiles));
  splits = std::min<int64_t>(splits, ceil_div(k, kStageK));
  p.kps = static_cast<int>(ceil_div(ceil_div(k, splits), kStageK) * kStageK);
  p.splits = static_cast<int>(ceil_div(k, p.kps));
  return p;
}

int ntiles_for(int64_t rows) {
  return rows <= 8 ? 1 : rows <= 16 ? 2 : rows <= 32 ? 4 : 8;
}

struct Matrix {
  const void* w;
  const float* bias;
  void* out;
  int n;
  int splits;
  int kps;
  int item_begin;
  int64_t partial_offset;  // floats into the partials
  int counter_offset;      // ints into the counters
  bool out_f32;
};

struct Group {
  Matrix m[kGemvMaxMatrices];
  int count;
  int items;
};

template <class T, int NT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(Group group, const T* x, int k, int rows, float* partials, int32_t* counters) {
  __shared__ uint4 ring[kWarps][kStages][4][32];  // 40 KB

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int item = blockIdx.x * kWarps + warp;
  pdl_launch_dependents();
  if (item >= group.items) return;

  // This item's matrix (selected without indexing the parameter array at run time).
  Matrix m = group.m[0];
#pragma unroll
  for (int i = 1; i < kGemvMaxMatrices; ++i) {
    if (i < group.count && item >= group.m[i].item_begin) m = group.m[i];
  }
  const T* w = static_cast<const T*>(m.w);
  const int local = item - m.item_begin;
  const int tile = local / m.splits;
  const int split = local % m.splits;
  const int k_begin = split * m.kps;
  const int k_end = min(k, k_begin + m.kps);
  const int stages = (k_end - k_begin + kStageK - 1) / kStageK;
  const int row0 = tile * kTileN + g;
  const int row1 = row0 + 8;
  const int n = m.n;

  auto issue = [&](int stage) {
    const int slot = stage % kStages;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int kk = k_begin + stage * kStageK + j * 32 + t * 8;
      const bool in_k = kk < k_end;
      cp_async16(&ring[warp][slot][2 * j][lane], in_k && row0 < n ? w + int64_t(row0) * k + kk : w,
                 in_k && row0 < n);
      cp_async16(&ring[warp][slot][2 * j + 1][lane],
                 in_k && row1 < n ? w + int64_t(row1) * k + kk : w, in_k && row1 < n);
    }
  };
  // Weights do not depend on the previous kernel: start streaming before waiting for it.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < stages) issue(s);
    cp_async_commit();
  }
  pdl_wait();

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  for (int it = 0; it < stages; ++it) {
    cp_async_wait<kStages - 2>();
    // Refill the slot consumed in the previous iteration.
    if (it + kStages - 1 < stages) issue(it + kStages - 1);
    cp_async_commit();
    const int slot = it % kStages;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const uint4 w0 = ring[warp][slot][2 * j][lane];
      const uint4 w1 = ring[warp][slot][2 * j + 1][lane];
      const uint32_t a_lo[4] = {w0.x, w1.x, w0.y, w1.y};
      const uint32_t a_hi[4] = {w0.z, w1.z, w0.w, w1.w};
      const int kk = k_begin + it * kStageK + j * 32 + t * 8;
      const bool in_k = kk < k_end;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int r = nt * 8 + g;
        const uint4 xv = (r < rows && in_k) ? load16(x + int64_t(r) * k + kk) : zero;
        mma_16816<T>(acc[nt], a_lo, xv.x, xv.y);
        mma_16816<T>(acc[nt], a_hi, xv.z, xv.w);
      }
    }
  }
  cp_async_wait<0>();

  auto store = [&](int row, int col, float value) {
    if (m.bias) value += m.bias[row];
    if (m.out_f32) {
      static_cast<float*>(m.out)[int64_t(col) * n + row] = value;
    } else {
      static_cast<T*>(m.out)[int64_t(col) * n + row] = from_f<T>(value);
    }
  };
  if (m.splits == 1) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int row = c < 2 ? row0 : row1;
        const int col = nt * 8 + 2 * t + (c & 1);
        if (row < n && col < rows) store(row, col, acc[nt][c]);
      }
    }
    return;
  }
  constexpr int kRowsPadded = NT * 8;
  float* part = partials + m.partial_offset;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int row = c < 2 ? row0 : row1;
      const int col = nt * 8 + 2 * t + (c & 1);
      if (row < n && col < rows) part[(int64_t(split) * kRowsPadded + col) * n + row] = acc[nt][c];
    }
  }
  __threadfence();
  __syncwarp();
  int32_t* counter = counters + m.counter_offset + tile;
  int done = 0;
  if (lane == 0) done = atomicAdd(counter, 1);
  done = __shfl_sync(0xffffffffu, done, 0);
  if (done != m.splits - 1) return;
  __threadfence();
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int row = c < 2 ? row0 : row1;
      const int col = nt * 8 + 2 * t + (c & 1);
      if (row < n && col < rows) {
        // Batches of independent loads (a dependent chain of L2 reads was the tail before),
        // summed in split order.
        float sum = 0.0f;
        for (int s0 = 0; s0 < m.splits; s0 += 8) {
          float v[8];
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            v[u] = s0 + u < m.splits
                       ? __ldcg(&part[(int64_t(s0 + u) * kRowsPadded + col) * n + row])
                       : 0.0f;
          }
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            if (s0 + u < m.splits) sum += v[u];
          }
        }
        store(row, col, sum);
      }
    }
  }
  __syncwarp();
  if (lane == 0) *counter = 0;  // ready for the next launch
}

// One x row (batch-1 decode): one warp per output feature, CUDA cores. Many small blocks keep
// every multiprocessor busy to the end (no split-K, no tail). Two variants (measured in the
// benchmark; which wins depends on the shape):
//  0: four 16-byte loads per lane per iteration, 32 registers, the highest occupancy (ptxas
//     schedules the loads one at a time next to their FMAs; occupancy hides the latency);
//  1: eight loads in flight per lane (__launch_bounds__(128, 4) makes ptxas keep them together)
//     and, on sm_90, an L2 bulk prefetch of the row's start issued before griddepcontrol.wait,
//     so it overlaps the previous kernel.
struct RowMatrix {
  const void* w;
  const float* bias;
  void* out;
  int n;  // output features (the stride of out's rows)
  int row_begin;
  bool out_f32;
};

struct RowGroup {
  RowMatrix m[kGemvMaxMatrices];
  int count;
  int rows;  // output features of all matrices
};

// The matrix of a group that output feature `feature` belongs to (without indexing the parameter
// array at run time).
__device__ __forceinline__ RowMatrix matrix_of(const RowGroup& group, int feature) {
  RowMatrix m = group.m[0];
#pragma unroll
  for (int i = 1; i < kGemvMaxMatrices; ++i) {
    if (i < group.count && feature >= group.m[i].row_begin) m = group.m[i];
  }
  return m;
}

// Output `row` of x row r: the warp's sum plus the bias, in the output's type.
template <class T>
__device__ __forceinline__ void store_row(const RowMatrix& m, int r, int row, float v) {
  if (m.bias) v += m.bias[row];
  if (m.out_f32) {
    static_cast<float*>(m.out)[int64_t(r) * m.n + row] = v;
  } else {
    static_cast<T*>(m.out)[int64_t(r) * m.n + row] = from_f<T>(v);
  }
}

// Output feature `feature` of the group (a warp's): its matrix, its row there, and that row's
// weights of length k.
template <class T>
struct FeatureRow {
  RowMatrix m;
  int row;
  const T* w;
};
template <class T>
__device__ __forceinline__ FeatureRow<T> feature_row(const RowGroup& group, int feature, int k) {
  const RowMatrix m = matrix_of(group, feature);
  const int row = feature - m.row_begin;
  return {m, row, static_cast<const T*>(m.w) + int64_t(row) * k};
}

template <class T, int kUnroll, bool kPrefetch>
__device__ __forceinline__ void gemv_row_body(const RowGroup& group, const T* x, int k) {
  const int feature = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  pdl_launch_dependents();
  if (feature >= group.rows) return;
  const auto [m, row, wr] = feature_row<T>(group, feature, k);
  if (kPrefetch && lane == 0) prefetch_l2(wr, static_cast<unsigned>(min(k * 2, 8192)));
  pdl_wait();
  const int chunks = k / 8;
  float acc = 0.0f;
  for (int c0 = lane; c0 < chunks; c0 += 32 * kUnroll) {
    uint4 wv[kUnroll], xv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = c0 + 32 * u;
      wv[u] = c < chunks ? load_stream(wr + c * 8) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = c0 + 32 * u;
      xv[u] = c < chunks ? load16(x + c * 8) : make_uint4(0, 0, 0, 0);
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
  if (lane == 0) store_row<T>(m, 0, row, acc);
}

template <class T>
__global__ void __launch_bounds__(128) gemv_row_kernel(RowGroup group, const T* x, int k) {
  gemv_row_body<T, 4, false>(group, x, k);
}

template <class T>
__global__ void __launch_bounds__(128, 4) gemv_row_deep_kernel(RowGroup group, const T* x, int k) {
  gemv_row_body<T, 8, true>(group, x, k);
}

// Several x rows (a speculative check batch), each with exactly the one-row kernel's arithmetic:
// a warp per output feature reads its weights once for all kRows rows, and for every row each
// lane walks its chunks in the same order (lane, lane + 32, ...) with the same fmaf chain, then
// the same warp sum, so row r gets the bits gemv_row_body gives it alone (a chunk past K there
// adds 0·0 to a sum that is never −0, which leaves it unchanged). One instance per row count, so
// the loop has no per-row branches and the rows' independent chains interleave: on an H200 (8B
// shapes) 9 rows cost about 2× one row, 2.8× with a runtime row count (docs/PERFORMANCE.md).
template <class T, int kRows>
__global__ void __launch_bounds__(128) gemv_rows_kernel(RowGroup group, const T* x, int k) {
  const int feature = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  pdl_launch_dependents();
  if (feature >= group.rows) return;
  const auto [m, row, wr] = feature_row<T>(group, feature, k);
  pdl_wait();
  const int chunks = k / 8;
  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
  for (int c = lane; c < chunks; c += 32) {
    float a[8];
    unpack8<T>(load_stream(wr + c * 8), a);
    uint4 xv[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) xv[r] = load16(x + int64_t(r) * k + c * 8);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float b[8];
      unpack8<T>(xv[r], b);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[r] = fmaf(a[i], b[i], acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0) store_row<T>(m, r, row, v);
  }
}

template <class T, int R>
cudaError_t launch_rows(const Launch& l, const RowGroup& group, dim3 grid, int threads, const T* x,
                        int k, int rows) {
  if constexpr (R > kGemvRowsMaxRows) {
    return cudaErrorInvalidValue;
  } else {
    if (rows == R) return launch_kernel(l, gemv_rows_kernel<T, R>, grid, threads, 0, group, x, k);
    return launch_rows<T, R + 1>(l, group, grid, threads, x, k, rows);
  }
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

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

template <class T, int NT>
cudaError_t launch_group(const Launch& l, const Group& group, const void* x, int64_t rows,
                         int64_t k, const GemvScratch& scratch) {
  const dim3 grid(static_cast<unsigned>(ceil_div(group.items, kWarps)));
  return launch_kernel(l, gemv_kernel<T, NT>, grid, dim3(kWarps * 32), 0, group,
                       static_cast<const T*>(x), static_cast<int>(k), static_cast<int>(rows),
                       scratch.partials, scratch.counters);
}

}  // namespace

bool gemv_supported(int64_t n, int64_t k, int64_t rows) {
  return rows >= 1 && rows <= kGemvMaxRows && k % 8 == 0 && k > 0 && n > 0 &&
         n < (int64_t(1) << 28) && k < (int64_t(1) << 28);
}

size_t gemv_partial_floats(int64_t n, int64_t k, int64_t rows, int sms) {
  const Plan p = make_plan(n, k, sms);
  if (p.splits <= 1) return 0;
  return static_cast<size_t>(p.splits) * static_cast<size_t>(ntiles_for(rows) * 8) *
         static_cast<size_t>(n);
}

size_t gemv_counters(int64_t n) {
  return static_cast<size_t>(ceil_div(n, kTileN));
}

cudaError_t gemv_group(const Launch& l, Elem t, const GemvOutput* outputs, int count, const void* x,
                       int64_t rows, int64_t k, const GemvScratch& scratch) {
  if (count < 1 || count > kGemvMaxMatrices || !aligned16(x)) return cudaErrorInvalidValue;
  Group group{};
  group.count = count;
  int64_t items = 0, partial = 0, counter = 0;
  for (int i = 0; i < count; ++i) {
    const GemvOutput& o = outputs[i];
    if (!gemv_supported(o.n, k, rows) || !aligned16(o.w)) return cudaErrorInvalidValue;
    const Plan p = make_plan(o.n, k, l.sm_count);
    Matrix& m = group.m[i];
    m.w = o.w;
    m.bias = o.bias;
    m.out = o.out;
    m.n = static_cast<int>(o.n);
    m.splits = p.splits;
    m.kps = p.kps;
    m.item_begin = static_cast<int>(items);
    m.partial_offset = partial;
    m.counter_offset = static_cast<int>(counter);
    m.out_f32 = o.out_type == Elem::kF32;
    items += int64_t(p.tiles) * p.splits;
    partial += static_cast<int64_t>(gemv_partial_floats(o.n, k, rows, l.sm_count));
    counter += p.tiles;
  }
  if (items >= (int64_t(1) << 31)) return cudaErrorInvalidValue;
  group.items = static_cast<int>(items);
  HEARTH_DISPATCH_16(t, T, {
    switch (ntiles_for(rows)) {
      case 1:
        return launch_group<T, 1>(l, group, x, rows, k, scratch);
      case 2:
        return launch_group<T, 2>(l, group, x, rows, k, scratch);
      case 4:
        return launch_group<T, 4>(l, group, x, rows, k, scratch);
      default:
        return launch_group<T, 8>(l, group, x, rows, k, scratch);
    }
  });
}

cudaError_t gemv(const Launch& l, Elem t, const void* w, const float* bias, const void* x,
                 int64_t rows, int64_t n, int64_t k, void* out, Elem out_t,
                 const GemvScratch& scratch) {
  const GemvOutput o{w, bias, out, out_t, n};
  return gemv_group(l, t, &o, 1, x, rows, k, scratch);
}

cudaError_t gemv_row(const Launch& l, Elem t, const GemvOutput* outputs, int count, const void* x,
                     int64_t rows, int64_t k, int variant) {
  if (count < 1 || count > kGemvMaxMatrices || k % 8 != 0 || !aligned16(x) || rows < 1 ||
      rows > kGemvRowsMaxRows || k >= (int64_t(1) << 28)) {
    return cudaErrorInvalidValue;
  }
  RowGroup group{};
  group.count = count;
  int64_t features = 0;
  for (int i = 0; i < count; ++i) {
    if (!aligned16(outputs[i].w) || outputs[i].n < 1) return cudaErrorInvalidValue;
    group.m[i] = RowMatrix{outputs[i].w,
                           outputs[i].bias,
                           outputs[i].out,
                           static_cast<int>(outputs[i].n),
                           static_cast<int>(features),
                           outputs[i].out_type == Elem::kF32};
    features += outputs[i].n;
  }
  if (features >= (int64_t(1) << 26)) return cudaErrorInvalidValue;
  group.rows = static_cast<int>(features);
  const int threads = 128;
  const dim3 grid(static_cast<unsigned>(ceil_div(features * 32, threads)));
  HEARTH_DISPATCH_16(t, T, {
    const auto* xt = static_cast<const T*>(x);
    if (rows > 1) return launch_rows<T, 2>(l, group, grid, threads, xt, int(k), int(rows));
    if (variant == 1) {
      return launch_kernel(l, gemv_row_deep_kernel<T>, grid, threads, 0, group, xt, int(k));
    }
    return launch_kernel(l, gemv_row_kernel<T>, grid, threads, 0, group, xt, int(k));
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
