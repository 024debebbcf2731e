#include "engine/core/host_tensor.h"

#include "engine/core/error.h"

namespace hearth {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string HostTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

HostTensor HostTensor::allocate(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape) {
    if (d < 0) fail(ErrorCode::kInvalidArgument, "negative tensor dimension");
  }
  auto storage = std::make_shared<std::vector<std::byte>>(t.nbytes());
  t.data = storage->data();
  t.keep_alive = std::shared_ptr<const void>(storage, storage->data());
  return t;
}

HostTensor HostTensor::from_floats(std::vector<float> values, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = DType::kF32;
  t.shape = std::move(shape);
  if (static_cast<size_t>(t.numel()) != values.size()) {
    fail(ErrorCode::kInternal, "from_floats: shape does not match the value count");
  }
  auto storage = std::make_shared<std::vector<float>>(std::move(values));
  t.data = storage->data();
  t.keep_alive = std::shared_ptr<const void>(storage, storage->data());
  return t;
}

std::vector<float> HostTensor::to_floats() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  convert_to_float(dtype, data, out.data(), out.size());
  return out;
}

}  // namespace hearth
