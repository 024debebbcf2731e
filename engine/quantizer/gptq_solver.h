// GPTQ (Frantar et al.) on the CPU: rows of the permuted weight matrix W[K, N] (row = input
// feature in act-order, N = output features) are quantized one at a time; each row's rounding
// error, divided by the diagonal of the upper Cholesky factor U of H⁻¹, is fed back into the
// rows not yet quantized (within the current block at once, beyond it in one blocked update:
// a GEMM with BLAS, else loops). Group parameters are chosen when a group starts, on its rows as
// compensated so far.
//
// The result does not depend on the number of threads: every element's updates are applied
// in one fixed order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/quantizer/cpu_blas.h"
#include "engine/quantizer/group_quantizer.h"

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

struct GptqGroupSpec {
  int64_t row_begin = 0;
  int64_t rows = 0;
  int bits = 4;
};

// Chooses a group's parameters from its current rows (rows × n, row stride n).
using FindParams = std::function<GroupParams(const float* w, int64_t rows, int64_t n, int bits)>;

struct GptqResult {
  std::vector<uint8_t> codes;       // [K, N] integer codes, in permuted row order
  std::vector<float> dequantized;   // [K, N] exact fp16 values of the reconstruction
  std::vector<GroupParams> params;  // one per group
  // Σ over rows of ‖err_row‖²; equals tr(ΔW·H·ΔWᵀ) for the damped H exactly (ΔW = E·U), i.e.
  // the output error GPTQ minimises.
  double proxy_error = 0;
};

// `w` [K, N] (permuted, float) is consumed as the working matrix. `hinv_upper` [K, K] is the
// prepared factor for the same permutation. Groups must tile [0, K) in order. `block` is the
// lazy-update width (rows per blocked update; a group larger than it is split). `path`: the
// blocked update by loops or by BLAS.
GptqResult gptq_quantize(std::vector<float>& w, int64_t k, int64_t n,
                         const std::vector<float>& hinv_upper,
                         const std::vector<GptqGroupSpec>& groups, const FindParams& find_params,
                         ThreadPool& pool, int64_t block = 128,
                         CpuMathPath path = default_cpu_math_path());

// Which group quantizer a GPTQ run uses (for solvers that cannot take a FindParams callback,
// such as the GPU's).
enum class GroupQuantizerKind { kExl2, kGptqSymmetric, kGptqAsymmetric };

}  // namespace hearth::quantizer
