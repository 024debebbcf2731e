// GGUF metadata -> ModelConfig for general.architecture == "llama" (Llama, Mistral, SmolLM2 and
// other models that llama.cpp converts to the llama architecture).
#pragma once

#include "engine/io/gguf_file.h"
#include "engine/io/model_config.h"

namespace hearth {

// Error(kUnsupported) for other architectures and for llama-architecture MoE models;
// Error(kInvalidFile) naming the key for missing or absurd values. The result has passed
// ModelConfig::validate().
ModelConfig config_from_gguf(const GgufFile& gguf);

}  // namespace hearth
