// ggml tensor types: block sizes, and dequantizers to float for the types Hearth imports.
// Each dequantizer follows the block layout ggml documents (ggml-common.h) and computes every
// value with the same float operations in the same order as ggml's reference dequantizers,
// so results are bit-identical (this file is compiled with -ffp-contract=off).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "engine/io/gguf_file.h"

namespace hearth {

struct GgmlTypeTraits {
  const char* name;
  uint32_t block_elements;  // elements per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
};

// Traits of a type number read from a file; nullopt for numbers ggml does not define.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type);

// IQ4_NL's and IQ4_XS's non-linear codebook (ggml's kvalues_iq4nl): a nibble's value.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// True when dequantize_ggml can convert this type.
bool ggml_can_dequantize(GgmlType type);

// Converts `n` elements (a multiple of the block size) stored at `src` to float. `src` needs no
// particular alignment. Error(kUnsupported) for types without a dequantizer.
void dequantize_ggml(GgmlType type, const std::byte* src, float* dst, int64_t n);

}  // namespace hearth
