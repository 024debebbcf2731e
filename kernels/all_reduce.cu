// The all-reduce of tensor parallelism for small messages (decode steps): one kernel per device,
// reading the other devices' memory directly over NVLink / PCIe peer access. NCCL's ring takes
// ~16 us for a decode step's 8 KB on two H200s, most of it fixed cost; here each block copies
// its slice of the device's partial result to the device's staging buffer, meets the same block
// of every other device at a flag barrier, sums every device's staging slice in float in device
// order (so every device gets the same bits), and meets them again before the staging buffer
// may be reused. Barriers count calls in device memory (`epochs`), so a captured CUDA graph
// replays them as they are.
#include "kernels/common.cuh"

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
// [block][phase][r] of device d holds the last epoch device r announced to d.
__device__ void meet(const AllReducePeers& p, int block, int phase, uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x < p.ranks) {
    const int r = threadIdx.x;
    const int slot = (block * 2 + phase) * kAllReduceMaxRanks;
    __threadfence_system();
    store_release(p.flags[r] + slot + p.rank, epoch);
    const uint32_t* mine = p.flags[p.rank] + slot + r;
    while (static_cast<int32_t>(load_acquire(mine) - epoch) < 0) {
    }
  }
  __syncthreads();
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    all_reduce_kernel(T* data, int64_t count, AllReducePeers p) {
  const int block = blockIdx.x;
  const int64_t per_block = (count + gridDim.x - 1) / gridDim.x;
  const int64_t begin = block * per_block;
  const int64_t end = begin + per_block < count ? begin + per_block : count;
  __shared__ uint32_t epoch;
  if (threadIdx.x == 0) epoch = p.epochs[block] + 1;
  T* staging = static_cast<T*>(p.staging[p.rank]);
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) staging[i] = data[i];
  meet(p, block, 0, epoch);
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    float sum = 0.0f;
    for (int r = 0; r < p.ranks; ++r) {
      sum += to_f(static_cast<const volatile T*>(p.staging[r])[i]);
    }
    data[i] = from_f<T>(sum);
  }
  meet(p, block, 1, epoch);
  if (threadIdx.x == 0) p.epochs[block] = epoch;
}

}  // namespace

cudaError_t all_reduce_peers(const Launch& l, Elem t, void* data, int64_t count,
                             const AllReducePeers& peers) {
  if (count <= 0) return cudaSuccess;
  if (peers.ranks < 2 || peers.ranks > kAllReduceMaxRanks) return cudaErrorInvalidValue;
  // Blocks of a few thousand elements: enough to keep several SMs reading peers at once.
  const auto blocks = static_cast<unsigned>(
      ceil_div(count, 2048) < kAllReduceMaxBlocks ? ceil_div(count, 2048) : kAllReduceMaxBlocks);
  const Launch plain{l.stream, false, l.sm_count};  // spins: never starts early (PDL)
  switch (t) {
    case Elem::kF16:
      return launch_kernel(plain, all_reduce_kernel<__half>, dim3(blocks), dim3(kThreads), 0,
                           static_cast<__half*>(data), count, peers);
    case Elem::kBF16:
      return launch_kernel(plain, all_reduce_kernel<__nv_bfloat16>, dim3(blocks), dim3(kThreads), 0,
                           static_cast<__nv_bfloat16*>(data), count, peers);
    case Elem::kF32:
      return launch_kernel(plain, all_reduce_kernel<float>, dim3(blocks), dim3(kThreads), 0,
                           static_cast<float*>(data), count, peers);
  }
  return cudaErrorInvalidValue;
}

}  // namespace hearth::kernels
