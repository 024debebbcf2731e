// The CPU backend: the exact, simple reference every GPU kernel is tested against, and the
// fallback on machines without a GPU. fp32 activations and accumulation, fp32 KV cache.
#pragma once

#include <memory>

#include "engine/backend/backend.h"

namespace hearth {

// How the CPU backend multiplies quantized linears (EXL2, GPTQ, GGUF blocks). kExact: by the
// format's exact dequantized values in fp32, the reference every GPU kernel is tested against.
// kFast: the codes stay 4 or 8 bits, activations are quantized to 16-bit integers per block of
// 32 and multiplied by integer dot products (engine/backend/cpu/quant_dot.h): several times
// faster, and close to the exact values but not bit-identical. Dense linears are exact either way.
// In kFast, prompt-sized inputs (32 rows and more) of every linear, dense or quantized, are
// multiplied on BLAS where the build has it (cpu_gemm.h), and so is the attention of a sequence
// with 32 new tokens or more: the weights' exact values, fp32 sums in the BLAS kernel's order, so
// a row's bits depend on how many rows come with it.
enum class CpuLinears { kExact, kFast };
const char* cpu_linears_name(CpuLinears linears);  // "exact", "fast"

// threads <= 0: one per hardware thread.
std::unique_ptr<Backend> create_cpu_backend(int threads = 0,
                                            CpuLinears linears = CpuLinears::kExact);

}  // namespace hearth
