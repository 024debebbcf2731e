// The quantized product for 1..8 x rows (decode), kernels/quant_gemv.cu. Internal to the
// kernels: quant_gemm() (kernels/quant_kernels.h) routes such launches here.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/quant_kernels.h"

namespace hearth::kernels {

constexpr int kQuantGemvMaxRows = 8;

cudaError_t quant_gemv(const Launch& l, const QuantMatrix& m, const void* x, int64_t rows,
                       const float* bias, void* out, bool out_f32, const QuantGemmScratch& scratch);

}  // namespace hearth::kernels
