// Model-level figures of EXL2 / GPTQ checkpoints, from tensor shapes only (nothing is read).
#pragma once

#include <optional>

#include "engine/io/tensor_source.h"

namespace hearth {

// Storage bits per weight of the decoder's quantized linear layers (codes, scales, zeros, groups
// and permutations counted, as exllamav2 counts them; lm_head left out, as exllamav2's target
// leaves it out): the figure EXL2 and GPTQ models are named by ("4.0 bpw"). nullopt when the
// source has no quantized layer.
std::optional<double> quantized_bits_per_weight(const TensorSource& source);

}  // namespace hearth
