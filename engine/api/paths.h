// Where Hearth keeps its data: $XDG_DATA_HOME/hearth (default ~/.local/share/hearth).
#pragma once

#include <filesystem>

namespace hearth {

std::filesystem::path data_dir();
std::filesystem::path models_dir();
// SmolLM2-135M-Instruct (GGUF Q4_1), put there by scripts/fetch-default-model.sh.
std::filesystem::path default_model_path();

}  // namespace hearth
