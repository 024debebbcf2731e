#include "engine/quantizer/layer_runner.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"
#include "engine/model/rope.h"

namespace hearth::quantizer {
namespace {
constexpr int64_t kPageSize = 256;
}

LayerRunner::LayerRunner(Backend& backend, const ModelConfig& config, int64_t max_tokens)
    : backend_(backend), config_(config), max_tokens_(max_tokens) {
  const int64_t H = config.hidden_size, I = config.intermediate_size;
  const int64_t pages = (max_tokens + kPageSize - 1) / kPageSize;
  KvCacheSpec spec;
  spec.num_layers = 1;
  spec.num_kv_heads = config.num_kv_heads;
  spec.head_dim = config.head_dim;
  spec.page_size = kPageSize;
  spec.num_pages = pages;
  spec.type = backend.activation_dtype() == DType::kF32 ? KvCacheType::kF32 : KvCacheType::kF16;
  cache_ = backend.create_kv_cache(spec);
  pages_.resize(static_cast<size_t>(pages));
  std::iota(pages_.begin(), pages_.end(), 0);
  ids_.resize(static_cast<size_t>(max_tokens));
  std::iota(ids_.begin(), ids_.end(), 0);

  // The frequencies a default load uses (trained context, capped as the engine caps it), so
  // that context-dependent scalings (dynamic NTK, YaRN) calibrate as the model will run.
  const int64_t seq = std::max(max_tokens, std::min<int64_t>(config.max_position_embeddings, 8192));
  const RopeFrequencies rope = compute_rope_frequencies(config, seq);
  inv_freq_ = backend.upload(
      HostTensor::from_floats(rope.inv_freq, {static_cast<int64_t>(rope.inv_freq.size())}));
  rope_attention_factor_ = rope.attention_factor;

  const int64_t T = max_tokens;
  x_ = backend.alloc_activation(T, H);
  h_ = backend.alloc_activation(T, H);
  q_ = backend.alloc_activation(T, config.q_dim());
  k_ = backend.alloc_activation(T, config.kv_dim());
  v_ = backend.alloc_activation(T, config.kv_dim());
  attn_ = backend.alloc_activation(T, config.q_dim());
  attn_out_ = backend.alloc_activation(T, H);
  gate_ = backend.alloc_activation(T, I);
  up_ = backend.alloc_activation(T, I);
  down_out_ = backend.alloc_activation(T, H);
}

LayerRunner::~LayerRunner() = default;

void LayerRunner::forget_rows() {
  table_ = nullptr;
  unkept_row_.reset();
  kept_rows_.clear();
  kept_bytes_ = 0;
}

void LayerRunner::begin(const float* x, int64_t tokens) {
  HEARTH_CHECK(tokens > 0 && tokens <= max_tokens_, "LayerRunner: row length");
  const auto key = std::make_pair(x, tokens);
  if (auto it = kept_rows_.find(key); it != kept_rows_.end()) {
    table_ = it->second.get();
  } else {
    HostTensor t;
    t.dtype = DType::kF32;
    t.shape = {tokens, config_.hidden_size};
    t.data = x;  // the caller keeps the row alive while the module runs
    std::unique_ptr<BackendWeight> row = backend_.upload(t);
    const int64_t bytes = tokens * config_.hidden_size *
                          static_cast<int64_t>(dtype_size(backend_.activation_dtype()));
    if (kept_bytes_ + bytes <= kMaxKeptBytes) {
      kept_bytes_ += bytes;
      table_ = row.get();
      kept_rows_.emplace(key, std::move(row));
    } else {
      unkept_row_ = std::move(row);
      table_ = unkept_row_.get();
    }
  }
  BatchDesc batch;
  SequenceSlice s;
  s.tokens = std::span<const int32_t>(ids_.data(), static_cast<size_t>(tokens));
  s.start_pos = 0;
  s.page_table = pages_;
  batch.seqs.push_back(s);
  const PreparedBatch p = backend_.prepare_batch(batch);
  HEARTH_CHECK(p.tokens == tokens, "LayerRunner: the backend padded a prefill batch");
}

DeviceTensor LayerRunner::reference_slot(size_t i, int64_t tokens) {
  HEARTH_CHECK(tokens > 0 && tokens <= max_tokens_, "LayerRunner: row length");
  while (reference_slots_.size() <= i) {
    reference_slots_.push_back(backend_.alloc_activation(max_tokens_, config_.hidden_size));
  }
  return reference_slots_[i].first_rows(tokens);
}

void LayerRunner::read(DeviceTensor t, int64_t tokens, std::vector<float>* out) {
  if (!out) return;
  // resize() keeps the capacity of a buffer read into before: no new pages to fault in.
  out->resize(static_cast<size_t>(tokens * t.cols));
  backend_.read_into(t, tokens, *out);
}

void LayerRunner::norm(const float* xin, int64_t tokens, const BackendWeight& w,
                       std::vector<float>& out) {
  begin(xin, tokens);
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const DeviceTensor x = x_.first_rows(tokens), h = h_.first_rows(tokens);
  backend_.run(
      [&] {
        backend_.embed(*table_, x);
        backend_.rms_norm(x, w, eps, h);
      },
      std::nullopt);
  read(h, tokens, &out);
}

void LayerRunner::attention(const float* xin, int64_t tokens, const AttentionWeights& w,
                            const AttentionCapture& cap) {
  begin(xin, tokens);
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t T = tokens;
  const DeviceTensor x = x_.first_rows(T), h = h_.first_rows(T), q = q_.first_rows(T),
                     k = k_.first_rows(T), v = v_.first_rows(T), attn = attn_.first_rows(T),
                     attn_out = (cap.delta_to.data ? cap.delta_to : attn_out_).first_rows(T);
  last_delta_ = attn_out;
  RopeParams rope;
  rope.inv_freq = inv_freq_.get();
  rope.attention_factor = rope_attention_factor_;
  rope.head_dim = config_.head_dim;
  rope.rotary_dim = config_.rotary_dim();
  AttentionParams ap;
  ap.layer = 0;
  ap.num_heads = config_.num_heads;
  ap.num_kv_heads = config_.num_kv_heads;
  ap.head_dim = config_.head_dim;
  ap.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config_.head_dim)));
  backend_.run(
      [&] {
        backend_.embed(*table_, x);
        backend_.rms_norm(x, *w.norm, eps, h);
        backend_.linear(*w.q, h, q);
        backend_.linear(*w.k, h, k);
        backend_.linear(*w.v, h, v);
        backend_.rope(q, k, rope);
        backend_.attention(q, k, v, *cache_, ap, attn);
        backend_.linear(*w.o, attn, attn_out);
      },
      std::nullopt);
  read(h, T, cap.normed);
  read(attn, T, cap.attn);
  if (cap.output) add_residual(xin, attn_out, T, *cap.output);
}

void LayerRunner::mlp(const float* xin, int64_t tokens, const MlpWeights& w,
                      const MlpCapture& cap) {
  begin(xin, tokens);
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t T = tokens;
  const DeviceTensor x = x_.first_rows(T), h = h_.first_rows(T), gate = gate_.first_rows(T),
                     up = up_.first_rows(T),
                     down = (cap.delta_to.data ? cap.delta_to : down_out_).first_rows(T);
  last_delta_ = down;
  backend_.run(
      [&] {
        backend_.embed(*table_, x);
        backend_.rms_norm(x, *w.norm, eps, h);
        backend_.linear(*w.gate, h, gate);
        backend_.linear(*w.up, h, up);
        backend_.silu_mul(gate, up, gate);
        backend_.linear(*w.down, gate, down);
      },
      std::nullopt);
  read(h, T, cap.normed);
  read(gate, T, cap.pre_down);
  if (cap.output) add_residual(xin, down, T, *cap.output);
}

void LayerRunner::add_residual(const float* x, DeviceTensor delta, int64_t tokens,
                               std::vector<float>& out) {
  read(delta, tokens, &out);
  for (size_t i = 0; i < out.size(); ++i) out[i] += x[i];
}

void LayerRunner::head(const float* xin, int64_t tokens, const BackendWeight& norm,
                       const BackendWeight& head, std::vector<float>& logits) {
  if (logits_.data == nullptr) {
    logits_ = backend_.alloc_activation(max_tokens_, config_.vocab_size);
  }
  begin(xin, tokens);
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const DeviceTensor x = x_.first_rows(tokens), h = h_.first_rows(tokens),
                     lg = logits_.first_rows(tokens);
  backend_.run(
      [&] {
        backend_.embed(*table_, x);
        backend_.rms_norm(x, norm, eps, h);
        backend_.linear(head, h, lg);
      },
      std::nullopt);
  read(lg, tokens, &logits);
}

}  // namespace hearth::quantizer
