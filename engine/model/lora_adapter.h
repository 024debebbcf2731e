// LoRA adapters read from their files and checked against a model: PEFT folders
// (adapter_config.json + adapter_model.safetensors) and llama.cpp GGUF adapters. Each adapted
// linear comes out in Hugging Face layout, in F32, with its scale; applying them is the model's
// and the backends' business (LoraSource, Backend::lora).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/io/model_config.h"

namespace hearth {

// The decoder-layer linears an adapter may change.
enum class LoraProjection { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kLoraProjections = 7;
const char* lora_projection_name(LoraProjection p);  // "q_proj", ..., "down_proj"
// [out_features, in_features] of projection `p` in a model of `config`.
std::pair<int64_t, int64_t> lora_projection_shape(LoraProjection p, const ModelConfig& config);

struct LoraLinear {
  int64_t layer = 0;
  LoraProjection projection = LoraProjection::kQ;
  HostTensor a;        // F32 [rank, in_features]
  HostTensor b;        // F32 [out_features, rank]
  float scale = 1.0f;  // alpha / rank, or alpha / √rank with rsLoRA
  int64_t rank() const { return a.shape[0]; }
};

struct LoraAdapter {
  std::filesystem::path path;
  std::string name;    // folder or file name
  std::string format;  // "peft" or "gguf"
  double alpha = 0;    // lora_alpha as written (of the largest-rank linears)
  bool rslora = false;
  std::vector<LoraLinear> linears;  // ordered by layer, then projection

  int64_t max_rank() const;
  int64_t layer_count() const;                    // distinct layers changed
  std::vector<std::string> target_names() const;  // projections changed, in projection order
  int64_t parameter_count() const;                // values of every A and B
};

// Reads `path` (a PEFT folder, its adapter_config.json or adapter_model.safetensors, or a GGUF
// adapter) and checks it against `config`. Error(kInvalidFile) naming the adapter and tensor for
// a missing or misshapen tensor, rank 0, NaN or Inf values, a layer the model does not have;
// Error(kUnsupported) for pickle checkpoints, DoRA, biases, modules_to_save and targets other
// than the seven projections (embeddings, lm_head).
LoraAdapter read_lora_adapter(const std::filesystem::path& path, const ModelConfig& config);

// Whether `path` looks like an adapter rather than a model (a folder with adapter_config.json
// and no config.json, or a GGUF whose general.type is "adapter"). Never throws.
bool is_lora_adapter_path(const std::filesystem::path& path);

}  // namespace hearth
