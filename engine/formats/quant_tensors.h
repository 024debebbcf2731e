// Reading the tensors of a quantized layer with the checks every format shares: presence,
// dtype, rank and shape, with messages that name the tensor and its file.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/io/tensor_source.h"

namespace hearth::quant {

struct LoadedTensor {
  std::string name;
  std::string file;
  HostTensor tensor;
  std::string where() const { return file.empty() ? name : file + ": tensor " + name; }
};

// Reads `name`, which must exist, have one of `dtypes` and `rank` dimensions; anything else is
// Error(kInvalidFile) naming the tensor.
LoadedTensor require_tensor(const TensorSource& source, const std::string& name,
                            std::initializer_list<DType> dtypes, size_t rank);

// Error(kInvalidFile) unless t's shape equals `shape`; `meaning` explains the expected shape.
void require_shape(const LoadedTensor& t, const std::vector<int64_t>& shape,
                   const std::string& meaning);

[[noreturn]] void invalid(const LoadedTensor& t, const std::string& what);

// Integer tensor elements as int64 (I16, U16, I32, U32, I64 tensors).
int64_t int_at(const HostTensor& t, int64_t i);

// Bytes the tensor occupies (for bits-per-weight figures).
inline uint64_t tensor_bytes(const HostTensor& t) {
  return t.nbytes();
}

}  // namespace hearth::quant
