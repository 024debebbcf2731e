// libFuzzer target: a fuzzed safetensors image holding one EXL2 or GPTQ linear layer (tensors
// "layer.*", seeded with the committed per-layer fixtures) through the quantized-layer loader,
// the CPU dequantizer and the GPU tile-layout builder. A malformed layer must be a hearth::Error;
// any other exception, crash or sanitizer report is a finding.
//
// Seeds: tests/fuzz/quant_layer.seeds (the fixtures); dictionary: quant_layer.dict.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/quantized_weight.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/safetensors.h"
#include "engine/io/tensor_source.h"

namespace {

// The tensors of a parsed in-memory image, as the loaders read them.
class ImageSource final : public hearth::TensorSource {
 public:
  explicit ImageSource(const hearth::SafetensorsFile& file) : file_(file) {}
  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& t : file_.tensors()) names.push_back(t.name);
    return names;
  }
  bool has(std::string_view name) const override { return file_.find(name) != nullptr; }
  hearth::TensorInfo info(std::string_view name) const override {
    const hearth::SafetensorsTensor& t = find(name);
    hearth::TensorInfo i;
    i.name = t.name;
    if (!t.dtype) hearth::fail(hearth::ErrorCode::kUnsupported, "dtype " + t.dtype_name);
    i.dtype = *t.dtype;
    i.shape = t.shape;
    i.stored_type = t.dtype_name;
    i.file = file_.display_name();
    return i;
  }
  hearth::HostTensor get(std::string_view name) const override { return file_.tensor(find(name)); }
  uint64_t file_bytes() const override { return file_.file_size(); }

 private:
  const hearth::SafetensorsTensor& find(std::string_view name) const {
    const hearth::SafetensorsTensor* t = file_.find(name);
    if (!t) hearth::fail(hearth::ErrorCode::kInvalidFile, "no tensor " + std::string(name));
    return *t;
  }
  const hearth::SafetensorsFile& file_;
};

// GPTQ layers need their config; EXL2 ignores it. Tried in turn, so each fuzzed image meets
// every convention.
const char* const kConfigs[] = {
    "",
    R"({"bits":4,"group_size":128,"desc_act":true,"sym":true})",
    R"({"bits":2,"group_size":64,"desc_act":true,"sym":false,"checkpoint_format":"gptq"})",
    R"({"bits":3,"group_size":-1,"desc_act":false,"sym":false,"checkpoint_format":"gptq_v2"})",
    R"({"bits":8,"group_size":100,"desc_act":false,"sym":true})",
};

constexpr int64_t kMaxDecodedWeights = int64_t(1) << 22;  // keeps one input fast

void exercise(const hearth::QuantizedWeight& w) {
  const int64_t k = w.in_features(), n = w.out_features();
  if (k <= 0 || n <= 0) __builtin_trap();  // a loaded layer always has a shape
  if (k * n > kMaxDecodedWeights) return;
  std::vector<float> rows(static_cast<size_t>(k * n));
  w.dequantize_rows(0, n, rows.data());
  // Odd ranges too: the decoders start inside groups.
  if (n > 3) w.dequantize_rows(1, 3, rows.data());
  (void)hearth::build_quant_tile_layout(w, 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const auto file = hearth::SafetensorsFile::parse(bytes, "fuzz.safetensors");
    const ImageSource source(file);
    for (const char* config : kConfigs) {
      try {
        hearth::QuantizedLinearOptions o;
        o.quantization_config_json = config;
        const auto w = hearth::load_quantized_linear(source, "layer", o);
        if (!w) __builtin_trap();
        exercise(*w);
      } catch (const hearth::Error&) {
      }
    }
  } catch (const hearth::Error&) {
  }
  return 0;
}
