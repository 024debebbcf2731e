// A TensorSource over tensors held in memory: packed layers are read back through Hearth's own
// EXL2/GPTQ readers before they are written, and tests build sources from it.
#pragma once

#include <map>
#include <string>

#include "engine/io/tensor_source.h"

namespace hearth::quantizer {

class MemoryTensorSource final : public TensorSource {
 public:
  void put(const std::string& name, HostTensor tensor) { tensors_[name] = std::move(tensor); }
  std::vector<std::string> tensor_names() const override;
  bool has(std::string_view name) const override;
  TensorInfo info(std::string_view name) const override;
  HostTensor get(std::string_view name) const override;
  uint64_t file_bytes() const override;
  const std::map<std::string, HostTensor, std::less<>>& tensors() const { return tensors_; }

 private:
  std::map<std::string, HostTensor, std::less<>> tensors_;
};

}  // namespace hearth::quantizer
