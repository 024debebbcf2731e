// Opens a model on disk (a .gguf file, or a Hugging Face folder with fp16, EXL2 or GPTQ
// safetensors): its config, weights, tokenizer and chat template, without loading weights.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/io/tensor_source.h"
#include "engine/model/model_info.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth {

class GgufFile;

struct ModelBundle {
  ModelInfo info;
  std::unique_ptr<TensorSource> weights;
  std::unique_ptr<Tokenizer> tokenizer;             // when asked for
  std::optional<std::string> chat_template_source;  // from the GGUF or tokenizer_config.json
  std::string bos_token;                            // as text, for chat templates
  std::string eos_token;
  std::shared_ptr<const GgufFile> gguf;  // keeps a GGUF mapping alive
};

// Throws Error(kInvalidFile / kUnsupported / kIo) naming the file and what is wrong.
ModelBundle open_model(const std::filesystem::path& path, bool with_tokenizer);

}  // namespace hearth
