// libFuzzer target F3a (TESTING.md, "Fuzz targets"): a fuzzed safetensors image through the header
// validation and the tensor views. hearth::Error is an expected outcome; any other exception,
// crash or sanitizer report is a finding.
//
// Seeds: tests/fuzz/make_seeds.py (safetensors); dictionary: safetensors.dict.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/core/error.h"
#include "engine/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const auto file = hearth::SafetensorsFile::parse(bytes, "fuzz.safetensors");
    (void)file.metadata();
    for (const auto& t : file.tensors()) {
      if (file.find(t.name) == nullptr) __builtin_trap();  // every listed tensor is findable
      try {
        const hearth::HostTensor view = file.tensor(t);
        if (view.nbytes() != t.end - t.begin) __builtin_trap();
        // (Empty tensors are skipped: HostTensor::to_floats() on them passes a null pointer to
        // memcpy in engine/core/dtype.cpp, a finding reported to engine/core's owner.)
        if (view.numel() > 0 &&
            (view.dtype == hearth::DType::kF32 || view.dtype == hearth::DType::kF16 ||
             view.dtype == hearth::DType::kBF16)) {
          (void)view.to_floats();
        } else {
          volatile uint8_t sink = 0;  // touch every byte: ASan checks the bounds
          for (std::byte b : view.bytes()) sink ^= static_cast<uint8_t>(b);
        }
      } catch (const hearth::Error&) {
      }
    }
  } catch (const hearth::Error&) {
  }
  return 0;
}
