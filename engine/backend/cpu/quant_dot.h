// The CPU backend's fast quantized linear: activations quantized to 16-bit integers per block of
// 32 stored rows, multiplied with an Int8Weight's codes by integer dot products (AVX-512 VNNI or
// AVX2 where the CPU has them, NEON on AArch64, plain C++ otherwise), each block's sum scaled into
// an fp32 accumulator. The weights are never expanded to fp32.
//
// For output n and row r: y = Σ_blocks d_b · Σ_spans a · Σ (u − 128)·q  +  Σ_spans c · d_b·Σq,
// with x ≈ d_b·q (q in −32767..32767, d_b = max|x| / 32767 of the block), a and c the weight's
// scale and offset. Sixteen bits keep the model's outputs: on SmolLM2 8-bit activations (as
// llama.cpp's Q8 dot products use) changed a quarter of the greedy tokens against transformers
// (docs/PERFORMANCE.md). Integer sums are exact in every kernel; kernels differ only in the
// order of their fp32 additions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backend/cpu/int8_weight.h"

namespace hearth::cpu {

// Rows of activations in a weight's stored order, quantized per block of 32 stored rows.
struct QuantizedRows {
  int64_t rows = 0;
  int64_t stored_rows = 0;  // S
  int span_rows = 32;
  std::vector<int16_t> q;   // [rows][S]
  std::vector<float> d;     // [rows][S / 32]
  std::vector<float> sums;  // [rows][S / span_rows]: d · Σq over each span
};

// Sizes `out` for `rows` rows of `weight`'s input, then quantizes rows [r0, r1) of x ([rows, K],
// row stride K) into it.
void resize_quantized_rows(const Int8Weight& weight, int64_t rows, QuantizedRows& out);
void quantize_rows(const Int8Weight& weight, const float* x, int64_t r0, int64_t r1,
                   QuantizedRows& out);

enum class DotKernel { kPortable, kAvx2, kAvx512Vnni, kNeon };
const char* dot_kernel_name(DotKernel kernel);
// The fastest kernel this CPU runs, and whether it runs `kernel` at all.
DotKernel best_dot_kernel();
bool cpu_runs(DotKernel kernel);

// y[r · ldy + n] = output n of every row, for n in [n0, n1). `scratch` is resized as needed.
void quant_dot_outputs(const Int8Weight& weight, const QuantizedRows& x, int64_t n0, int64_t n1,
                       float* y, int64_t ldy, DotKernel kernel, std::vector<int16_t>& scratch);

}  // namespace hearth::cpu
