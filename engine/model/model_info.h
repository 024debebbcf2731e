// What Hearth knows about a model on disk before loading it: its format, config and size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/model_config.h"

namespace hearth {

enum class ModelFormat { kSafetensors, kGguf, kExl2, kGptq };
const char* model_format_name(ModelFormat f);  // "fp16", "gguf", "exl2", "gptq"

struct ModelInfo {
  std::filesystem::path path;
  std::string name;
  ModelFormat format = ModelFormat::kSafetensors;
  ModelConfig config;
  int64_t parameters = 0;
  double bits_per_weight = 16.0;  // as stored in the files
  uint64_t file_bytes = 0;        // size on disk of the weights
  std::string stored_types;       // e.g. "Q4_1 ×210, F32 ×61, Q8_0 ×1"
  // GGUF: what the CUDA backend will hold for the weights (the tensors its quantized kernels run
  // packed, the rest in fp16); 0 for other formats.
  uint64_t cuda_weight_bytes = 0;
  // GGUF, EXL2, GPTQ: the file's weights as the CPU backend's fast path holds them (its
  // quantized linears re-laid for integer dot products); 0 for other formats.
  uint64_t cpu_fast_weight_bytes = 0;
  // What the CUDA backend holds of each decoder layer's weights, and of the embedding table (for
  // splitting the model over GPUs by layers).
  std::vector<uint64_t> cuda_layer_bytes;
  uint64_t cuda_embedding_bytes = 0;
  std::string quantization;  // quantization_config, human-readable, if any
  bool has_chat_template = false;
};

}  // namespace hearth
