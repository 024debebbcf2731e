// A read-only, contiguous, row-major tensor in host memory. The bytes are either a view into a
// memory-mapped file or a buffer the tensor owns; `keep_alive` holds whichever it is.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/dtype.h"

namespace hearth {

struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  std::shared_ptr<const void> keep_alive;

  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  int64_t dim(size_t i) const { return shape.at(i); }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data);
  }
  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(data), nbytes()};
  }
  std::string shape_string() const;  // "[576, 1536]"

  // Allocates a zero-filled tensor that owns its bytes; `mutable_data` gives write access.
  static HostTensor allocate(DType dtype, std::vector<int64_t> shape);
  void* mutable_data() const { return const_cast<void*>(data); }
  // Wraps a float vector (moved in).
  static HostTensor from_floats(std::vector<float> values, std::vector<int64_t> shape);
  // Returns the elements converted to float (F32/F16/BF16 only).
  std::vector<float> to_floats() const;
};

}  // namespace hearth
