// Runs one module of a Llama decoder layer (attention or MLP, residual included) on a Backend
// for one calibration row of hidden states, and reads back the activations the quantizer needs:
// the inputs of q/k/v (normed), of o_proj (attention output), of gate/up (normed) and of
// down_proj (silu(gate)·up). Hidden states live on the host between modules, so only one
// layer's weights are ever on the device.
//
// Rows are fed through the backend's embedding op: the row's hidden states are uploaded as a
// table and "token" t selects row t, at position t.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/io/model_config.h"

namespace hearth::quantizer {

struct AttentionWeights {
  const BackendWeight* norm = nullptr;
  const BackendWeight *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
};

struct MlpWeights {
  const BackendWeight* norm = nullptr;
  const BackendWeight *gate = nullptr, *up = nullptr, *down = nullptr;
};

// Host buffers to fill; null members are not read back.
struct AttentionCapture {
  std::vector<float>* normed = nullptr;  // [T, H]: input of q, k, v
  std::vector<float>* attn = nullptr;    // [T, q_dim]: input of o_proj
  std::vector<float>* output = nullptr;  // [T, H]: x + o_proj(attn)
  DeviceTensor delta_to;                 // where o_proj's output goes (default: the runner's)
};

struct MlpCapture {
  std::vector<float>* normed = nullptr;    // [T, H]: input of gate, up
  std::vector<float>* pre_down = nullptr;  // [T, I]: input of down_proj
  std::vector<float>* output = nullptr;    // [T, H]: x + down(...)
  DeviceTensor delta_to;                   // where down_proj's output goes (default: the runner's)
};

class LayerRunner {
 public:
  // `max_tokens`: the longest row. Allocates activations and a one-layer KV cache.
  LayerRunner(Backend& backend, const ModelConfig& config, int64_t max_tokens);
  ~LayerRunner();

  // Only the norm (no projection needed): out = rms_norm(x) · w.
  void norm(const float* x, int64_t tokens, const BackendWeight& w, std::vector<float>& out);
  void attention(const float* x, int64_t tokens, const AttentionWeights& w,
                 const AttentionCapture& capture);
  void mlp(const float* x, int64_t tokens, const MlpWeights& w, const MlpCapture& capture);
  // logits [T, V] of the head over the final norm (for calibration perplexity).
  void head(const float* x, int64_t tokens, const BackendWeight& norm, const BackendWeight& head,
            std::vector<float>& logits);

  Backend& backend() { return backend_; }

  // The last attention()/mlp() call's module output before the residual (o_proj / down_proj),
  // on the device: compared with a reference output there, no read-back.
  DeviceTensor last_delta() const { return last_delta_; }
  // Device tensor `i` of [tokens, hidden] kept for the caller (allocated on first use, reused
  // for the runner's life): where a reference pass keeps each row's module output.
  DeviceTensor reference_slot(size_t i, int64_t tokens);

  // Rows uploaded since the last forget_rows() stay on the device (up to kMaxKeptBytes) and are
  // reused when the same host row is run again: the measurement runs every row once per
  // candidate setting. Call it before the rows' contents change or their memory is freed.
  void forget_rows();
  static constexpr int64_t kMaxKeptBytes = int64_t{2} << 30;

 private:
  void begin(const float* x, int64_t tokens);
  void read(DeviceTensor t, int64_t tokens, std::vector<float>* out);
  // out = x + delta, formed on the host in fp32 (the backend's fused add also normalises).
  void add_residual(const float* x, DeviceTensor delta, int64_t tokens, std::vector<float>& out);

  Backend& backend_;
  ModelConfig config_;
  int64_t max_tokens_;
  std::unique_ptr<KvCacheStorage> cache_;
  std::unique_ptr<BackendWeight> inv_freq_;
  float rope_attention_factor_ = 1.0f;
  // Rows as "embedding tables", by host address and length; table_ is the current one.
  std::map<std::pair<const float*, int64_t>, std::unique_ptr<BackendWeight>> kept_rows_;
  int64_t kept_bytes_ = 0;
  std::unique_ptr<BackendWeight> unkept_row_;
  const BackendWeight* table_ = nullptr;
  std::vector<int32_t> ids_, pages_;
  DeviceTensor x_, h_, q_, k_, v_, attn_, attn_out_, gate_, up_, down_out_, logits_;
  DeviceTensor last_delta_;
  std::vector<DeviceTensor> reference_slots_;
};

}  // namespace hearth::quantizer
