// libFuzzer target F3b (TESTING.md, "Fuzz targets"): a fuzzed model.safetensors.index.json.
// Whatever it accepts must name only plain relative shard paths. hearth::Error is an expected
// outcome; any other exception, crash or sanitizer report is a finding.
//
// Seeds: tests/fuzz/make_seeds.py (safetensors_index); dictionary: json.dict.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "engine/core/error.h"
#include "engine/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto index = hearth::parse_safetensors_index(text, "fuzz.index.json");
    for (const auto& [tensor, shard] : index.weight_map) {
      const std::filesystem::path p(shard);
      if (shard.empty() || p.is_absolute()) __builtin_trap();
      for (const auto& part : p) {
        if (part == "..") __builtin_trap();
      }
    }
  } catch (const hearth::Error&) {
  }
  return 0;
}
