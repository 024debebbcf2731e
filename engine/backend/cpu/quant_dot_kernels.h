// The kernels behind quant_dot_outputs(), one per instruction set. The SIMD ones live in files
// compiled for their instruction set alone (quant_dot_avx2.cpp, quant_dot_avx512_vnni.cpp,
// quant_dot_neon.cpp on AArch64) and are called only where the CPU has it; their arguments are
// plain pointers so that those files instantiate no library templates another file could end up
// linked against.
#pragma once

#include <cstdint>

namespace hearth::cpu {

struct QuantDotArgs {
  // The weight (Int8Weight).
  const uint8_t* codes = nullptr;  // output n's codes at codes + n · code_stride
  int64_t code_stride = 0;
  bool nibbles = false;
  const uint8_t* lut = nullptr;  // 16 entries, with nibbles
  const float* scales = nullptr;
  const float* offsets = nullptr;  // or null
  int64_t stored_rows = 0;
  int span_rows = 32;
  // The activations (QuantizedRows).
  const int16_t* xq = nullptr;
  const float* xd = nullptr;
  const float* xsums = nullptr;
  int64_t rows = 0;
  // Outputs [n0, n1) of every row into y[r · ldy + n].
  int64_t n0 = 0, n1 = 0;
  float* y = nullptr;
  int64_t ldy = 0;
  int16_t* scratch = nullptr;  // stored_rows values: one output's codes as u − 128
};

void quant_dot_portable(const QuantDotArgs& args);
void quant_dot_avx2(const QuantDotArgs& args);
void quant_dot_avx512_vnni(const QuantDotArgs& args);
void quant_dot_neon(const QuantDotArgs& args);  // AArch64 only

}  // namespace hearth::cpu
