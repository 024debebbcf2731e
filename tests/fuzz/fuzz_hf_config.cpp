// libFuzzer target F4 (TESTING.md, "Fuzz targets"): fuzzed config.json and generation_config.json
// into a validated ModelConfig. hearth::Error is an expected outcome; any other exception, crash or
// sanitizer report is a finding, and so is an accepted config that breaks its own invariants.
//
// Input layout: config.json bytes, optionally followed by "\x00" and generation_config.json.
// Seeds: tests/fuzz/make_seeds.py (hf_config); dictionary: json.dict.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/core/error.h"
#include "engine/io/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view config = input.substr(0, nul);
  std::optional<std::string_view> generation;
  if (nul != std::string_view::npos) generation = input.substr(nul + 1);
  try {
    const hearth::ModelConfig c = hearth::parse_hf_config_json(config, generation);
    // What validate() promised must hold for every accepted config.
    if (c.num_heads % c.num_kv_heads != 0 || c.head_dim <= 0 || c.vocab_size <= 0) {
      __builtin_trap();
    }
    for (int32_t id : c.eos_token_ids) {
      if (id < 0 || id >= c.vocab_size) __builtin_trap();
    }
    (void)c.parameter_count();
  } catch (const hearth::Error&) {
  }
  return 0;
}
