// Device helpers shared by the kernels: element conversions, 16-byte vectors, warp reductions,
// programmatic-dependent-launch controls, tensor-core fragments and the launch wrapper.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "kernels/kernels.h"

namespace hearth::kernels {

// ---- element conversions ----
__device__ __forceinline__ float to_f(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f(float x) {
  return x;
}

template <class T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}

// 8 consecutive 16-bit values as one 16-byte word.
template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float out[8]) {
  const T* h = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = to_f(h[i]);
}

template <class T>
__device__ __forceinline__ uint4 pack8(const float in[8]) {
  uint4 v;
  T* h = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) h[i] = from_f<T>(in[i]);
  return v;
}

// SwiGLU's activation silu(g) · u, silu(g) = g · sigmoid(g). One definition, so that the
// activation formed inside another kernel (kernels::quant_gather_x) has silu_mul's bits.
__device__ __forceinline__ float swiglu(float g, float u) {
  return g / (1.0f + expf(-g)) * u;
}

// Loads that bypass L1 allocation: weights are read once per pass.
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Coherent 16-byte load, for anything an earlier kernel may have written (activations, the KV
// cache, batch metadata). Under programmatic dependent launch the non-coherent path (ld.global.nc,
// which the compiler picks for `const __restrict__` pointers) may be scheduled before
// griddepcontrol.wait and read stale data: such pointers are never marked __restrict__ here.
__device__ __forceinline__ uint4 load16(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// ---- reductions ----
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over a block of up to 1024 threads; every thread gets the result. `scratch`: 32 floats.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];  // fixed order: deterministic
  return total;
}

// ---- programmatic dependent launch (no-ops before sm_90 or without the launch attribute) ----
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks L2 to fetch [p, p + bytes) (sm_90 bulk prefetch; p 16-byte aligned, bytes a multiple of
// 16). A hint: used before griddepcontrol.wait for data no earlier kernel of the step writes.
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bytes >= 16) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes & ~15u)
                 : "memory");
  }
#endif
}

// ---- split-K completion ----
// One arrival at a counter (acq_rel, GPU scope): the count before it.
__device__ __forceinline__ int32_t arrive_at(int32_t* counter) {
  int32_t before;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;"
               : "=r"(before)
               : "l"(counter)
               : "memory");
  return before;
}
// A counter's value, acquiring what was released with it (GPU scope).
__device__ __forceinline__ int32_t load_acquire_gpu(const int32_t* p) {
  int32_t v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Counts the calling block in at *counter and tells every thread of the block whether it was
// the last of `count` blocks to arrive. Global writes the arriving blocks made before the call
// are visible to the last block after it: the barrier orders each block's writes before its
// thread 0's release, and the last arrival's acquire (then the barrier) orders all of them
// before the last block's reads (the pattern of a release/acquire semaphore). One acq_rel
// atomic per block instead of a device-wide fence in every thread before and after the atomic:
// those fences were a good part of a small kernel's critical path. Must be reached by every
// thread of the block.
__device__ __forceinline__ bool last_to_arrive(int32_t* counter, int count) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) last = arrive_at(counter) == count - 1;
  __syncthreads();
  return last;
}

// ---- tensor cores: mma.sync m16n8k16, fp32 accumulators ----
template <class T>
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0,
                                          uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float c[4], const uint32_t a[4], uint32_t b0,
                                                  uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float c[4], const uint32_t a[4],
                                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The same product when only rows 0-7 of A are in use (rows 8-15 zero): c holds row lane/4's
// two accumulators, and rows 8-15 of the result go to registers that die at once, so a caller
// keeps half the accumulator registers and no dependence between its MMAs.
template <class T>
__device__ __forceinline__ void mma_16816_top(float c[2], const uint32_t a[4], uint32_t b0,
                                              uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816_top<__half>(float c[2], const uint32_t a[4], uint32_t b0,
                                                      uint32_t b1) {
  asm volatile(
      "{\n.reg .f32 unused0, unused1;\n"
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, unused0, unused1}, "
      "{%2, %3, %4, %5}, {%6, %7}, {%0, %1, %8, %8};\n}"
      : "+f"(c[0]), "+f"(c[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}

template <>
__device__ __forceinline__ void mma_16816_top<__nv_bfloat16>(float c[2], const uint32_t a[4],
                                                             uint32_t b0, uint32_t b1) {
  asm volatile(
      "{\n.reg .f32 unused0, unused1;\n"
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, unused0, unused1}, "
      "{%2, %3, %4, %5}, {%6, %7}, {%0, %1, %8, %8};\n}"
      : "+f"(c[0]), "+f"(c[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}

// Two floats as a packed pair of T (low half first).
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

// ---- shared memory / async copies ----
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy to shared memory; with valid == false the destination is zero-filled and
// nothing is read.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(bytes));
}
// 4 bytes (an element of a gather), through L1.
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(smem)), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}

// ---- launching ----
template <typename... KArgs, typename... Args>
cudaError_t launch_kernel(const Launch& l, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                          size_t smem, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = l.stream;
  cudaLaunchAttribute attribute[1];
  if (l.pdl) {
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Calls fn with the element type matching `e` (fp16 or bf16) as a value of that type.
#define HEARTH_DISPATCH_16(e, T, ...)           \
  do {                                          \
    if ((e) == ::hearth::kernels::Elem::kF16) { \
      using T = __half;                         \
      __VA_ARGS__;                              \
    } else {                                    \
      using T = __nv_bfloat16;                  \
      __VA_ARGS__;                              \
    }                                           \
  } while (0)

}  // namespace hearth::kernels
