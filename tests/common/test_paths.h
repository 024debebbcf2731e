// Paths the tests share: the source tree, committed fixtures and the real test model.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace hearth::test {

inline std::filesystem::path source_dir() { return HEARTH_SOURCE_DIR; }
inline std::filesystem::path fixtures_dir() { return HEARTH_FIXTURES_DIR; }

// SmolLM2-135M-Instruct (GGUF Q4_1). HEARTH_TEST_MODEL in the environment overrides the path
// chosen at configure time.
inline std::filesystem::path test_model() {
  if (const char* env = std::getenv("HEARTH_TEST_MODEL"); env && *env) return env;
  return HEARTH_TEST_MODEL;
}

}  // namespace hearth::test
