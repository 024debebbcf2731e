#include "engine/quantizer/memory_tensor_source.h"

#include "engine/core/error.h"

namespace hearth::quantizer {

std::vector<std::string> MemoryTensorSource::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, t] : tensors_) names.push_back(name);
  return names;
}

bool MemoryTensorSource::has(std::string_view name) const {
  return tensors_.count(name) > 0;
}

TensorInfo MemoryTensorSource::info(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
  return TensorInfo{it->first, it->second.dtype, it->second.shape,
                    std::string(dtype_name(it->second.dtype)), "<memory>"};
}

HostTensor MemoryTensorSource::get(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
  return it->second;
}

uint64_t MemoryTensorSource::file_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, t] : tensors_) total += t.nbytes();
  return total;
}

}  // namespace hearth::quantizer
