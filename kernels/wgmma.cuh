// Hopper's warpgroup MMA (wgmma, sm_90a only): the instructions a kernel needs to multiply an A
// operand held in registers by a B operand in shared memory, asynchronously, by the four warps of
// a warpgroup together. Everything here compiles to nothing outside the sm_90a pass
// (HEARTH_WGMMA is 0 there), so a kernel using it must check HEARTH_WGMMA and be launched only
// where it is 1 (kernels::wgmma_supported, kernels/wgmma_probe.cu, tells at run time).
//
// Layouts (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
// - A (64 × 16, registers): warp w of the warpgroup holds rows 16w .. 16w + 15 in the fragment
//   layout of mma.sync m16n8k16's A: a0 (row g, k 2t, 2t+1), a1 (row g + 8), a2 (row g, k + 8),
//   a3 (row g + 8, k + 8), g = lane / 4, t = lane % 4.
// - B (16 × N, shared memory, K-major, no swizzle): 8 × 8 "core matrices" of 8 N-rows × 16 bytes
//   (8 halves of K), each 128 contiguous bytes, row r at 16 r. The descriptor gives the byte
//   distance between the two core matrices along K (leading) and between groups of 8 N-rows
//   (stride).
// - B N-major (kTransB 1, 16-bit types): core matrices of 8 K-rows × 16 bytes (8 halves of N),
//   K-row r at 16 r; leading is then the distance between the two groups of 8 K-rows, stride the
//   distance between groups of 8 N-columns. So one tile of 8 × 8 core matrices serves as a K-major
//   B (keys × dimensions, Q·Kᵀ) and an N-major one (P·V) with the two offsets exchanged.
// - D (64 × N, f32 registers): per n8 block j, four floats: (row g, col 8j + 2t), (g, 8j + 2t + 1),
//   (g + 8, 8j + 2t), (g + 8, 8j + 2t + 1), rows offset by 16w: mma.sync's C layout per tile.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HEARTH_WGMMA 1
#else
#define HEARTH_WGMMA 0
#endif

namespace hearth::kernels::wgmma {

// The shared-memory descriptor of a K-major B tile without swizzle starting at `tile`.
__device__ __forceinline__ uint64_t b_descriptor(const void* tile, uint32_t leading_bytes,
                                                 uint32_t stride_bytes) {
  const uint32_t address = smem_addr(tile);
  return uint64_t((address & 0x3ffff) >> 4) | uint64_t((leading_bytes >> 4) & 0x3fff) << 16 |
         uint64_t((stride_bytes >> 4) & 0x3fff) << 32;  // base offset 0, layout type 0
}

// Orders this thread's register writes (A fragments, accumulators) before the wgmma that follow.
__device__ __forceinline__ void fence() {
#if HEARTH_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void commit() {
#if HEARTH_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wait() {
#if HEARTH_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Shared memory written by this thread through the generic proxy (cp.async, stores) made visible
// to the async proxy that wgmma reads through; then a barrier.
__device__ __forceinline__ void fence_shared_for_async() {
#if HEARTH_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Keeps the compiler from moving accesses to these registers across the (volatile) wgmma
// instructions around it: after a wait, so that no read of the accumulators comes before it; and
// before fence(), so that every write of the accumulators or A fragments comes before it (a write
// that sank past fence() would race with the asynchronous MMA).
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+f"(d[j][i])::"memory");
  }
}
template <int N>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[j][i])::"memory");
  }
}

// d[64 × 64] += a[64 × 16] · B[16 × 64] (T: __half or __nv_bfloat16; f32 accumulators), d as
// [8 n8 blocks][4]. kTransB 0: B is K-major; 1: N-major (16-bit types only). kAccumulate 0:
// d = a · B, d's old values unread (no instruction needs to zero it first).
template <class T = __half, int kTransB = 0, int kAccumulate = 1>
__device__ __forceinline__ void mma_m64n64k16(float d[8][4], const uint32_t a[4], uint64_t b) {
#if HEARTH_WGMMA
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
#define HEARTH_WGMMA_N64(TYPE)                                                                    \
  asm volatile(                                                                                   \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                 \
      " "                                                                                         \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "    \
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                        \
      "{%32, %33, %34, %35}, %36, %38, 1, 1, %37;\n"                                              \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
        "+f"(d[7][2]), "+f"(d[7][3])                                                              \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTransB), "n"(kAccumulate))
  if constexpr (std::is_same_v<T, __half>) {
    HEARTH_WGMMA_N64("f16");
  } else {
    HEARTH_WGMMA_N64("bf16");
  }
#undef HEARTH_WGMMA_N64
#else
  (void)d, (void)a, (void)b;
#endif
}

// d[64 × 128] += a[64 × 16] · B[16 × 128] (T: __half or __nv_bfloat16; f32 accumulators), d as
// [16 n8 blocks][4]. kTransB, kAccumulate: as for mma_m64n64k16.
template <class T = __half, int kTransB = 0, int kAccumulate = 1>
__device__ __forceinline__ void mma_m64n128k16(float d[16][4], const uint32_t a[4], uint64_t b) {
#if HEARTH_WGMMA
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
#define HEARTH_WGMMA_N128(TYPE)                                                                   \
  asm volatile(                                                                                   \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                                \
      " "                                                                                         \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "    \
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "     \
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "     \
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                                  \
      "{%64, %65, %66, %67}, %68, %70, 1, 1, %69;\n"                                              \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
        "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
        "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]),               \
        "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]),           \
        "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]),           \
        "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),           \
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]),           \
        "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])                                            \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTransB), "n"(kAccumulate))
  if constexpr (std::is_same_v<T, __half>) {
    HEARTH_WGMMA_N128("f16");
  } else {
    HEARTH_WGMMA_N128("bf16");
  }
#undef HEARTH_WGMMA_N128
#else
  (void)d, (void)a, (void)b;
#endif
}

}  // namespace hearth::kernels::wgmma
