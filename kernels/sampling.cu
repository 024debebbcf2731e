// Token sampling on the GPU, with the semantics and order of engine/sampling/sampler.cpp:
// penalties, then (greedy) the first maximum, or else candidates sorted by logit (ties: lower id
// first), top-k, softmax at the temperature in double precision, top-p, min-p and one draw from
// the renormalised mass; or, for a row that checks a speculative proposal, the test of
// engine/sampling/speculative_sampling.cpp over the same candidates. Only the chosen ids leave
// the device.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <climits>

#include "kernels/common.cuh"

namespace hearth::kernels {
namespace {

template <class T>
__global__ void logits_to_f32_kernel(const T* src, int64_t n, float* dst) {
  pdl_wait();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = to_f(src[i]) + 0.0f;  // -0 + 0 = +0
  }
}

__global__ void apply_penalties_kernel(float* logits, int64_t vocab, const PenaltyEntry* entries,
                                       int64_t count) {
  pdl_wait();
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const PenaltyEntry e = entries[i];
  if (e.token < 0 || e.token >= vocab) return;
  float& x = logits[int64_t(e.row) * vocab + e.token];
  float v = x;
  if (e.repetition != 1.0f) v = v > 0.0f ? v / e.repetition : v * e.repetition;
  if (e.subtract != 0.0f) v -= e.subtract;
  x = v;
}

// First maximum of each row (a value wins over an equal one at a higher index).
__global__ void argmax_kernel(const float* logits, int64_t vocab, int32_t* out) {
  __shared__ float best_v[32];
  __shared__ int32_t best_i[32];
  pdl_wait();
  const float* row = logits + blockIdx.x * vocab;
  float bv = -INFINITY;
  int32_t bi = INT_MAX;
  auto consider = [&](float v, int64_t i) {
    if (v > bv || (v == bv && i < bi) || bi == INT_MAX) {
      bv = v;
      bi = static_cast<int32_t>(i);
    }
  };
  if (vocab % 4 == 0) {
    // 16-byte loads, four in flight per thread (a dependent chain of scalar loads was slow).
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t n4 = vocab / 4;
    for (int64_t base = threadIdx.x; base < n4; base += 4 * int64_t(blockDim.x)) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int64_t j = base + u * int64_t(blockDim.x);
        v[u] = j < n4 ? row4[j] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int64_t j = base + u * int64_t(blockDim.x);
        if (j < n4) {
          consider(v[u].x, 4 * j);
          consider(v[u].y, 4 * j + 1);
          consider(v[u].z, 4 * j + 2);
          consider(v[u].w, 4 * j + 3);
        }
      }
    }
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) consider(row[i], i);
  }
  auto better = [](float v, int32_t i, float bv, int32_t bi) {
    return v > bv || (v == bv && i < bi) || bi == INT_MAX;
  };
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, bv, o);
    const int32_t i = __shfl_xor_sync(0xffffffffu, bi, o);
    if (i != INT_MAX && better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) {
    best_v[warp] = bv;
    best_i[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x + 31) / 32; ++w) {
      if (best_i[w] != INT_MAX && better(best_v[w], best_i[w], bv, bi)) {
        bv = best_v[w];
        bi = best_i[w];
      }
    }
    out[blockIdx.x] = bi == INT_MAX ? 0 : bi;
  }
}

__global__ void sort_setup_kernel(int32_t* ids, int32_t* offsets, int64_t rows, int64_t vocab) {
  pdl_wait();
  const int64_t n = rows * vocab;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    ids[i] = static_cast<int32_t>(i % vocab);
    if (i % vocab == 0) offsets[i / vocab] = static_cast<int32_t>(i);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) offsets[rows] = static_cast<int32_t>(n);
}

// ---- block-wide double-precision helpers (blockDim.x a multiple of 32) ----
__device__ double block_sum_d(double v, double* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) total += scratch[w];
  return total;
}

// Exclusive prefix sum over threads in thread order.
__device__ double block_exclusive_scan_d(double v, double* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  double inclusive = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const double up = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += up;
  }
  __syncthreads();
  if (lane == 31) scratch[warp] = inclusive;
  __syncthreads();
  double before = 0.0;
  for (int w = 0; w < warp; ++w) before += scratch[w];
  return before + inclusive - v;
}

__device__ int block_min_i(int v, int* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  int m = INT_MAX;
  for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) m = min(m, scratch[w]);
  return m;
}

constexpr int kSampleThreads = 1024;

__global__ void __launch_bounds__(kSampleThreads)
    sample_sorted_kernel(const float* keys, const int32_t* ids, int64_t vocab,
                         const SampleRowParams* params, const float* draft_probs, int32_t* out) {
  __shared__ double scratch_d[32];
  __shared__ int scratch_i[32];
  pdl_wait();
  const int64_t row = blockIdx.x;
  const float* k = keys + row * vocab;
  const int32_t* id = ids + row * vocab;
  const SampleRowParams p = params[row];
  if (p.temperature <= 0.0f || p.top_k == 1) {
    if (threadIdx.x == 0) out[row] = id[0];
    return;
  }
  const int n0 = static_cast<int>(p.top_k > 0 && p.top_k < vocab ? p.top_k : vocab);
  const double top = k[0];
  const double inv_t = 1.0 / static_cast<double>(p.temperature);
  const int chunk = (n0 + kSampleThreads - 1) / kSampleThreads;
  const int begin = min(n0, static_cast<int>(threadIdx.x) * chunk);
  const int end = min(n0, begin + chunk);
  auto prob = [&](int i) { return exp((static_cast<double>(k[i]) - top) * inv_t); };

  double local = 0.0;
  for (int i = begin; i < end; ++i) local += prob(i);
  const double sum = block_sum_d(local, scratch_d);

  int n = n0;
  if (p.top_p < 1.0f) {
    double mine = 0.0;
    for (int i = begin; i < end; ++i) mine += prob(i) / sum;
    double cum = block_exclusive_scan_d(mine, scratch_d);
    int found = INT_MAX;
    for (int i = begin; i < end; ++i) {
      cum += prob(i) / sum;
      if (cum >= p.top_p) {
        found = i;
        break;
      }
    }
    const int first = block_min_i(found, scratch_i);
    if (first != INT_MAX) n = first + 1;
  }
  if (p.min_p > 0.0f) {
    const double floor = p.min_p * (prob(0) / sum);
    int found = INT_MAX;
    for (int i = max(begin, 1); i < min(end, n); ++i) {
      if (prob(i) / sum < floor) {
        found = i;
        break;
      }
    }
    const int first = block_min_i(found, scratch_i);
    if (first != INT_MAX) n = first;
  }

  const int stop = min(end, n);
  double mine = 0.0;
  for (int i = begin; i < stop; ++i) mine += prob(i) / sum;
  const double mass = block_sum_d(mine, scratch_d);
  if (p.proposed >= 0) {
    // Checking a proposal: verify_proposal's arithmetic over the sorted candidates.
    if (n == 1) {
      if (threadIdx.x == 0) out[row] = id[0];
      return;
    }
    int found = INT_MAX;
    for (int i = begin; i < stop; ++i) {
      if (id[i] == p.proposed) {
        found = i;
        break;
      }
    }
    const int at = block_min_i(found, scratch_i);
    const float* q = p.draft_row >= 0 ? draft_probs + int64_t(p.draft_row) * vocab : nullptr;
    const double p_proposed = at == INT_MAX ? 0.0 : prob(at) / sum / mass;
    const double q_proposed = q ? static_cast<double>(q[p.proposed]) : 1.0;
    if (p_proposed > 0 && static_cast<double>(p.accept_uniform) * q_proposed < p_proposed) {
      if (threadIdx.x == 0) out[row] = p.proposed;
      return;
    }
    auto residual = [&](int i) {
      const double qi = q ? static_cast<double>(q[id[i]]) : (id[i] == p.proposed ? 1.0 : 0.0);
      return fmax(0.0, prob(i) / sum / mass - qi);
    };
    double mine_r = 0.0;
    for (int i = begin; i < stop; ++i) mine_r += residual(i);
    const double mass_r = block_sum_d(mine_r, scratch_d);
    if (!(mass_r > 0.0)) {  // p <= q everywhere: p == q up to rounding, the proposal stands
      if (threadIdx.x == 0) out[row] = p.proposed;
      return;
    }
    const double target = static_cast<double>(p.residual_uniform) * mass_r;
    double cum_r = block_exclusive_scan_d(mine_r, scratch_d);
    int hit = INT_MAX;
    for (int i = begin; i < stop; ++i) {
      const double r = residual(i);
      cum_r += r;
      if (target < cum_r && r > 0.0) {
        hit = i;
        break;
      }
    }
    int pick = block_min_i(hit, scratch_i);
    if (pick == INT_MAX) {  // rounding left the target past the end: the last positive one
      int last = INT_MAX;
      for (int i = begin; i < stop; ++i) {
        if (residual(i) > 0.0) last = -i;
      }
      pick = -block_min_i(last, scratch_i);
    }
    if (threadIdx.x == 0) out[row] = id[pick];
    return;
  }
  const double u = static_cast<double>(p.uniform) * mass;
  double cum = block_exclusive_scan_d(mine, scratch_d);
  int found = INT_MAX;
  for (int i = begin; i < stop; ++i) {
    cum += prob(i) / sum;
    if (u < cum) {
      found = i;
      break;
    }
  }
  const int pick = block_min_i(found, scratch_i);
  if (threadIdx.x == 0) out[row] = id[pick == INT_MAX ? n - 1 : pick];
}

int grid_for(int64_t work, int threads) {
  const int64_t blocks = ceil_div(work, threads);
  return static_cast<int>(blocks < 1 ? 1 : blocks < 65536 ? blocks : 65536);
}

}  // namespace

cudaError_t logits_to_f32(const Launch& l, Elem t, const void* src, int64_t rows, int64_t vocab,
                          float* dst) {
  const int64_t n = rows * vocab;
  if (n <= 0) return cudaSuccess;
  if (t == Elem::kF32) {
    return launch_kernel(l, logits_to_f32_kernel<float>, grid_for(n, 256), 256, 0,
                         static_cast<const float*>(src), n, dst);
  }
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, logits_to_f32_kernel<T>, grid_for(n, 256), 256, 0,
                         static_cast<const T*>(src), n, dst);
  });
}

cudaError_t apply_penalties(const Launch& l, float* logits, int64_t vocab,
                            const PenaltyEntry* entries, int64_t count) {
  if (count <= 0) return cudaSuccess;
  return launch_kernel(l, apply_penalties_kernel, grid_for(count, 256), 256, 0, logits, vocab,
                       entries, count);
}

cudaError_t argmax_rows(const Launch& l, const float* logits, int64_t rows, int64_t vocab,
                        int32_t* out) {
  if (rows <= 0) return cudaSuccess;
  return launch_kernel(l, argmax_kernel, dim3(static_cast<unsigned>(rows)), 1024, 0, logits, vocab,
                       out);
}

size_t sort_rows_scratch_bytes(int64_t rows, int64_t vocab) {
  size_t bytes = 0;
  cub::DeviceSegmentedRadixSort::SortPairsDescending(
      nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<int>(rows * vocab), static_cast<int>(rows), static_cast<const int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr));
  return bytes;
}

cudaError_t sort_rows_desc(const Launch& l, const float* keys_in, float* keys_out, int32_t* ids_in,
                           int32_t* ids_out, int32_t* offsets, int64_t rows, int64_t vocab,
                           void* scratch, size_t scratch_bytes) {
  if (rows <= 0) return cudaSuccess;
  Launch plain = l;
  plain.pdl = false;
  cudaError_t e = launch_kernel(plain, sort_setup_kernel, grid_for(rows * vocab, 256), 256, 0,
                                ids_in, offsets, rows, vocab);
  if (e != cudaSuccess) return e;
  return cub::DeviceSegmentedRadixSort::SortPairsDescending(
      scratch, scratch_bytes, keys_in, keys_out, static_cast<const int32_t*>(ids_in), ids_out,
      static_cast<int>(rows * vocab), static_cast<int>(rows), static_cast<const int32_t*>(offsets),
      static_cast<const int32_t*>(offsets + 1), 0, 32, l.stream);
}

cudaError_t sample_sorted(const Launch& l, const float* sorted_logits, const int32_t* sorted_ids,
                          int64_t rows, int64_t vocab, const SampleRowParams* params,
                          const float* draft_probs, int32_t* out) {
  if (rows <= 0) return cudaSuccess;
  return launch_kernel(l, sample_sorted_kernel, dim3(static_cast<unsigned>(rows)), kSampleThreads,
                       0, sorted_logits, sorted_ids, vocab, params, draft_probs, out);
}

}  // namespace hearth::kernels
