#include "engine/api/paths.h"

#include <cstdlib>

namespace hearth {

std::filesystem::path data_dir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "hearth";
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : ".") / ".local" / "share" / "hearth";
}

std::filesystem::path models_dir() { return data_dir() / "models"; }

std::filesystem::path default_model_path() {
  return models_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace hearth
