// Internal declaration of the CPU backend; ops are implemented across cpu_*.cpp files.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/int8_weight.h"
#include "engine/backend/cpu/quant_dot.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/core/quantized_weight.h"
#include "engine/core/thread_pool.h"

namespace hearth::cpu {

// Norm weights, embedding tables, rope tables: kept as uploaded (F32, F16 or BF16), usually a
// view into the mapped file, converted to float where used.
class CpuTensorWeight final : public BackendWeight {
 public:
  explicit CpuTensorWeight(HostTensor t);
  size_t device_bytes() const override { return tensor.nbytes(); }
  // Row r of a 2-D tensor (or the whole 1-D tensor) as float.
  void row_as_float(int64_t r, float* out) const;
  const float* f32() const { return floats.empty() ? tensor.as<float>() : floats.data(); }

  HostTensor tensor;
  std::vector<float> floats;  // 1-D tensors converted once (norm weights, rope tables)
};

class CpuLinearWeight final : public BackendWeight {
 public:
  size_t device_bytes() const override;
  int64_t out_features = 0;
  int64_t in_features = 0;
  HostTensor weight;                                 // [N, K] F32/F16/BF16 when dense
  std::shared_ptr<const QuantizedWeight> quantized;  // or quantized
  std::unique_ptr<Int8Weight> int8;  // the quantized weight re-laid, under CpuLinears::kFast
  std::vector<float> bias;           // [N] or empty
};

// The LoRA parts of the linears that share an input, in F32 with each B multiplied by its scale.
class CpuLoraWeight final : public BackendWeight {
 public:
  explicit CpuLoraWeight(std::shared_ptr<std::atomic<size_t>> counter)
      : counter_(std::move(counter)) {}
  ~CpuLoraWeight() override { *counter_ -= device_bytes(); }
  size_t device_bytes() const override;
  struct Part {
    int target = 0;
    int slot = 0;
    int64_t rank = 0;
    std::vector<float> a;  // [rank, in_features]
    std::vector<float> b;  // [out_features, rank], scaled
  };
  int64_t in_features = 0;
  std::vector<int64_t> out_features;
  std::vector<Part> parts;

 private:
  std::shared_ptr<std::atomic<size_t>> counter_;
};

// F32 rows, or quantized ones (the bits of engine/backend/kv_cache_quant.h, in its layout).
class CpuKvCache final : public KvCacheStorage {
 public:
  explicit CpuKvCache(const KvCacheSpec& spec);
  const KvCacheSpec& spec() const override { return spec_; }
  bool copies_positions() const override { return true; }
  void copy_positions(int32_t from, int32_t to, int64_t count) override;
  bool offsets_keys() const override { return quantized(); }
  void set_key_offsets(std::span<const float> offsets) override;
  std::vector<float> mean_keys(std::span<const int32_t> pages, int64_t begin,
                               int64_t end) const override;
  bool quantized() const { return is_quantized(spec_.type); }
  // F32 caches: the key/value vector of (layer, page, slot, kv head), head_dim floats.
  float* key(int64_t layer, int64_t page, int64_t slot, int64_t head);
  float* value(int64_t layer, int64_t page, int64_t slot, int64_t head);
  // Quantized caches: rotates and quantizes x into the row / reads the row back, rotated.
  // `first_position`: the row is position 0 of its sequence, whose key is also kept in fp16 and
  // read from there.
  void store_rotated(int64_t layer, int64_t page, int64_t slot, int64_t head, bool is_value,
                     const float* x, bool first_position);
  void load_rotated(int64_t layer, int64_t page, int64_t slot, int64_t head, bool is_value,
                    float* out, bool first_position) const;

 private:
  size_t offset(int64_t layer, int64_t page, int64_t slot, int64_t head) const;
  struct QuantRow {
    size_t codes;
    size_t scales;
  };
  QuantRow quant_row(int64_t layer, int64_t page, int64_t slot, int64_t head, bool is_value) const;
  size_t first_key_row(int64_t layer, int64_t page, int64_t head) const;
  KvCacheSpec spec_;
  KvQuantLayout layout_;
  std::vector<float> keys_;
  std::vector<float> values_;
  std::vector<uint8_t> quant_;      // quantized caches: every page's layer blocks
  std::vector<float> key_offsets_;  // [layer][kv head][dim], empty while none were set
};

// The prepared batch, flattened per token.
struct CpuBatch {
  std::vector<int32_t> tokens;                    // [T]
  std::vector<int32_t> positions;                 // [T]
  std::vector<int32_t> token_seq;                 // [T] sequence index of each token
  std::vector<int32_t> seq_start_pos;             // [S]
  std::vector<std::vector<int32_t>> page_tables;  // [S][pages]
  std::vector<int64_t> logit_rows;                // [L] token row of each logit row
  std::vector<float> adapter_weights;             // [T][kMaxLoraSlots], empty when none
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, CpuLinears linears);
  std::string name() const override;
  DType activation_dtype() const override { return DType::kF32; }

  std::unique_ptr<BackendWeight> upload(const HostTensor& tensor) override;
  std::unique_ptr<BackendWeight> upload_linear(const LinearSource& source) override;
  std::unique_ptr<BackendWeight> upload_lora(const LoraSource& source) override;
  DeviceTensor alloc_activation(int64_t rows, int64_t cols) override;
  std::unique_ptr<KvCacheStorage> create_kv_cache(const KvCacheSpec& spec) override;
  MemoryUsage memory_usage() const override;

  PreparedBatch prepare_batch(const BatchDesc& batch) override;
  void run(const std::function<void()>& record, std::optional<int64_t> graph_key) override;

  void embed(const BackendWeight& table, DeviceTensor out) override;
  void rms_norm(DeviceTensor x, const BackendWeight& w, float eps, DeviceTensor out) override;
  void add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w, float eps,
                    DeviceTensor out) override;
  void linear(const BackendWeight& w, DeviceTensor x, DeviceTensor out) override;
  void rope(DeviceTensor q, DeviceTensor k, const RopeParams& params) override;
  void attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& cache,
                 const AttentionParams& params, DeviceTensor out) override;
  void lora(const BackendWeight& lora, DeviceTensor x, std::span<const DeviceTensor> outs) override;
  void silu_mul(DeviceTensor gate, DeviceTensor up, DeviceTensor out) override;
  void gather_logit_rows(DeviceTensor x, DeviceTensor out) override;
  void receive(Backend& from, DeviceTensor src, DeviceTensor dst, int64_t rows) override;

  void read_into(DeviceTensor t, int64_t rows, std::span<float> out) override;
  double squared_distance(DeviceTensor a, DeviceTensor b, int64_t rows) override;
  std::vector<int32_t> sample(DeviceTensor logits,
                              std::span<const SampleRequest> requests) override;

 private:
  void linear_fast(const CpuLinearWeight& w, const float* x, int64_t rows, float* y);
  // The fast mode's prompt-sized linears: blocks of fp32 weights times all rows on BLAS.
  void linear_gemm(const CpuLinearWeight& w, const float* x, int64_t rows, float* y);

  ThreadPool pool_;
  CpuLinears linears_;
  DotKernel dot_kernel_;
  QuantizedRows quantized_rows_;  // the activations of the current fast linear
  CpuBatch batch_;
  std::vector<std::unique_ptr<float[]>> activations_;
  size_t activation_bytes_ = 0;
  size_t weight_bytes_ = 0;
  size_t cache_bytes_ = 0;
  std::shared_ptr<std::atomic<size_t>> lora_bytes_ = std::make_shared<std::atomic<size_t>>(0);
};

}  // namespace hearth::cpu
