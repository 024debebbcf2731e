#include "engine/api/engine.h"

#include <chrono>

#include "engine/api/memory_planner.h"
#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/generate/generator.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_loader.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kEos:
    case FinishReason::kStopString: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kContextFull: return "context_full";
    case FinishReason::kError: return "error";
  }
  return "?";
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

struct Engine::Impl {
  LoadOptions options;
  ResolvedLoad resolved;
  ModelBundle bundle;
  std::optional<ChatTemplate> chat_template;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvCacheStorage> cache;
  std::unique_ptr<Generator> generator;
};

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

MemoryPlan make_plan(const LoadOptions& options, const ModelInfo& info, const ResolvedLoad& r) {
  MemoryPlan plan = estimate_memory(options, info, r);
  const DeviceMemoryInfo device = query_device_memory(options.device, options.cuda_device);
  plan.device_free = device.free_bytes;
  plan.device_total = device.total_bytes;
  plan.device_name = device.name;
  judge_plan(plan, options, r);
  return plan;
}

FinishReason to_finish_reason(JobEnd end) {
  switch (end) {
    case JobEnd::kEos: return FinishReason::kEos;
    case JobEnd::kStopString: return FinishReason::kStopString;
    case JobEnd::kLength: return FinishReason::kLength;
    case JobEnd::kContextFull: return FinishReason::kContextFull;
    case JobEnd::kCancelled: return FinishReason::kCancelled;
  }
  return FinishReason::kError;
}

}  // namespace

bool Engine::cuda_available() {
  return hearth::cuda_available();
}

DeviceMemoryInfo Engine::device_memory(DeviceKind kind, int device) {
  return query_device_memory(kind, device);
}

MemoryPlan Engine::plan(const LoadOptions& options) {
  ModelInfo info = inspect(options.model_path);
  info.config = apply_overrides(info.config, options);
  return make_plan(options, info, resolve_load(options, info));
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
  const MemoryPlan plan = make_plan(options, info, impl->resolved);
  if (!plan.fits) fail(ErrorCode::kOutOfMemory, "The model does not fit: " + plan.advice);

  if (impl->bundle.chat_template_source) {
    impl->chat_template.emplace(*impl->bundle.chat_template_source);
  }
  impl->backend = create_backend(options.device, options.cuda_device, options.cpu_threads);
  LlamaModelOptions model_options;
  model_options.max_seq_len = impl->resolved.max_seq_len;
  model_options.max_batch_tokens = impl->resolved.max_batch_tokens;
  model_options.max_logit_rows = impl->resolved.max_logit_rows;
  impl->model = std::make_unique<LlamaModel>(
      info.config, *impl->backend, *impl->bundle.weights, model_options,
      [&](int64_t done, int64_t total) { report("uploading", done, total); }, cancel);
  report("allocating cache", 0, 1);
  impl->cache = impl->backend->create_kv_cache(
      impl->model->kv_cache_spec(impl->resolved.num_pages, impl->resolved.page_size));
  GeneratorOptions gen;
  gen.max_batch = impl->resolved.max_batch;
  gen.max_seq_len = impl->resolved.max_seq_len;
  gen.max_batch_tokens = impl->resolved.max_batch_tokens;
  impl->generator = std::make_unique<Generator>(*impl->model, *impl->cache,
                                                *impl->bundle.tokenizer, gen);
  report("ready", 1, 1);
  impl_ = std::move(impl);
}

void Engine::unload() {
  if (!impl_) return;
  // Order matters: the generator and cache refer to the model, the model to the backend.
  impl_->generator.reset();
  impl_->cache.reset();
  impl_->model.reset();
  impl_->backend.reset();
  impl_.reset();
}

bool Engine::loaded() const { return impl_ != nullptr; }

namespace {
void require_loaded(const void* impl) {
  if (!impl) fail(ErrorCode::kInvalidArgument, "no model is loaded");
}
}  // namespace

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
  return impl_->backend->memory_usage();
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

GenerationResult Engine::generate(const GenerationRequest& request, const TextCallback& on_text,
                                  const CancelToken& cancel) {
  return std::move(generate_batch({request}, {on_text}, cancel).front());
}

std::vector<GenerationResult> Engine::generate_batch(
    const std::vector<GenerationRequest>& requests, const std::vector<TextCallback>& on_text,
    const CancelToken& cancel) {
  require_loaded(impl_.get());
  Impl& impl = *impl_;
  const Tokenizer& tok = *impl.bundle.tokenizer;
  std::vector<int32_t> eos = impl.bundle.info.config.eos_token_ids;
  if (tok.eos_id() && std::find(eos.begin(), eos.end(), *tok.eos_id()) == eos.end()) {
    eos.push_back(*tok.eos_id());
  }

  std::vector<int64_t> ids;
  try {
    for (size_t i = 0; i < requests.size(); ++i) {
      const GenerationRequest& r = requests[i];
      JobRequest job;
      job.prompt = encode_prompt(r);
      job.sampling = r.sampling;
      job.max_tokens = r.max_tokens;
      job.stop_strings = r.stop_strings;
      job.eos_ids = eos;
      job.ignore_eos = r.ignore_eos;
      if (i < on_text.size()) job.on_text = on_text[i];
      ids.push_back(impl.generator->submit(std::move(job)));
    }
    while (!impl.generator->idle()) {
      if (cancel.cancelled()) {
        for (int64_t id : ids) impl.generator->cancel(id);
      }
      impl.generator->step();
    }
  } catch (...) {
    // Leave the generator clean for the next request.
    for (int64_t id : ids) impl.generator->cancel(id);
    while (!impl.generator->idle()) impl.generator->step();
    for (int64_t id : ids) impl.generator->take_result(id);
    throw;
  }

  std::vector<GenerationResult> results;
  for (int64_t id : ids) {
    JobResult r = *impl.generator->take_result(id);
    GenerationResult g;
    g.text = std::move(r.text);
    g.tokens = std::move(r.tokens);
    g.finish = to_finish_reason(r.end);
    g.stats.prompt_tokens = r.prompt_tokens;
    g.stats.generated_tokens = static_cast<int64_t>(g.tokens.size());
    g.stats.prompt_seconds = r.prompt_seconds;
    g.stats.decode_seconds = r.decode_seconds;
    results.push_back(std::move(g));
  }
  return results;
}

}  // namespace hearth
