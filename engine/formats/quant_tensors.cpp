#include "engine/formats/quant_tensors.h"

#include "engine/core/error.h"

namespace hearth::quant {

LoadedTensor require_tensor(const TensorSource& source, const std::string& name,
                            std::initializer_list<DType> dtypes, size_t rank) {
  if (!source.has(name)) fail(ErrorCode::kInvalidFile, "the model has no tensor " + name);
  LoadedTensor t;
  t.name = name;
  const TensorInfo info = source.info(name);
  t.file = info.file;
  bool ok = false;
  std::string allowed;
  for (DType d : dtypes) {
    ok = ok || info.dtype == d;
    allowed += (allowed.empty() ? "" : " or ") + std::string(dtype_name(d));
  }
  if (!ok) {
    invalid(t, "has dtype " + info.stored_type + ", the format needs " + allowed);
  }
  if (info.shape.size() != rank) {
    std::string shape = "[";
    for (size_t i = 0; i < info.shape.size(); ++i) {
      shape += (i ? ", " : "") + std::to_string(info.shape[i]);
    }
    invalid(t, "has " + std::to_string(info.shape.size()) + " dimensions (" + shape +
                   "]), the format needs " + std::to_string(rank));
  }
  for (int64_t d : info.shape) {
    if (d <= 0) invalid(t, "has an empty dimension");
  }
  t.tensor = source.get(name);
  if (t.tensor.shape != info.shape || t.tensor.dtype != info.dtype || t.tensor.data == nullptr) {
    invalid(t, "could not be read as described");
  }
  return t;
}

void require_shape(const LoadedTensor& t, const std::vector<int64_t>& shape,
                   const std::string& meaning) {
  if (t.tensor.shape == shape) return;
  std::string want = "[";
  for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
  invalid(t, "has shape " + t.tensor.shape_string() + ", expected " + want + "] (" + meaning + ")");
}

void invalid(const LoadedTensor& t, const std::string& what) {
  fail(ErrorCode::kInvalidFile, t.where() + " " + what);
}

int64_t int_at(const HostTensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kI16:
      return t.as<int16_t>()[i];
    case DType::kU16:
      return t.as<uint16_t>()[i];
    case DType::kI32:
      return t.as<int32_t>()[i];
    case DType::kU32:
      return t.as<uint32_t>()[i];
    case DType::kI64:
      return t.as<int64_t>()[i];
    default:
      fail(ErrorCode::kInternal, "int_at on a non-integer tensor");
  }
}

}  // namespace hearth::quant
