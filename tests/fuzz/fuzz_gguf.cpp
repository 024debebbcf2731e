// libFuzzer target F1 (TESTING.md, "Fuzz targets"): a fuzzed GGUF image goes through the header,
// metadata and tensor-info parser, every metadata accessor, the llama config reader, the Hugging
// Face tensor source and dequantization. hearth::Error is an expected outcome; any other exception,
// crash, sanitizer report, hang or runaway allocation is a finding.
//
// Seeds: tests/fuzz/make_seeds.py (gguf); dictionary: gguf.dict.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "engine/core/error.h"
#include "engine/io/gguf_config.h"
#include "engine/io/gguf_file.h"
#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"

namespace {

// Dequantizing is linear in the tensor size, which the file bounds; this keeps single inputs
// fast enough for the fuzzer without skipping any code path.
constexpr int64_t kMaxElements = 1 << 20;

void exercise_metadata(const hearth::GgufFile& g) {
  for (const auto& key : g.keys()) {
    (void)g.describe(key);
    const auto type = g.type(key);
    try {
      switch (*type) {
        case hearth::GgufValueType::kString: (void)g.get_string(key); break;
        case hearth::GgufValueType::kF32:
        case hearth::GgufValueType::kF64: (void)g.get_float(key); break;
        case hearth::GgufValueType::kBool: (void)g.get_bool(key); break;
        case hearth::GgufValueType::kArray:
          (void)g.array_length(key);
          try {
            (void)g.get_string_array(key);
          } catch (const hearth::Error&) {
          }
          try {
            (void)g.get_int_array(key);
          } catch (const hearth::Error&) {
          }
          (void)g.get_float_array(key);
          break;
        default: (void)g.get_int(key); break;
      }
    } catch (const hearth::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    auto g = std::make_shared<hearth::GgufFile>(hearth::GgufFile::parse(bytes, "fuzz.gguf"));
    exercise_metadata(*g);
    for (const auto& t : g->tensors()) {
      int64_t n = 1;
      for (int64_t d : t.dims) n *= d;  // parse() guarantees this does not overflow
      if (n > kMaxElements) continue;
      try {
        (void)g->dequantize(t);
      } catch (const hearth::Error&) {
      }
    }
    const hearth::ModelConfig config = hearth::config_from_gguf(*g);
    const auto source = hearth::open_gguf_source(g, config);
    for (const auto& name : source->tensor_names()) {
      const auto info = source->info(name);
      int64_t n = 1;
      for (int64_t d : info.shape) n *= d;
      if (n > kMaxElements) continue;
      try {
        (void)source->get(name);
      } catch (const hearth::Error&) {
      }
    }
  } catch (const hearth::Error&) {
  }
  return 0;
}
