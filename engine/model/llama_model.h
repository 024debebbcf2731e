// The Llama-family forward pass (Llama 1/2/3, Mistral, CodeLlama, SmolLM2), written once
// against the Backend interface and batched over sequences of different lengths.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/core/cancel.h"
#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"
#include "engine/model/lora_adapter.h"

namespace hearth {

struct LlamaModelOptions {
  int64_t max_seq_len = 4096;      // context the model runs with (rope tables, checks)
  int64_t max_batch_tokens = 512;  // most tokens one forward pass may carry
  int64_t max_logit_rows = 64;     // most rows of logits one forward pass may return
};

// Called while weights load: (tensors done, tensors in all).
using WeightProgress = std::function<void(int64_t done, int64_t total)>;

class LlamaModel {
 public:
  // Uploads every weight to `backend`. Throws Error(kInvalidFile) naming the tensor when one is
  // missing or has the wrong shape, Error(kCancelled) when `cancel` is raised.
  LlamaModel(const ModelConfig& config, Backend& backend, const TensorSource& weights,
             const LlamaModelOptions& options, const WeightProgress& progress = {},
             const CancelToken& cancel = {});
  ~LlamaModel();

  // Checks, without reading weight data, that `weights` holds every tensor `config` needs with
  // the shape it needs (quantized linears are opened and validated as loading does). Throws
  // Error(kInvalidFile) naming the first tensor that is missing or misshapen.
  static void check_weights(const ModelConfig& config, const TensorSource& weights);

  // Runs the batch through the model, storing its keys and values in `cache`. Returns the logits
  // [rows, vocab] on the backend; row i belongs to the i-th logit row of the batch
  // (BatchDesc::logit_rows() rows are real).
  DeviceTensor forward(const BatchDesc& batch, KvCacheStorage& cache);

  // LoRA adapters by slot (null: an empty slot), at most kMaxLoraSlots. Replaces the adapter
  // weights on the backend; a batch's sequences weigh the slots (SequenceSlice::adapter_weights).
  // Each adapter must have been read against this model's config.
  void set_adapters(const std::vector<std::shared_ptr<const LoraAdapter>>& slots);
  // Bytes the adapters of set_adapters() take on the backend.
  size_t adapter_bytes() const;

  const ModelConfig& config() const { return config_; }
  const LlamaModelOptions& options() const { return options_; }
  Backend& backend() { return backend_; }
  // type: kF16 for the backend's own element type, or a quantized one.
  KvCacheSpec kv_cache_spec(int64_t num_pages, int64_t page_size,
                            KvCacheType type = KvCacheType::kF16) const;

 private:
  struct Layer;
  struct LayerWeight;
  struct Activations;
  static std::vector<LayerWeight> layer_weights(const ModelConfig& config);
  void record_forward(int64_t tokens, int64_t logit_rows, KvCacheStorage& cache, bool adapters);

  ModelConfig config_;
  LlamaModelOptions options_;
  Backend& backend_;
  std::unique_ptr<BackendWeight> embedding_;
  std::vector<Layer> layers_;
  std::unique_ptr<BackendWeight> final_norm_;
  std::unique_ptr<BackendWeight> lm_head_;  // null when a packed embedding table is the tied head
  std::unique_ptr<BackendWeight> inv_freq_;
  float rope_attention_factor_ = 1.0f;
  std::unique_ptr<Activations> act_;
  int64_t graph_id_;           // distinct per model in the process (CUDA graph keys)
  bool has_adapters_ = false;  // some layer has LoRA weights
};

// Reads the linear layer `prefix` (dense, EXL2 or GPTQ) and checks its shape.
LinearSource read_linear(const TensorSource& weights, const std::string& prefix,
                         int64_t out_features, int64_t in_features, const ModelConfig& config);

}  // namespace hearth
