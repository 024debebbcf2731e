// The all-reduce of tensor parallelism for small messages (decode steps): one kernel per device,
// reading the other devices' memory directly over NVLink / PCIe peer access. NCCL's ring takes
// ~16 us for a decode step's 8 KB on two H200s, most of it fixed cost; here each block stores
// its slice of the device's partial result into every device's staging buffer, meets the same
// block of every other device at a flag barrier, and sums the staged slices in float in device
// order (so every device gets the same bits). Barriers count calls in device memory (`epochs`),
// so a captured CUDA graph replays them as they are.
#include "kernels/common.cuh"
#include "kernels/rms_sum.cuh"

namespace hearth::kernels {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void store_release(uint32_t* at, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(at), "r"(value) : "memory");
}

__device__ __forceinline__ uint32_t load_acquire(const uint32_t* at) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(at) : "memory");
  return value;
}

// Block `block` of every device reaches this point of call `epoch` before any goes on. Flag
// [block][r] of device d holds the last epoch device r announced to d.
__device__ void meet(const AllReducePeers& p, int block, uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x < p.ranks) {
    const int r = threadIdx.x;
    const int slot = block * kAllReduceMaxRanks;
    __threadfence_system();
    store_release(p.flags[r] + slot + p.rank, epoch);
    const uint32_t* mine = p.flags[p.rank] + slot + r;
    while (static_cast<int32_t>(load_acquire(mine) - epoch) < 0) {
    }
  }
  __syncthreads();
}

// Each device pushes its slice of 16-byte vectors into slot [set][rank] of every device's staging
// (remote stores stream without waiting), meets the others once, then sums its own staging slots
// locally. Calls alternate between two sets of slots: a device a call ahead writes the other
// set, and cannot get two calls ahead before this one has read its set (it would need this
// device's next flag).
template <class T>
__global__ void __launch_bounds__(kThreads)
    all_reduce_kernel(uint4* data, int64_t vectors, int active, AllReducePeers p) {
  constexpr int kPerVector = 16 / sizeof(T);
  const int block = blockIdx.x;
  // Every call advances every block's counter, working or not: all of a device's counters then
  // name the same call, so a call's set of slots is the same for every vector whichever block
  // carries it (which block takes which vectors changes with the message's size).
  if (block >= active) {
    if (threadIdx.x == 0) p.epochs[block] += 1;
    return;
  }
  const int64_t per_block = (vectors + active - 1) / active;
  const int64_t begin = block * per_block;
  const int64_t end = begin + per_block < vectors ? begin + per_block : vectors;
  __shared__ uint32_t epoch;
  if (threadIdx.x == 0) epoch = p.epochs[block] + 1;
  __syncthreads();
  const int set = epoch & 1;
  const int64_t slot_vectors = p.slot_bytes / 16;
  auto slot = [&](int device, int from) {
    return static_cast<uint4*>(p.staging[device]) + (set * p.ranks + from) * slot_vectors;
  };
  for (int64_t v = begin + threadIdx.x; v < end; v += kThreads) {
    const uint4 value = data[v];
    for (int r = 0; r < p.ranks; ++r) slot(r, p.rank)[v] = value;
  }
  meet(p, block, epoch);
  // The next kernel may start its own set-up now (programmatic dependent launch); from the
  // start, its blocks would compete with the exchange (8B EXL2 batch 1 ~1 % slower).
  pdl_launch_dependents();
  for (int64_t v = begin + threadIdx.x; v < end; v += kThreads) {
    float sum[kPerVector] = {};
    for (int r = 0; r < p.ranks; ++r) {
      const uint4 value = __ldcg(slot(p.rank, r) + v);  // L2: written by the other devices
      const T* x = reinterpret_cast<const T*>(&value);
      for (int i = 0; i < kPerVector; ++i) sum[i] += to_f(x[i]);
    }
    uint4 out;
    T* y = reinterpret_cast<T*>(&out);
    for (int i = 0; i < kPerVector; ++i) y[i] = from_f<T>(sum[i]);
    data[v] = out;
  }
  if (threadIdx.x == 0) p.epochs[block] = epoch;
}

// The same exchange for one row per block, followed by what the row-parallel linear's consumer
// does with the sum (rms_norm_kernel with a delta, elementwise.cu): residual += the sum (rounded
// to T), out = RMSNorm(residual) · w, the sum of squares in rms_sum.cuh's order (beyond its
// widths, the threads take the row's 8-value vectors in the order of that kernel with the same
// block size), so the bits are the same as the two steps.
template <class T>
__global__ void all_reduce_add_rms_norm_kernel(uint4* delta, uint4* residual,
                                               const float* __restrict__ w, float eps,
                                               int64_t row_vectors, uint4* out, int active,
                                               AllReducePeers p) {
  __shared__ float scratch[kRmsSumMaxCols / 32];
  __shared__ float slot_sums[kRmsMaxSlots];
  __shared__ uint32_t epoch;
  const int block = blockIdx.x;
  // As in all_reduce_kernel: every call advances every block's counter, working or not.
  if (block >= active) {
    if (threadIdx.x == 0) p.epochs[block] += 1;
    return;
  }
  if (threadIdx.x == 0) epoch = p.epochs[block] + 1;
  __syncthreads();
  const int set = epoch & 1;
  const int64_t slot_vectors = p.slot_bytes / 16;
  const int64_t begin = block * row_vectors;
  auto slot = [&](int device, int from) {
    return static_cast<uint4*>(p.staging[device]) + (set * p.ranks + from) * slot_vectors;
  };
  for (int64_t v = begin + threadIdx.x; v < begin + row_vectors; v += blockDim.x) {
    const uint4 value = delta[v];
    for (int r = 0; r < p.ranks; ++r) slot(r, p.rank)[v] = value;
  }
  meet(p, block, epoch);
  // The next kernel may start its own set-up now (programmatic dependent launch); from the
  // start, its blocks would compete with the exchange (8B EXL2 batch 1 ~1 % slower).
  pdl_launch_dependents();
  const bool in_sum_order = row_vectors * 8 <= kRmsSumMaxCols;
  float sum_sq = 0.0f;
  // Every thread takes every pass (the unit sums shuffle within warps).
  for (int64_t base = 0; base < row_vectors; base += blockDim.x) {
    const int64_t v = begin + base + threadIdx.x;
    const bool valid = v < begin + row_vectors;
    float x[8] = {};
    if (valid) {
      float sum[8] = {};
      for (int r = 0; r < p.ranks; ++r) {
        float part[8];
        unpack8<T>(__ldcg(slot(p.rank, r) + v), part);
        for (int i = 0; i < 8; ++i) sum[i] += part[i];
      }
      float d[8];
      const uint4 reduced = pack8<T>(sum);
      delta[v] = reduced;
      unpack8<T>(reduced, d);
      unpack8<T>(residual[v], x);
      for (int i = 0; i < 8; ++i) x[i] = to_f(from_f<T>(x[i] + d[i]));
      residual[v] = pack8<T>(x);
    }
    if (in_sum_order) {
      rms_unit_sum8(x, valid, (v - begin) * 8, scratch);
    } else {
      for (int i = 0; i < 8; ++i) sum_sq += x[i] * x[i];
    }
  }
  if (in_sum_order) {
    __syncthreads();
    sum_sq = rms_total(scratch, slot_sums, row_vectors * 8);
  } else {
    sum_sq = block_sum(sum_sq, scratch);
  }
  const float inv = 1.0f / sqrtf(sum_sq / static_cast<float>(row_vectors * 8) + eps);
  for (int64_t v = begin + threadIdx.x; v < begin + row_vectors; v += blockDim.x) {
    float x[8];
    unpack8<T>(residual[v], x);
    const float* wv = w + (v - begin) * 8;
    for (int i = 0; i < 8; ++i) x[i] = wv[i] * (x[i] * inv);
    out[v] = pack8<T>(x);
  }
  if (threadIdx.x == 0) p.epochs[block] = epoch;
}

}  // namespace

cudaError_t all_reduce_add_rms_norm_peers(const Launch& l, Elem t, void* delta, void* residual,
                                          const float* w, float eps, int64_t rows, int64_t cols,
                                          void* out, const AllReducePeers& peers) {
  if (rows <= 0) return cudaSuccess;
  const auto misaligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 != 0; };
  if (!all_reduce_add_rms_norm_fits(t, rows, cols, peers) || misaligned(delta) ||
      misaligned(residual) || misaligned(out)) {
    return cudaErrorInvalidValue;
  }
  // rms_norm_kernel's block size for this width (elementwise.cu), for the same sums.
  const int threads = cols <= 2048 ? 128 : cols <= 8192 ? 256 : 512;
  // Never starts early itself: waiting beside the kernel before it cost 3-4 % at batch 1.
  const Launch plain{l.stream, false, l.sm_count};
  auto* d = static_cast<uint4*>(delta);
  auto* r = static_cast<uint4*>(residual);
  auto* o = static_cast<uint4*>(out);
  const dim3 grid(kAllReduceMaxBlocks);  // blocks past `rows` only count the call
  switch (t) {
    case Elem::kF16:
      return launch_kernel(plain, all_reduce_add_rms_norm_kernel<__half>, grid, dim3(threads), 0, d,
                           r, w, eps, cols / 8, o, static_cast<int>(rows), peers);
    case Elem::kBF16:
      return launch_kernel(plain, all_reduce_add_rms_norm_kernel<__nv_bfloat16>, grid,
                           dim3(threads), 0, d, r, w, eps, cols / 8, o, static_cast<int>(rows),
                           peers);
    case Elem::kF32:
      break;
  }
  return cudaErrorInvalidValue;
}

bool all_reduce_add_rms_norm_fits(Elem t, int64_t rows, int64_t cols, const AllReducePeers& peers) {
  return t != Elem::kF32 && peers.ranks >= 2 && peers.ranks <= kAllReduceMaxRanks && rows >= 1 &&
         rows <= kAllReduceMaxBlocks && cols % 8 == 0 &&
         rows * cols * static_cast<int64_t>(elem_size(t)) <= peers.slot_bytes;
}

cudaError_t all_reduce_peers(const Launch& l, Elem t, void* data, int64_t count,
                             const AllReducePeers& peers) {
  if (count <= 0) return cudaSuccess;
  const int64_t bytes = count * static_cast<int64_t>(elem_size(t));
  if (peers.ranks < 2 || peers.ranks > kAllReduceMaxRanks || bytes % 16 != 0 ||
      bytes > peers.slot_bytes || reinterpret_cast<uintptr_t>(data) % 16 != 0) {
    return cudaErrorInvalidValue;
  }
  const int64_t vectors = bytes / 16;
  const auto active = static_cast<int>(ceil_div(vectors, kThreads) < kAllReduceMaxBlocks
                                           ? ceil_div(vectors, kThreads)
                                           : kAllReduceMaxBlocks);
  const dim3 blocks(kAllReduceMaxBlocks);           // past `active` they only count the call
  const Launch plain{l.stream, false, l.sm_count};  // as above
  auto* v = static_cast<uint4*>(data);
  switch (t) {
    case Elem::kF16:
      return launch_kernel(plain, all_reduce_kernel<__half>, blocks, dim3(kThreads), 0, v, vectors,
                           active, peers);
    case Elem::kBF16:
      return launch_kernel(plain, all_reduce_kernel<__nv_bfloat16>, blocks, dim3(kThreads), 0, v,
                           vectors, active, peers);
    case Elem::kF32:
      return launch_kernel(plain, all_reduce_kernel<float>, blocks, dim3(kThreads), 0, v, vectors,
                           active, peers);
  }
  return cudaErrorInvalidValue;
}

}  // namespace hearth::kernels
