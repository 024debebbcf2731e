#include "engine/model/llama_model.h"

#include <array>
#include <atomic>
#include <cmath>

#include "engine/core/error.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/model/rope.h"

namespace hearth {

namespace {
int64_t next_graph_id() {
  static std::atomic<int64_t> next{0};
  return (next++ % (int64_t(1) << 20));
}
}  // namespace

struct LlamaModel::Layer {
  std::unique_ptr<BackendWeight> input_norm, post_attention_norm;
  std::unique_ptr<BackendWeight> q, k, v, o;
  std::unique_ptr<BackendWeight> gate, up, down;
  // LoRA of the linears sharing an input (null without adapters there).
  std::unique_ptr<BackendWeight> lora_qkv, lora_o, lora_gate_up, lora_down;
};

struct LlamaModel::Activations {
  DeviceTensor residual, normed, q, k, v, attn, attn_out, gate, up, mlp_out, head_in, logits;
};

// One backend's share of a split model (the whole model when not split).
struct LlamaModel::Stage {
  Backend* backend = nullptr;
  int64_t first_layer = 0;
  int64_t layers = 0;
  std::unique_ptr<BackendWeight> inv_freq;
  Activations act;  // head_in and logits on the last stage only
};

namespace {

std::string layer_prefix(int64_t i) {
  return "model.layers." + std::to_string(i) + ".";
}

void check_shape(const TensorInfo& info, const std::vector<int64_t>& expected) {
  if (info.shape != expected) {
    std::string want = "[";
    for (size_t i = 0; i < expected.size(); ++i)
      want += (i ? ", " : "") + std::to_string(expected[i]);
    std::string got = "[";
    for (size_t i = 0; i < info.shape.size(); ++i)
      got += (i ? ", " : "") + std::to_string(info.shape[i]);
    fail(ErrorCode::kInvalidFile, info.file + ": tensor " + info.name + " has shape " + got +
                                      "], the config needs " + want + "]");
  }
}

void check_tensor(const TensorSource& weights, const std::string& name,
                  const std::vector<int64_t>& expected) {
  if (!weights.has(name)) fail(ErrorCode::kInvalidFile, "the model has no tensor " + name);
  check_shape(weights.info(name), expected);
}

HostTensor read_tensor(const TensorSource& weights, const std::string& name,
                       const std::vector<int64_t>& expected) {
  check_tensor(weights, name, expected);
  return weights.get(name);
}

// Whether lm_head has weights of its own (a quantized or separate head wins over tying: EXL2
// writes lm_head even for tied models) or reuses the embeddings.
bool has_own_head(const ModelConfig& config, const TensorSource& weights) {
  if (weights.has("lm_head.weight") || weights.has("lm_head.q_weight") ||
      weights.has("lm_head.qweight")) {
    return true;
  }
  if (!config.tie_word_embeddings) {
    fail(ErrorCode::kInvalidFile, "the model has no lm_head and does not tie its embeddings");
  }
  return false;
}

// The bias of linear `prefix`, when it has one, must hold one value per output.
void check_bias(const TensorSource& weights, const std::string& prefix, int64_t out_features) {
  if (!weights.has(prefix + ".bias")) return;
  const TensorInfo bias = weights.info(prefix + ".bias");
  int64_t values = 1;
  for (int64_t d : bias.shape) values *= d;
  if (values != out_features) {
    fail(ErrorCode::kInvalidFile, prefix + ".bias has " + std::to_string(values) +
                                      " values, the layer has " + std::to_string(out_features) +
                                      " outputs");
  }
}

// Checks linear `prefix` as read_linear() would read it, without reading dense weights: a dense
// layer's tensor must exist with its shape; a quantized one is opened and validated (its tensors
// are views into the mapped files, so nothing large is read or dequantized).
void check_linear(const TensorSource& weights, const std::string& prefix, int64_t out_features,
                  int64_t in_features, const ModelConfig& config) {
  if (detect_linear_format(weights, prefix) != LinearFormat::kDense) {
    read_linear(weights, prefix, out_features, in_features, config);
    return;
  }
  check_tensor(weights, prefix + ".weight", {out_features, in_features});
  check_bias(weights, prefix, out_features);
}

}  // namespace

// A decoder layer's weights in load order: the name under "model.layers.<i>.", the shape the
// config gives it ([out, in] for linears) and where LlamaModel keeps it.
struct LlamaModel::LayerWeight {
  const char* name;
  bool linear;
  std::vector<int64_t> shape;
  std::unique_ptr<BackendWeight> Layer::*slot;
  LinearShard shard = LinearShard::kWhole;  // how a tensor-parallel backend divides it
};

std::vector<LlamaModel::LayerWeight> LlamaModel::layer_weights(const ModelConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  return {{"input_layernorm.weight", false, {H}, &Layer::input_norm},
          {"self_attn.q_proj", true, {c.q_dim(), H}, &Layer::q, LinearShard::kQHeads},
          {"self_attn.k_proj", true, {c.kv_dim(), H}, &Layer::k, LinearShard::kKvHeads},
          {"self_attn.v_proj", true, {c.kv_dim(), H}, &Layer::v, LinearShard::kKvHeads},
          {"self_attn.o_proj", true, {H, c.q_dim()}, &Layer::o, LinearShard::kFromHeads},
          {"post_attention_layernorm.weight", false, {H}, &Layer::post_attention_norm},
          {"mlp.gate_proj", true, {I, H}, &Layer::gate, LinearShard::kMlpColumns},
          {"mlp.up_proj", true, {I, H}, &Layer::up, LinearShard::kMlpColumns},
          {"mlp.down_proj", true, {H, I}, &Layer::down, LinearShard::kFromMlp}};
}

void LlamaModel::check_weights(const ModelConfig& config, const TensorSource& weights) {
  config.validate();
  const int64_t H = config.hidden_size;
  check_tensor(weights, "model.embed_tokens.weight", {config.vocab_size, H});
  const std::vector<LayerWeight> layer = layer_weights(config);
  for (int64_t i = 0; i < config.num_layers; ++i) {
    for (const LayerWeight& w : layer) {
      const std::string name = layer_prefix(i) + w.name;
      if (w.linear) {
        check_linear(weights, name, w.shape[0], w.shape[1], config);
      } else {
        check_tensor(weights, name, w.shape);
      }
    }
  }
  check_tensor(weights, "model.norm.weight", {H});
  if (has_own_head(config, weights)) check_linear(weights, "lm_head", config.vocab_size, H, config);
}

LinearSource read_linear(const TensorSource& weights, const std::string& prefix,
                         int64_t out_features, int64_t in_features, const ModelConfig& config) {
  LinearSource src;
  src.name = prefix;
  switch (detect_linear_format(weights, prefix)) {
    case LinearFormat::kDense:
      // Block-quantized GGUF weights stay packed; backends decode them as they multiply.
      if (weights.has(prefix + ".weight")) {
        check_shape(weights.info(prefix + ".weight"), {out_features, in_features});
        src.quantized = weights.packed(prefix + ".weight");
      }
      if (!src.quantized) {
        src.weight = read_tensor(weights, prefix + ".weight", {out_features, in_features});
      }
      break;
    case LinearFormat::kExl2:
    case LinearFormat::kGptq: {
      // The real shape goes in: EXL2 stores lm_head padded to a multiple of 32 outputs.
      QuantizedLinearOptions q;
      q.quantization_config_json = config.quantization_config_json;
      q.out_features = out_features;
      q.in_features = in_features;
      src.quantized = load_quantized_linear(weights, prefix, q);
      if (src.quantized->out_features() != out_features ||
          src.quantized->in_features() != in_features) {
        fail(ErrorCode::kInvalidFile,
             prefix + ": quantized layer is " + std::to_string(src.quantized->in_features()) +
                 " → " + std::to_string(src.quantized->out_features()) + ", the config needs " +
                 std::to_string(in_features) + " → " + std::to_string(out_features));
      }
      break;
    }
  }
  if (weights.has(prefix + ".bias")) {
    HostTensor bias = weights.get(prefix + ".bias");
    if (src.quantized && bias.shape.size() == 1 && bias.numel() > out_features &&
        bias.numel() - out_features < 32) {
      bias.shape = {out_features};  // an EXL2 bias padded like its layer: keep the real part
    }
    if (bias.numel() != out_features) {
      fail(ErrorCode::kInvalidFile, prefix + ".bias has " + std::to_string(bias.numel()) +
                                        " values, the layer has " + std::to_string(out_features) +
                                        " outputs");
    }
    // All-zero biases (GPTQ writers emit them) are dropped: they cost a pass for nothing.
    const std::vector<float> values = bias.to_floats();
    bool all_zero = true;
    for (float f : values) all_zero = all_zero && f == 0.0f;
    if (!all_zero) src.bias = std::move(bias);
  }
  return src;
}

LlamaModel::LlamaModel(const ModelConfig& config, Backend& backend, const TensorSource& weights,
                       const LlamaModelOptions& options, const WeightProgress& progress,
                       const CancelToken& cancel)
    : LlamaModel(config, LayerPlacement::single(backend, config.num_layers), weights, options,
                 progress, cancel) {}

LlamaModel::LlamaModel(const ModelConfig& config, const LayerPlacement& placement,
                       const TensorSource& weights, const LlamaModelOptions& options,
                       const WeightProgress& progress, const CancelToken& cancel)
    : config_(config), options_(options), graph_id_(next_graph_id()) {
  // A missing or misshapen tensor fails here, before gigabytes are uploaded.
  check_weights(config_, weights);
  placement.validate(config_.num_layers);
  stages_.resize(placement.backends.size());
  for (size_t s = 0, first = 0; s < stages_.size(); ++s) {
    stages_[s].backend = placement.backends[s];
    stages_[s].first_layer = static_cast<int64_t>(first);
    stages_[s].layers = placement.layers[s];
    first += static_cast<size_t>(placement.layers[s]);
  }
  Backend& first = *stages_.front().backend;
  Backend& last = *stages_.back().backend;
  const int64_t H = config_.hidden_size;
  const int64_t I = config_.intermediate_size;
  const int64_t V = config_.vocab_size;
  const int64_t total =
      3 + config_.num_layers * static_cast<int64_t>(layer_weights(config_).size());
  int64_t done = 0;
  auto step = [&] {
    cancel.throw_if_cancelled();
    if (progress) progress(++done, total);
  };

  // The table stays packed where the backend looks rows up in that form (a tied head then is the
  // same upload); otherwise it is a plain tensor.
  const auto packed_table = weights.packed("model.embed_tokens.weight");
  const bool packed_embedding = packed_table && first.embeds_packed(*packed_table);
  if (packed_embedding) {
    if (packed_table->out_features() != V || packed_table->in_features() != H) {
      fail(ErrorCode::kInvalidFile, "model.embed_tokens.weight: expected " + std::to_string(V) +
                                        " × " + std::to_string(H) + " values");
    }
    LinearSource table;
    table.name = "model.embed_tokens";
    table.quantized = packed_table;
    embedding_ = first.upload_linear(table);
  } else {
    embedding_ = first.upload(read_tensor(weights, "model.embed_tokens.weight", {V, H}));
  }
  step();
  const std::vector<LayerWeight> layer_weights = LlamaModel::layer_weights(config_);
  layers_.resize(static_cast<size_t>(config_.num_layers));
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    Layer& L = layers_[static_cast<size_t>(i)];
    Backend& backend = *stage_of_layer(i).backend;
    // Read first, so that gate and up can name it (LinearSource::mlp_down).
    const LinearSource down =
        read_linear(weights, layer_prefix(i) + "mlp.down_proj", H, I, config_);
    for (const LayerWeight& w : layer_weights) {
      const std::string name = layer_prefix(i) + w.name;
      if (w.linear) {
        LinearSource source = w.slot == &Layer::down
                                  ? down
                                  : read_linear(weights, name, w.shape[0], w.shape[1], config_);
        source.shard = w.shard;
        if (w.shard == LinearShard::kMlpColumns || w.shard == LinearShard::kFromMlp) {
          source.mlp_down = down.quantized;
        }
        L.*w.slot = backend.upload_linear(source);
      } else {
        L.*w.slot = backend.upload(read_tensor(weights, name, w.shape));
      }
      step();
    }
  }
  final_norm_ = last.upload(read_tensor(weights, "model.norm.weight", {H}));
  step();
  if (has_own_head(config_, weights)) {
    lm_head_ = last.upload_linear(read_linear(weights, "lm_head", V, H, config_));
  } else if (!packed_embedding || stages_.size() > 1) {
    // A packed table on the head's backend is the tied head itself (record_stage).
    LinearSource tied;
    tied.name = "lm_head (tied to model.embed_tokens)";
    tied.quantized = weights.packed("model.embed_tokens.weight");
    if (!tied.quantized) tied.weight = weights.get("model.embed_tokens.weight");
    lm_head_ = last.upload_linear(tied);
  }
  step();

  const RopeFrequencies rope = compute_rope_frequencies(config_, options_.max_seq_len);
  const HostTensor inv_freq =
      HostTensor::from_floats(rope.inv_freq, {static_cast<int64_t>(rope.inv_freq.size())});
  rope_attention_factor_ = rope.attention_factor;

  const int64_t T = options_.max_batch_tokens;
  const int64_t Lr = options_.max_logit_rows;
  for (Stage& stage : stages_) {
    Backend& b = *stage.backend;
    stage.inv_freq = b.upload(inv_freq);
    Activations& a = stage.act;
    a.residual = b.alloc_activation(T, H);
    a.normed = b.alloc_activation(T, H);
    a.q = b.alloc_activation(T, config_.q_dim());
    a.k = b.alloc_activation(T, config_.kv_dim());
    a.v = b.alloc_activation(T, config_.kv_dim());
    a.attn = b.alloc_activation(T, config_.q_dim());
    a.attn_out = b.alloc_activation(T, H);
    a.gate = b.alloc_activation(T, I);
    a.up = b.alloc_activation(T, I);
    a.mlp_out = b.alloc_activation(T, H);
  }
  Activations& a = stages_.back().act;
  a.head_in = last.alloc_activation(Lr, H);
  a.logits = last.alloc_activation(Lr, V);
}

LlamaModel::~LlamaModel() = default;

Backend& LlamaModel::backend() {
  return *stages_.back().backend;
}

LlamaModel::Stage& LlamaModel::stage_of_layer(int64_t layer) {
  for (Stage& stage : stages_) {
    if (layer < stage.first_layer + stage.layers) return stage;
  }
  return stages_.back();
}

std::unique_ptr<KvCacheStorage> LlamaModel::create_kv_cache(int64_t num_pages, int64_t page_size,
                                                            KvCacheType type) const {
  const KvCacheSpec spec = kv_cache_spec(num_pages, page_size, type);
  if (stages_.size() == 1) return stages_.front().backend->create_kv_cache(spec);
  std::vector<std::unique_ptr<KvCacheStorage>> parts;
  for (const Stage& stage : stages_) {
    KvCacheSpec part = spec;
    part.num_layers = stage.layers;
    parts.push_back(stage.backend->create_kv_cache(part));
  }
  return std::make_unique<SplitKvCache>(spec, std::move(parts));
}

KvCacheSpec LlamaModel::kv_cache_spec(int64_t num_pages, int64_t page_size,
                                      KvCacheType type) const {
  KvCacheSpec spec;
  spec.num_layers = config_.num_layers;
  spec.num_kv_heads = config_.num_kv_heads;
  spec.head_dim = config_.head_dim;
  spec.page_size = page_size;
  spec.num_pages = num_pages;
  spec.type = is_quantized(type)                                           ? type
              : stages_.front().backend->activation_dtype() == DType::kF32 ? KvCacheType::kF32
                                                                           : KvCacheType::kF16;
  return spec;
}

DeviceTensor LlamaModel::forward(const BatchDesc& batch, KvCacheStorage& cache) {
  const int64_t tokens = batch.total_tokens();
  if (tokens == 0) fail(ErrorCode::kInvalidArgument, "forward: the batch has no tokens");
  if (tokens > options_.max_batch_tokens) {
    fail(ErrorCode::kInvalidArgument, "forward: " + std::to_string(tokens) +
                                          " tokens exceed the batch limit of " +
                                          std::to_string(options_.max_batch_tokens));
  }
  if (batch.logit_rows() > options_.max_logit_rows) {
    fail(ErrorCode::kInvalidArgument, "forward: too many logit rows in one batch");
  }
  for (const SequenceSlice& s : batch.seqs) {
    const int64_t end = s.start_pos + static_cast<int64_t>(s.tokens.size());
    if (s.start_pos < 0 || end > options_.max_seq_len) {
      fail(ErrorCode::kInvalidArgument, "forward: positions up to " + std::to_string(end) +
                                            " exceed max_seq_len " +
                                            std::to_string(options_.max_seq_len));
    }
    const int64_t page_size = cache.spec().page_size;
    if (static_cast<int64_t>(s.page_table.size()) * page_size < end) {
      fail(ErrorCode::kInternal, "forward: a sequence's page table does not cover its tokens");
    }
    for (int32_t page : s.page_table) {
      if (page < 0 || page >= cache.spec().num_pages) {
        fail(ErrorCode::kInternal, "forward: page id out of range");
      }
    }
    for (int32_t id : s.tokens) {
      if (id < 0 || id >= config_.vocab_size) {
        fail(ErrorCode::kInvalidArgument,
             "forward: token id " + std::to_string(id) + " is outside the vocabulary");
      }
    }
  }
  auto* split = dynamic_cast<SplitKvCache*>(&cache);
  if (stages_.size() > 1 && (!split || split->parts() != stages_.size())) {
    fail(ErrorCode::kInternal, "forward: a model split by layers needs its own create_kv_cache()");
  }
  std::vector<PreparedBatch> prepared;
  for (const Stage& stage : stages_) prepared.push_back(stage.backend->prepare_batch(batch));
  const PreparedBatch& p = prepared.front();
  for (const PreparedBatch& other : prepared) {
    HEARTH_CHECK(other.tokens == p.tokens && other.logit_rows == p.logit_rows,
                 "the backends of a layer split padded the batch differently");
  }
  HEARTH_CHECK(p.tokens <= options_.max_batch_tokens && p.logit_rows <= options_.max_logit_rows,
               "backend padded the batch beyond the activation buffers");
  // Steps with adapters run more ops: their graphs are kept apart (and dropped by the backend
  // when set_adapters() replaces the weights they read).
  const bool adapters = has_adapters_ && batch.uses_adapters();
  for (size_t s = 0; s < stages_.size(); ++s) {
    Stage& stage = stages_[s];
    if (s > 0) {
      // The residual stream and the last layer's MLP output, which joins it at the next norm.
      const Activations& from = stages_[s - 1].act;
      stage.backend->receive(*stages_[s - 1].backend, from.residual, stage.act.residual, p.tokens);
      stage.backend->receive(*stages_[s - 1].backend, from.mlp_out, stage.act.mlp_out, p.tokens);
    }
    // A backend may serve several models (a draft model beside the main one): a captured step
    // replays one model's kernels and buffers, so the key names the model too.
    std::optional<int64_t> graph_key;
    if (prepared[s].graph_key) graph_key = *prepared[s].graph_key + (graph_id_ << 40);
    if (graph_key && adapters) *graph_key += int64_t(1) << 39;
    KvCacheStorage& part = split ? split->part(s) : cache;
    stage.backend->run([&] { record_stage(s, p.tokens, p.logit_rows, part, adapters); }, graph_key);
  }
  return stages_.back().act.logits.first_rows(p.logit_rows);
}

void LlamaModel::set_adapters(const std::vector<std::shared_ptr<const LoraAdapter>>& slots) {
  if (slots.size() > static_cast<size_t>(kMaxLoraSlots)) {
    fail(ErrorCode::kInvalidArgument,
         "at most " + std::to_string(kMaxLoraSlots) + " adapters can be applied at once");
  }
  struct Group {
    std::unique_ptr<BackendWeight> Layer::*slot;
    const char* what;
    std::vector<LoraProjection> targets;
  };
  const std::vector<Group> groups = {
      {&Layer::lora_qkv, "q/k/v", {LoraProjection::kQ, LoraProjection::kK, LoraProjection::kV}},
      {&Layer::lora_o, "o", {LoraProjection::kO}},
      {&Layer::lora_gate_up, "gate/up", {LoraProjection::kGate, LoraProjection::kUp}},
      {&Layer::lora_down, "down", {LoraProjection::kDown}}};
  // Build everything first: a failure leaves the adapters in place as they were.
  std::vector<std::array<std::unique_ptr<BackendWeight>, 4>> built(layers_.size());
  bool any = false;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t g = 0; g < groups.size(); ++g) {
      LoraSource source;
      source.name = layer_prefix(static_cast<int64_t>(i)) + " LoRA " + groups[g].what;
      source.in_features = lora_projection_shape(groups[g].targets.front(), config_).second;
      for (LoraProjection p : groups[g].targets) {
        source.out_features.push_back(lora_projection_shape(p, config_).first);
      }
      for (size_t s = 0; s < slots.size(); ++s) {
        if (!slots[s]) continue;
        for (const LoraLinear& l : slots[s]->linears) {
          if (l.layer != static_cast<int64_t>(i)) continue;
          for (size_t t = 0; t < groups[g].targets.size(); ++t) {
            if (l.projection != groups[g].targets[t]) continue;
            HEARTH_CHECK(l.a.shape.size() == 2 && l.a.shape[1] == source.in_features &&
                             l.b.shape.size() == 2 && l.b.shape[0] == source.out_features[t],
                         "set_adapters: an adapter read against another model");
            source.parts.push_back({static_cast<int>(t), static_cast<int>(s), l.a, l.b, l.scale});
          }
        }
      }
      if (source.parts.empty()) continue;
      built[i][g] = stage_of_layer(static_cast<int64_t>(i)).backend->upload_lora(source);
      any = true;
    }
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t g = 0; g < groups.size(); ++g) layers_[i].*groups[g].slot = std::move(built[i][g]);
  }
  has_adapters_ = any;
}

size_t LlamaModel::adapter_bytes() const {
  size_t n = 0;
  for (const Layer& L : layers_) {
    for (const auto* w : {&L.lora_qkv, &L.lora_o, &L.lora_gate_up, &L.lora_down}) {
      if (*w) n += (*w)->device_bytes();
    }
  }
  return n;
}

void LlamaModel::record_stage(size_t s, int64_t T, int64_t logit_rows, KvCacheStorage& cache,
                              bool adapters) {
  Stage& stage = stages_[s];
  Backend& backend = *stage.backend;
  Activations& a = stage.act;
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const DeviceTensor x = a.residual.first_rows(T), h = a.normed.first_rows(T);
  const DeviceTensor q = a.q.first_rows(T), k = a.k.first_rows(T), v = a.v.first_rows(T);
  const DeviceTensor attn = a.attn.first_rows(T), attn_out = a.attn_out.first_rows(T);
  const DeviceTensor gate = a.gate.first_rows(T), up = a.up.first_rows(T);
  const DeviceTensor mlp_out = a.mlp_out.first_rows(T);

  RopeParams rope;
  rope.inv_freq = stage.inv_freq.get();
  rope.attention_factor = rope_attention_factor_;
  rope.head_dim = config_.head_dim;
  rope.rotary_dim = config_.rotary_dim();
  AttentionParams ap;
  ap.num_heads = config_.num_heads;
  ap.num_kv_heads = config_.num_kv_heads;
  ap.head_dim = config_.head_dim;
  ap.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config_.head_dim)));

  if (s == 0) backend.embed(*embedding_, x);
  for (int64_t i = stage.first_layer; i < stage.first_layer + stage.layers; ++i) {
    const Layer& L = layers_[static_cast<size_t>(i)];
    // The previous layer's MLP output joins the residual stream here, fused with the norm.
    if (i == 0) {
      backend.rms_norm(x, *L.input_norm, eps, h);
    } else {
      backend.add_rms_norm(x, mlp_out, *L.input_norm, eps, h);
    }
    const DeviceTensor qkv[] = {q, k, v};
    const BackendWeight* qkv_weights[] = {L.q.get(), L.k.get(), L.v.get()};
    backend.linears(qkv_weights, h, qkv);
    if (adapters && L.lora_qkv) backend.lora(*L.lora_qkv, h, qkv);
    backend.rope(q, k, rope);
    ap.layer = i - stage.first_layer;  // the stage's cache holds its own layers only
    backend.attention(q, k, v, cache, ap, attn);
    // Every adapter adds into its linear's output right after the linear, so a backend can
    // fold it into the linear's launch (and still fuse that with the add and norm after it).
    backend.linear(*L.o, attn, attn_out);
    if (adapters && L.lora_o) backend.lora(*L.lora_o, attn, {&attn_out, 1});
    backend.add_rms_norm(x, attn_out, *L.post_attention_norm, eps, h);
    const DeviceTensor gate_up[] = {gate, up};
    const BackendWeight* gate_up_weights[] = {L.gate.get(), L.up.get()};
    backend.linears(gate_up_weights, h, gate_up);
    if (adapters && L.lora_gate_up) backend.lora(*L.lora_gate_up, h, gate_up);
    // down's adapter reads the activation; without one it need not be kept.
    const bool down_adapter = adapters && L.lora_down;
    backend.silu_mul_linear(gate, up, *L.down, mlp_out, down_adapter);
    if (down_adapter) backend.lora(*L.lora_down, gate, {&mlp_out, 1});
  }
  if (s + 1 < stages_.size()) return;
  backend.add_rms_norm(x, mlp_out, *final_norm_, eps, h);
  const DeviceTensor head_in = a.head_in.first_rows(logit_rows);
  backend.gather_logit_rows(h, head_in);
  backend.linear(lm_head_ ? *lm_head_ : *embedding_, head_in, a.logits.first_rows(logit_rows));
}

}  // namespace hearth
