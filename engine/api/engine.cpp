#include "engine/api/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "engine/api/gpu_split_plan.h"
#include "engine/api/memory_planner.h"
#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/generate/generator.h"
#include "engine/model/key_offsets.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_loader.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kEos:
    case FinishReason::kStopString:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kContextFull:
      return "context_full";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

const char* speculation_name(Speculation s) {
  switch (s) {
    case Speculation::kNgram:
      return "ngram";
    case Speculation::kDraft:
      return "draft";
    case Speculation::kOff:
      break;
  }
  return "off";
}

std::optional<Speculation> parse_speculation(std::string_view name) {
  if (name == "off") return Speculation::kOff;
  if (name == "ngram") return Speculation::kNgram;
  if (name == "draft") return Speculation::kDraft;
  return std::nullopt;
}

double GenerationStats::prompt_tokens_per_s() const {
  return prompt_seconds > 0 ? static_cast<double>(prompt_tokens) / prompt_seconds : 0;
}

double GenerationStats::decode_tokens_per_s() const {
  // The first token comes out of the prompt pass; decode speed counts the ones after it.
  return decode_seconds > 0 && generated_tokens > 1
             ? static_cast<double>(generated_tokens - 1) / decode_seconds
             : 0;
}

namespace {

// What an adapter is, for users; `dtype` is what the backend holds its A and B in, and
// `packed_base` whether it adapts packed quantized matrices on a GPU (adapter_device_bytes).
AdapterInfo describe_adapter(const LoraAdapter& lora, DType dtype, bool packed_base) {
  AdapterInfo info;
  info.path = lora.path;
  info.name = lora.name;
  info.format = lora.format;
  info.rank = lora.max_rank();
  info.alpha = lora.alpha;
  info.rslora = lora.rslora;
  info.targets = lora.target_names();
  info.layers = lora.layer_count();
  info.bytes = adapter_device_bytes(lora, dtype, packed_base);
  return info;
}

void require_loaded(const void* impl) {
  if (!impl) fail(ErrorCode::kInvalidArgument, "no model is loaded");
}

DType adapter_dtype(DeviceKind device) {
  return device == DeviceKind::kCpu ? DType::kF32 : DType::kF16;
}

}  // namespace

struct Engine::Impl {
  LoadOptions options;
  ResolvedLoad resolved;
  ModelBundle bundle;
  ModelBundle draft_bundle;  // Speculation::kDraft
  std::optional<ChatTemplate> chat_template;
  // One per GPU of a layer split, else one; the last holds the head, samples and runs the draft.
  std::vector<std::unique_ptr<Backend>> backends;
  Backend& backend() { return *backends.back(); }
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvCacheStorage> cache;
  std::unique_ptr<LlamaModel> draft_model;
  std::unique_ptr<KvCacheStorage> draft_cache;
  std::unique_ptr<DraftModel> drafter;
  std::unique_ptr<Generator> generator;
  std::vector<int32_t> eos_ids;  // the config's and the tokenizer's end-of-sequence ids
  struct LoadedAdapter {
    AdapterInfo info;
    std::shared_ptr<const LoraAdapter> lora;
    int slot = 0;  // LlamaModel::set_adapters slot
  };
  std::vector<LoadedAdapter> adapters;  // in load order
  int next_adapter_id = 1;
  // Requests not yet taken that run with adapters: their ids (unloading waits for them) and the
  // record for their result.
  struct RequestAdapters {
    std::vector<int> ids;
    std::vector<AppliedAdapter> applied;
  };
  std::map<RequestId, RequestAdapters> request_adapters;

  LoadedAdapter& adapter(int id);
  void apply_adapters();  // hands every loaded adapter to the model, by slot
  int add_adapter(std::shared_ptr<const LoraAdapter> lora, float weight);
};

Engine::Impl::LoadedAdapter& Engine::Impl::adapter(int id) {
  for (LoadedAdapter& a : adapters) {
    if (a.info.id == id) return a;
  }
  fail(ErrorCode::kInvalidArgument, "no loaded adapter has id " + std::to_string(id));
}

void Engine::Impl::apply_adapters() {
  std::vector<std::shared_ptr<const LoraAdapter>> slots(kMaxLoraSlots);
  for (const LoadedAdapter& a : adapters) slots[static_cast<size_t>(a.slot)] = a.lora;
  while (!slots.empty() && !slots.back()) slots.pop_back();
  model->set_adapters(slots);
}

int Engine::Impl::add_adapter(std::shared_ptr<const LoraAdapter> lora, float weight) {
  if (!std::isfinite(weight)) fail(ErrorCode::kInvalidArgument, "an adapter weight must be finite");
  if (adapters.size() >= static_cast<size_t>(Engine::kMaxAdapters)) {
    fail(ErrorCode::kInvalidArgument, "at most " + std::to_string(Engine::kMaxAdapters) +
                                          " adapters can be loaded at once; unload one first");
  }
  int slot = 0;
  while (std::any_of(adapters.begin(), adapters.end(),
                     [&](const LoadedAdapter& a) { return a.slot == slot; })) {
    ++slot;
  }
  LoadedAdapter loaded;
  loaded.info = describe_adapter(*lora, backend().activation_dtype(),
                                 packed_quantized_base(options, bundle.info));
  loaded.info.id = next_adapter_id;
  loaded.info.weight = weight;
  loaded.lora = std::move(lora);
  loaded.slot = slot;
  adapters.push_back(std::move(loaded));
  try {
    apply_adapters();
  } catch (...) {
    adapters.pop_back();
    throw;
  }
  return next_adapter_id++;
}

Engine::Engine() = default;
Engine::~Engine() = default;

ModelInfo Engine::inspect(const std::filesystem::path& model_path) {
  ModelBundle bundle = open_model(model_path, false);
  // What loading would refuse, inspecting refuses too: every tensor the config implies.
  LlamaModel::check_weights(bundle.info.config, *bundle.weights);
  return std::move(bundle.info);
}

namespace {

ModelConfig apply_overrides(ModelConfig config, const LoadOptions& options) {
  if (options.rope_scaling) config.rope_scaling = *options.rope_scaling;
  if (options.ntk_alpha) config.ntk_alpha = *options.ntk_alpha;
  config.validate();
  return config;
}

// `draft_info`: the draft model's info with Speculation::kDraft, else null.
MemoryPlan make_plan(const LoadOptions& options, const ModelInfo& info, const ResolvedLoad& r,
                     const ModelInfo* draft_info, size_t adapter_bytes) {
  MemoryPlan plan = estimate_memory(options, info, r);
  plan.adapters = adapter_bytes;
  std::optional<MemoryPlan> draft_plan;
  if (draft_info) {
    // The draft model and its cache (as many positions as the model's) on the same device.
    draft_plan = estimate_memory(options, *draft_info, r);
    const MemoryPlan& draft = *draft_plan;
    plan.weights += draft.weights;
    plan.kv_cache += draft.kv_cache;
    plan.activations += draft.activations;
    for (CacheChoice& choice : plan.cache_choices) {
      for (const CacheChoice& d : draft.cache_choices) {
        if (d.type == choice.type) choice.bytes_per_token += d.bytes_per_token;
      }
    }
  }
  // Without a usable GPU, query_device_memory() below says why, in the user's terms.
  if (options.device == DeviceKind::kCuda && cuda_available()) {
    check_gpu_options(options, device_count(DeviceKind::kCuda));
    const std::vector<int> gpus = load_gpus(options);
    if (gpus.size() > 1) {
      // The draft model goes beside the head, on the last GPU, and is placed with it.
      std::vector<DeviceMemoryInfo> devices;
      for (int g : gpus) devices.push_back(query_device_memory(DeviceKind::kCuda, g));
      plan.weights -= draft_plan ? draft_plan->weights : 0;
      plan.kv_cache -= draft_plan ? draft_plan->kv_cache : 0;
      plan.activations -= draft_plan ? draft_plan->activations : 0;
      if (options.gpu_split == GpuSplit::kTensor) {
        place_tensor_parallel(plan, options, info, r, devices, gpus);
      } else {
        place_on_gpus(plan, options, info, r, draft_plan ? &*draft_plan : nullptr, devices, gpus);
      }
      return plan;
    }
  }
  const DeviceMemoryInfo device = query_device_memory(options.device, load_gpus(options).front());
  plan.device_free = device.free_bytes;
  plan.device_total = device.total_bytes;
  plan.device_name = device.name;
  judge_plan(plan, options, r);
  if (!plan.fits && options.device == DeviceKind::kCuda && device_count(DeviceKind::kCuda) > 1) {
    plan.advice += " Or split it by layers over several of the " +
                   std::to_string(device_count(DeviceKind::kCuda)) + " GPUs.";
  }
  if (options.device == DeviceKind::kCuda) {
    GpuShare share;
    share.device = load_gpus(options).front();
    share.name = device.name;
    share.layers = info.config.num_layers;
    share.weights = plan.weights;
    share.kv_cache = plan.kv_cache;
    share.activations = plan.activations;
    share.workspace = plan.workspace;
    share.adapters = plan.adapters;
    share.limit = share.device_free = device.free_bytes;
    share.device_total = device.total_bytes;
    share.fits = plan.fits;
    plan.gpus.push_back(share);
  }
  return plan;
}

// A draft model proposes token ids the model must read as the same tokens: the same vocabulary
// (every id's piece) and the same logits width.
void check_draft_vocabulary(const ModelBundle& model, const ModelBundle& draft,
                            const std::filesystem::path& draft_path) {
  const Tokenizer& a = *model.tokenizer;
  const Tokenizer& b = *draft.tokenizer;
  const std::string name = draft_path.filename().string();
  if (a.vocab_size() != b.vocab_size() ||
      model.info.config.vocab_size != draft.info.config.vocab_size) {
    fail(ErrorCode::kInvalidArgument,
         "the draft model " + name + " has a vocabulary of " +
             std::to_string(draft.info.config.vocab_size) + " tokens, the model " +
             std::to_string(model.info.config.vocab_size) + ": it cannot propose for this model");
  }
  for (int32_t id = 0; id < a.vocab_size(); ++id) {
    if (a.piece(id) != b.piece(id)) {
      fail(ErrorCode::kInvalidArgument, "the draft model " + name +
                                            " has another vocabulary: token " + std::to_string(id) +
                                            " differs");
    }
  }
}

FinishReason to_finish_reason(JobEnd end) {
  switch (end) {
    case JobEnd::kEos:
      return FinishReason::kEos;
    case JobEnd::kStopString:
      return FinishReason::kStopString;
    case JobEnd::kLength:
      return FinishReason::kLength;
    case JobEnd::kContextFull:
      return FinishReason::kContextFull;
    case JobEnd::kCancelled:
      return FinishReason::kCancelled;
  }
  return FinishReason::kError;
}

}  // namespace

bool Engine::cuda_available() {
  return hearth::cuda_available();
}

const CudaStatus& Engine::cuda_status() {
  return hearth::cuda_status();
}

DeviceMemoryInfo Engine::device_memory(DeviceKind kind, int device) {
  return query_device_memory(kind, device);
}

std::vector<DeviceMemoryInfo> Engine::gpus() {
  std::vector<DeviceMemoryInfo> out;
  try {
    for (int g = 0; g < device_count(DeviceKind::kCuda); ++g) {
      out.push_back(query_device_memory(DeviceKind::kCuda, g));
    }
  } catch (const std::exception&) {
    // A driver that fails while listing: the GPUs found so far.
  }
  return out;
}

MemoryPlan Engine::plan(const LoadOptions& options) {
  ModelInfo info = inspect(options.model_path);
  info.config = apply_overrides(info.config, options);
  const ResolvedLoad resolved = resolve_load(options, info);
  std::optional<ModelInfo> draft;
  if (options.speculation == Speculation::kDraft) {
    draft = open_model(options.draft_model_path, false).info;
  }
  size_t adapter_bytes = 0;
  for (const AdapterSpec& a : options.adapters) {
    adapter_bytes +=
        describe_adapter(read_lora_adapter(a.path, info.config), adapter_dtype(options.device),
                         packed_quantized_base(options, info))
            .bytes;
  }
  return make_plan(options, info, resolved, draft ? &*draft : nullptr, adapter_bytes);
}

AdapterInfo Engine::inspect_adapter(const std::filesystem::path& adapter,
                                    const std::filesystem::path& model_path) {
  const ModelInfo info = open_model(model_path, false).info;
  return describe_adapter(read_lora_adapter(adapter, info.config), DType::kF16, false);
}

bool Engine::is_adapter(const std::filesystem::path& path) {
  return is_lora_adapter_path(path);
}

int Engine::load_adapter(const std::filesystem::path& path, float weight) {
  require_loaded(impl_.get());
  auto lora = std::make_shared<const LoraAdapter>(read_lora_adapter(path, impl_->model->config()));
  return impl_->add_adapter(std::move(lora), weight);
}

void Engine::unload_adapter(int id) {
  require_loaded(impl_.get());
  Impl::LoadedAdapter& a = impl_->adapter(id);
  for (const auto& [request, used] : impl_->request_adapters) {
    if (std::find(used.ids.begin(), used.ids.end(), id) != used.ids.end()) {
      fail(ErrorCode::kInvalidArgument, "adapter " + a.info.name +
                                            " is in use by a running request; unload it when "
                                            "the request ends");
    }
  }
  const auto it = std::find_if(impl_->adapters.begin(), impl_->adapters.end(),
                               [&](const Impl::LoadedAdapter& x) { return x.info.id == id; });
  Impl::LoadedAdapter removed = std::move(*it);
  impl_->adapters.erase(it);
  try {
    impl_->apply_adapters();
  } catch (...) {
    impl_->adapters.push_back(std::move(removed));
    throw;
  }
}

void Engine::set_adapter_weight(int id, float weight) {
  require_loaded(impl_.get());
  if (!std::isfinite(weight)) fail(ErrorCode::kInvalidArgument, "an adapter weight must be finite");
  impl_->adapter(id).info.weight = weight;
}

std::vector<AdapterInfo> Engine::adapters() const {
  if (!impl_) return {};
  std::vector<AdapterInfo> out;
  for (const Impl::LoadedAdapter& a : impl_->adapters) out.push_back(a.info);
  return out;
}

void Engine::load(const LoadOptions& options, const ProgressCallback& progress,
                  const CancelToken& cancel) {
  unload();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  auto report = [&](const char* stage, int64_t done, int64_t total) {
    if (progress) progress(LoadProgress{stage, done, total});
  };
  report("reading", 0, 1);
  impl->bundle = open_model(options.model_path, true);
  cancel.throw_if_cancelled();
  ModelInfo& info = impl->bundle.info;
  info.config = apply_overrides(info.config, options);
  impl->resolved = resolve_load(options, info);
  const bool drafted = options.speculation == Speculation::kDraft;
  if (drafted) {
    report("reading draft", 0, 1);
    impl->draft_bundle = open_model(options.draft_model_path, true);
    check_draft_vocabulary(impl->bundle, impl->draft_bundle, options.draft_model_path);
  }
  // Adapters are read (and checked) before any weight is uploaded.
  std::vector<std::shared_ptr<const LoraAdapter>> adapters;
  size_t adapter_bytes = 0;
  for (const AdapterSpec& a : options.adapters) {
    adapters.push_back(std::make_shared<const LoraAdapter>(read_lora_adapter(a.path, info.config)));
    adapter_bytes += describe_adapter(*adapters.back(), adapter_dtype(options.device),
                                      packed_quantized_base(options, info))
                         .bytes;
  }
  const MemoryPlan plan = make_plan(options, info, impl->resolved,
                                    drafted ? &impl->draft_bundle.info : nullptr, adapter_bytes);
  if (!plan.fits) fail(ErrorCode::kOutOfMemory, "The model does not fit: " + plan.advice);

  if (impl->bundle.chat_template_source) {
    impl->chat_template.emplace(*impl->bundle.chat_template_source);
  }
  LayerPlacement placement;
  if (plan.gpus.size() > 1 && options.gpu_split == GpuSplit::kTensor) {
    const ModelConfig& c = info.config;
    impl->backends.push_back(create_tensor_parallel(
        load_gpus(options), {c.num_heads, c.num_kv_heads, c.head_dim, c.intermediate_size}));
    placement = LayerPlacement::single(*impl->backends.back(), c.num_layers);
  } else if (plan.gpus.size() > 1) {
    for (const GpuShare& share : plan.gpus) {
      impl->backends.push_back(create_backend(options.device, share.device, options.cpu_threads));
      placement.backends.push_back(impl->backends.back().get());
      placement.layers.push_back(share.layers);
    }
  } else {
    impl->backends.push_back(create_backend(options.device, load_gpus(options).front(),
                                            options.cpu_threads, options.cpu_linears));
    placement = LayerPlacement::single(*impl->backends.back(), info.config.num_layers);
  }
  LlamaModelOptions model_options;
  model_options.max_seq_len = impl->resolved.max_seq_len;
  model_options.max_batch_tokens = impl->resolved.max_batch_tokens;
  model_options.max_logit_rows = impl->resolved.max_logit_rows;
  impl->model = std::make_unique<LlamaModel>(
      info.config, placement, *impl->bundle.weights, model_options,
      [&](int64_t done, int64_t total) { report("uploading", done, total); }, cancel);
  report("allocating cache", 0, 1);
  impl->cache = impl->model->create_kv_cache(impl->resolved.num_pages, impl->resolved.page_size,
                                             options.kv_cache_type);
  if (is_quantized(options.kv_cache_type)) report("measuring the cache's keys", 0, 1);
  calibrate_key_offsets(*impl->model, *impl->cache, *impl->bundle.tokenizer,
                        key_offset_tokens(options.device));
  if (options.speculation == Speculation::kDraft) {
    impl->draft_model = std::make_unique<LlamaModel>(
        impl->draft_bundle.info.config, impl->backend(), *impl->draft_bundle.weights, model_options,
        [&](int64_t done, int64_t total) { report("uploading draft", done, total); }, cancel);
    impl->draft_cache = impl->draft_model->create_kv_cache(
        impl->resolved.num_pages, impl->resolved.page_size, options.kv_cache_type);
    calibrate_key_offsets(*impl->draft_model, *impl->draft_cache, *impl->draft_bundle.tokenizer,
                          key_offset_tokens(options.device));
    impl->drafter = std::make_unique<DraftModel>(*impl->draft_model, *impl->draft_cache);
  }
  GeneratorOptions gen;
  gen.max_batch = impl->resolved.max_batch;
  gen.max_seq_len = impl->resolved.max_seq_len;
  gen.max_batch_tokens = impl->resolved.max_batch_tokens;
  gen.prefix_reuse = options.prefix_reuse;
  if (options.speculation != Speculation::kOff) {
    gen.speculation.mode = options.speculation == Speculation::kNgram ? SpeculationMode::kNgram
                                                                      : SpeculationMode::kDraft;
    gen.speculation.max_draft_tokens = options.draft_tokens;
    gen.speculation.max_step_rows = kSpeculationStepRows;
  }
  impl->generator = std::make_unique<Generator>(*impl->model, *impl->cache, *impl->bundle.tokenizer,
                                                gen, impl->drafter.get());
  for (size_t i = 0; i < adapters.size(); ++i) {
    report("applying adapters", static_cast<int64_t>(i), static_cast<int64_t>(adapters.size()));
    impl->add_adapter(adapters[i], options.adapters[i].weight);
  }
  impl->eos_ids = info.config.eos_token_ids;
  const std::optional<int32_t> eos = impl->bundle.tokenizer->eos_id();
  if (eos && std::find(impl->eos_ids.begin(), impl->eos_ids.end(), *eos) == impl->eos_ids.end()) {
    impl->eos_ids.push_back(*eos);
  }
  report("ready", 1, 1);
  impl_ = std::move(impl);
}

void Engine::unload() {
  if (!impl_) return;
  // Order matters: the generator and cache refer to the model, the model to the backend.
  impl_->generator.reset();
  impl_->drafter.reset();
  impl_->draft_cache.reset();
  impl_->draft_model.reset();
  impl_->cache.reset();
  impl_->model.reset();
  impl_->backends.clear();
  impl_.reset();
}

bool Engine::loaded() const {
  return impl_ != nullptr;
}

const ModelInfo& Engine::info() const {
  require_loaded(impl_.get());
  return impl_->bundle.info;
}

const LoadOptions& Engine::load_options() const {
  require_loaded(impl_.get());
  return impl_->options;
}

const Tokenizer& Engine::tokenizer() const {
  require_loaded(impl_.get());
  return *impl_->bundle.tokenizer;
}

int64_t Engine::max_seq_len() const {
  require_loaded(impl_.get());
  return impl_->resolved.max_seq_len;
}

MemoryUsage Engine::memory_usage() const {
  require_loaded(impl_.get());
  // A layer split's GPUs together (a tensor-parallel backend sums its own).
  MemoryUsage total;
  for (const auto& backend : impl_->backends) total += backend->memory_usage();
  return total;
}

std::string Engine::render_chat(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) const {
  require_loaded(impl_.get());
  if (impl_->chat_template) {
    return impl_->chat_template->apply(messages, add_generation_prompt, impl_->bundle.bos_token,
                                       impl_->bundle.eos_token);
  }
  // No template in the model: ChatML, the most common convention.
  std::string out;
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::vector<int32_t> Engine::encode_prompt(const GenerationRequest& request) const {
  require_loaded(impl_.get());
  if (!request.prompt_tokens.empty()) return request.prompt_tokens;
  const Tokenizer& tok = *impl_->bundle.tokenizer;
  // The template writes any BOS itself; special tokens in it are parsed.
  if (!request.messages.empty()) return tok.encode(render_chat(request.messages, true), false);
  return tok.encode(request.prompt, true);
}

RequestId Engine::submit(const GenerationRequest& request, RequestCallbacks callbacks) {
  require_loaded(impl_.get());
  JobRequest job;
  job.prompt = encode_prompt(request);
  job.sampling = request.sampling;
  job.max_tokens = request.max_tokens;
  job.stop_strings = request.stop_strings;
  job.eos_ids = impl_->eos_ids;
  job.ignore_eos = request.ignore_eos;
  job.logprobs = request.logprobs;
  job.on_text = std::move(callbacks.on_text);
  job.on_logprobs = std::move(callbacks.on_logprobs);
  // The adapters and weights this request runs with, captured now: later changes apply to later
  // requests.
  std::vector<AdapterWeight> chosen;
  if (request.adapters) {
    chosen = *request.adapters;
  } else {
    for (const Impl::LoadedAdapter& a : impl_->adapters)
      chosen.push_back({a.info.id, a.info.weight});
  }
  Impl::RequestAdapters used;
  std::vector<int> slot_ids;  // the adapter id of each slot the request weighs
  for (const AdapterWeight& w : chosen) {
    const Impl::LoadedAdapter& a = impl_->adapter(w.id);
    if (!std::isfinite(w.weight)) {
      fail(ErrorCode::kInvalidArgument, "the weight of adapter " + a.info.name + " is not finite");
    }
    if (w.weight == 0.0f) continue;
    if (job.adapter_weights.size() <= static_cast<size_t>(a.slot)) {
      job.adapter_weights.resize(static_cast<size_t>(a.slot) + 1, 0.0f);
      slot_ids.resize(static_cast<size_t>(a.slot) + 1, 0);
    }
    if (job.adapter_weights[static_cast<size_t>(a.slot)] != 0.0f) {
      fail(ErrorCode::kInvalidArgument, "adapter " + a.info.name + " is named twice");
    }
    job.adapter_weights[static_cast<size_t>(a.slot)] = w.weight;
    slot_ids[static_cast<size_t>(a.slot)] = a.info.id;
    used.ids.push_back(a.info.id);
    used.applied.push_back({a.info.name, a.info.path, w.weight});
  }
  // Pages computed with adapters are shared only with requests running the same ones (ids are
  // never reused, so an adapter loaded again starts afresh).
  uint64_t salt = 0;
  for (size_t slot = 0; slot < job.adapter_weights.size(); ++slot) {
    const float w = job.adapter_weights[slot];
    if (w == 0.0f) continue;
    uint32_t bits = 0;
    std::memcpy(&bits, &w, sizeof bits);
    salt = salt * 0x100000001b3ull + (static_cast<uint64_t>(slot_ids[slot]) << 32 | bits) + 1;
  }
  job.cache_salt = salt;
  const RequestId id = impl_->generator->submit(std::move(job));
  if (!used.ids.empty()) impl_->request_adapters[id] = std::move(used);
  return id;
}

void Engine::cancel(RequestId id) {
  require_loaded(impl_.get());
  impl_->generator->cancel(id);
}

bool Engine::step() {
  require_loaded(impl_.get());
  return impl_->generator->step();
}

bool Engine::idle() const {
  return !impl_ || impl_->generator->idle();
}

DecodeStepTimes Engine::decode_step_times() const {
  require_loaded(impl_.get());
  return impl_->generator->decode_step_times();
}

void Engine::reset_decode_step_times() {
  require_loaded(impl_.get());
  impl_->generator->reset_decode_step_times();
}

std::optional<GenerationResult> Engine::take_result(RequestId id) {
  require_loaded(impl_.get());
  std::optional<JobResult> r = impl_->generator->take_result(id);
  if (!r) return std::nullopt;
  GenerationResult g;
  g.text = std::move(r->text);
  g.tokens = std::move(r->tokens);
  g.logprobs = std::move(r->logprobs);
  g.finish = to_finish_reason(r->end);
  g.stats.prompt_tokens = r->prompt_tokens;
  g.stats.cached_prompt_tokens = r->cached_tokens;
  g.stats.proposed_tokens = r->proposed_tokens;
  g.stats.accepted_tokens = r->accepted_tokens;
  g.stats.generated_tokens = static_cast<int64_t>(g.tokens.size());
  g.stats.prompt_seconds = r->prompt_seconds;
  g.stats.decode_seconds = r->decode_seconds;
  if (const auto it = impl_->request_adapters.find(id); it != impl_->request_adapters.end()) {
    g.adapters = std::move(it->second.applied);
    impl_->request_adapters.erase(it);
  }
  return g;
}

GenerationResult Engine::generate(const GenerationRequest& request, const TextCallback& on_text,
                                  const CancelToken& cancel) {
  return std::move(generate_batch({request}, {on_text}, cancel).front());
}

std::vector<GenerationResult> Engine::generate_batch(const std::vector<GenerationRequest>& requests,
                                                     const std::vector<TextCallback>& on_text,
                                                     const CancelToken& cancel) {
  require_loaded(impl_.get());
  std::vector<RequestId> ids;
  std::vector<std::optional<GenerationResult>> results(requests.size());
  try {
    for (size_t i = 0; i < requests.size(); ++i) {
      ids.push_back(submit(requests[i], {i < on_text.size() ? on_text[i] : TextCallback{}, {}}));
    }
    // Until each of these requests has ended (others submitted meanwhile advance too).
    size_t pending = ids.size();
    while (pending > 0) {
      if (cancel.cancelled()) {
        for (RequestId id : ids) impl_->generator->cancel(id);
      }
      step();
      for (size_t i = 0; i < ids.size(); ++i) {
        if (!results[i] && (results[i] = take_result(ids[i]))) --pending;
      }
    }
  } catch (...) {
    // Leave the generator clean for the next request.
    for (RequestId id : ids) impl_->generator->cancel(id);
    while (!impl_->generator->idle()) impl_->generator->step();
    for (RequestId id : ids) impl_->generator->take_result(id);
    throw;
  }
  std::vector<GenerationResult> out;
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

}  // namespace hearth
