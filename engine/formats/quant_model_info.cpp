#include "engine/formats/quant_model_info.h"

#include <string>

#include "engine/core/dtype.h"

namespace hearth {
namespace {

double tensor_bits(const TensorSource& s, const std::string& name) {
  if (!s.has(name)) return 0;
  const TensorInfo i = s.info(name);
  double n = 1;
  for (int64_t d : i.shape) n *= static_cast<double>(d);
  return n * 8.0 * static_cast<double>(dtype_size(i.dtype));
}

int64_t dim(const TensorSource& s, const std::string& name, size_t i) {
  if (!s.has(name)) return 0;
  const TensorInfo info = s.info(name);
  return i < info.shape.size() ? info.shape[i] : 0;
}

}  // namespace

std::optional<double> quantized_bits_per_weight(const TensorSource& source) {
  double bits = 0, weights = 0;
  for (const std::string& name : source.tensor_names()) {
    if (name.starts_with("lm_head.")) continue;  // EXL2 gives the head its own width (-hb)
    if (name.ends_with(".q_weight")) {
      const std::string p = name.substr(0, name.size() - 9);
      const double k = static_cast<double>(dim(source, p + ".q_invperm", 0));
      const double n = static_cast<double>(dim(source, name, 1));
      if (k <= 0 || n <= 0) continue;
      for (const char* t : {".q_weight", ".q_scale", ".q_scale_max", ".q_groups", ".q_invperm"}) {
        bits += tensor_bits(source, p + t);
      }
      weights += k * n;
    } else if (name.ends_with(".qweight")) {
      const std::string p = name.substr(0, name.size() - 8);
      const int64_t n = dim(source, name, 1);
      const int64_t zero_words = dim(source, p + ".qzeros", 1);
      if (n <= 0 || zero_words <= 0 || (zero_words * 32) % n != 0) continue;
      const int64_t b = zero_words * 32 / n;
      if (b <= 0) continue;
      const double k = static_cast<double>(dim(source, name, 0)) * 32.0 / static_cast<double>(b);
      for (const char* t : {".qweight", ".qzeros", ".scales", ".g_idx"})
        bits += tensor_bits(source, p + t);
      weights += k * static_cast<double>(n);
    }
  }
  if (weights <= 0) return std::nullopt;
  return bits / weights;
}

}  // namespace hearth
