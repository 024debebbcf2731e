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
#include "engine/model/layer_split.h"
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
  // Split by layers over several backends (one per GPU), each holding its layers' weights, KV
  // cache and activations; a step runs them in turn, handing the residual stream on. The logits
  // are the last backend's. Gives the same bits as one backend of the same kind.
  LlamaModel(const ModelConfig& config, const LayerPlacement& placement,
             const TensorSource& weights, const LlamaModelOptions& options,
             const WeightProgress& progress = {}, const CancelToken& cancel = {});
  ~LlamaModel();

  // Checks, without reading weight data, that `weights` holds every tensor `config` needs with
  // the shape it needs (quantized linears are opened and validated as loading does). Throws
  // Error(kInvalidFile) naming the first tensor that is missing or misshapen.
  static void check_weights(const ModelConfig& config, const TensorSource& weights);

  // Runs the batch through the model, storing its keys and values in `cache` (from
  // create_kv_cache(), or from backend().create_kv_cache(kv_cache_spec()) when not split). Returns
  // the logits [rows, vocab] on the backend; row i belongs to the i-th logit row of the batch
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
  // The backend that holds the logits (the last of a split): read and sample there.
  Backend& backend();
  // type: kF16 for the backend's own element type, or a quantized one.
  KvCacheSpec kv_cache_spec(int64_t num_pages, int64_t page_size,
                            KvCacheType type = KvCacheType::kF16) const;
  // The cache of kv_cache_spec(), divided over the backends as the layers are.
  std::unique_ptr<KvCacheStorage> create_kv_cache(int64_t num_pages, int64_t page_size,
                                                  KvCacheType type = KvCacheType::kF16) const;

 private:
  struct Layer;
  struct LayerWeight;
  struct Activations;
  struct Stage;
  static std::vector<LayerWeight> layer_weights(const ModelConfig& config);
  Stage& stage_of_layer(int64_t layer);
  // Issues stage s's ops (its layers; the embedding first on stage 0, the head last on the last).
  void record_stage(size_t s, int64_t tokens, int64_t logit_rows, KvCacheStorage& cache,
                    bool adapters);

  ModelConfig config_;
  LlamaModelOptions options_;
  std::vector<Stage> stages_;
  std::unique_ptr<BackendWeight> embedding_;  // on the first stage
  std::vector<Layer> layers_;
  std::unique_ptr<BackendWeight> final_norm_;  // on the last stage
  // On the last stage; null when a packed embedding table on the same backend is the tied head.
  std::unique_ptr<BackendWeight> lm_head_;
  float rope_attention_factor_ = 1.0f;
  int64_t graph_id_;           // distinct per model in the process (CUDA graph keys)
  bool has_adapters_ = false;  // some layer has LoRA weights
};

// Reads the linear layer `prefix` (dense, EXL2 or GPTQ) and checks its shape.
LinearSource read_linear(const TensorSource& weights, const std::string& prefix,
                         int64_t out_features, int64_t in_features, const ModelConfig& config);

}  // namespace hearth
