// Writing quantized layers in the file formats: EXL2 (docs/FORMATS.md §1) and GPTQ v1
// (FORMATS.md §2), from the codes and group parameters GPTQ produced.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/quantizer/gptq_solver.h"

namespace hearth::quantizer {

// Tensors of one layer by full name ("<prefix>.q_weight", ...), in the order they are written.
using PackedTensors = std::vector<std::pair<std::string, HostTensor>>;

// EXL2: `codes` [K, N_pad] in stored (permuted) row order, one GroupParams per group of
// `groups` (non-increasing bits), `perm` the act-order permutation (stored row → input
// feature). `bias` (fp32 values, N_pad long) is written as fp16 when present.
PackedTensors pack_exl2(const std::string& prefix, int64_t k, int64_t n_pad,
                        const std::vector<uint8_t>& codes, const std::vector<GptqGroupSpec>& groups,
                        const std::vector<GroupParams>& params, const std::vector<int32_t>& perm,
                        const std::optional<std::vector<float>>& bias);

// GPTQ v1 ("gptq": stored zero = Z − 1): `codes` [K, N] in processing (permuted) order, groups of
// the permuted rows, `perm` as above. qweight is stored in original row order with g_idx giving
// each input row's group. K·bits and N·bits must be multiples of 32.
PackedTensors pack_gptq(const std::string& prefix, int64_t k, int64_t n, int bits,
                        const std::vector<uint8_t>& codes, const std::vector<GptqGroupSpec>& groups,
                        const std::vector<GroupParams>& params, const std::vector<int32_t>& perm,
                        const std::optional<std::vector<float>>& bias);

}  // namespace hearth::quantizer
