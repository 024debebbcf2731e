#include "engine/core/dtype.h"

#include "engine/core/error.h"

namespace hearth {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64: return 8;
    case DType::kF32:
    case DType::kI32:
    case DType::kU32: return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
    case DType::kU16: return 2;
    case DType::kI8:
    case DType::kU8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI32: return "I32";
    case DType::kI16: return "I16";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kI64: return "I64";
    case DType::kF64: return "F64";
    case DType::kU16: return "U16";
    case DType::kU32: return "U32";
  }
  return "?";
}

void convert_to_float(DType type, const void* src, float* dst, size_t count) {
  if (count == 0) return;  // empty tensors may have null data; memcpy(null, ..., 0) is UB
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = half_to_float(s[i]);
      return;
    }
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
    default:
      fail(ErrorCode::kUnsupported,
           "cannot convert " + std::string(dtype_name(type)) + " to float");
  }
}

}  // namespace hearth
