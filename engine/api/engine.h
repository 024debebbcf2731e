// The engine as the app, the CLI and the server use it: inspect a model, plan its memory, load
// it on a backend, and generate text. Not thread-safe: one thread drives an Engine (the app's
// worker thread, the CLI's main thread, the server's generation thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/backend_factory.h"
#include "engine/core/cancel.h"
#include "engine/generate/decode_step_times.h"
#include "engine/model/model_info.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampling_params.h"
#include "engine/template/chat_template.h"

namespace hearth {

class Tokenizer;

// Speculative decoding: kNgram proposes tokens copied from the request's own text (prompt
// lookup), kDraft has a smaller model with the same vocabulary (LoadOptions::draft_model_path)
// propose them; the model keeps those it agrees with, several tokens per step. Output is as
// without it (greedy: the same tokens; sampling: the same distribution).
enum class Speculation { kOff, kNgram, kDraft };
const char* speculation_name(Speculation s);  // "off", "ngram", "draft"
// "off" / "ngram" / "draft"; nullopt otherwise.
std::optional<Speculation> parse_speculation(std::string_view name);

// A LoRA adapter and the weight it is applied with (0: loaded but off).
struct AdapterSpec {
  std::filesystem::path path;  // a PEFT folder (adapter_config.json + adapter_model.safetensors)
                               // or a llama.cpp GGUF adapter (general.type = adapter)
  float weight = 1.0f;
};

// An adapter as checked against a model (Engine::inspect_adapter) or loaded (Engine::adapters).
struct AdapterInfo {
  int id = 0;  // loaded adapters: stable until unloaded, never reused by one Engine
  std::filesystem::path path;
  std::string name;    // the folder or file name
  std::string format;  // "peft" or "gguf"
  int64_t rank = 0;    // largest rank of its linears
  double alpha = 0;    // lora_alpha (of the largest-rank linears)
  bool rslora = false;
  std::vector<std::string> targets;  // projections it changes: "q_proj", ..., "down_proj"
  int64_t layers = 0;                // decoder layers it changes
  size_t bytes = 0;                  // memory it takes beside the model
  float weight = 1.0f;               // loaded: the weight for requests that do not choose their own
};

// One adapter and weight as a request applies it.
struct AdapterWeight {
  int id = 0;
  float weight = 1.0f;
};

// How several GPUs share a model: kLayers gives each a run of consecutive layers (and their KV
// cache), kTensor every layer's heads and MLP columns (tensor parallelism over NCCL).
enum class GpuSplit { kLayers, kTensor };
const char* gpu_split_name(GpuSplit split);  // "layer", "tensor"

struct LoadOptions {
  std::filesystem::path model_path;  // a model folder or a .gguf file
  DeviceKind device = DeviceKind::kCpu;
  int cuda_device = 0;  // the GPU, when `gpus` is empty
  // Several CUDA devices, in the order the layers pass through them (the first embeds the
  // tokens, the last holds the head and samples); empty: cuda_device alone.
  std::vector<int> gpus;
  GpuSplit gpu_split = GpuSplit::kLayers;
  // Layer split: GiB each of `gpus` may take for weights and cache, filled in order (as
  // ExLlamaV2's gpu_split); empty: layers shared in proportion to each GPU's free memory.
  std::vector<double> gpu_split_gib;
  // Memory every GPU keeps free for the rest of the system (a display, other programs).
  size_t gpu_reserve_bytes = size_t{256} << 20;
  int64_t max_seq_len = 0;  // 0: the model's trained context, capped at kDefaultMaxSeqLen
  std::optional<RopeScaling> rope_scaling;  // overrides the model's rope_scaling
  std::optional<double> ntk_alpha;          // NTK-aware base scaling, 1 = off
  int64_t cache_tokens = 0;                 // KV-cache capacity; 0: max_seq_len (+ batch slack)
  int max_batch = 8;                        // sequences generated together
  int cpu_threads = 0;                      // 0: every core
  // On the CPU, quantized linears use integer dot products on their codes (kFast, several times
  // faster) or the exact dequantized values (kExact, the reference).
  CpuLinears cpu_linears = CpuLinears::kFast;
  // Requests whose prompts start like an earlier one's share its cache pages instead of
  // computing them again (GenerationStats::cached_prompt_tokens says how many).
  bool prefix_reuse = true;
  // Tokens per KV-cache page, a multiple of 16 up to 1024 (0: 64). Prefix reuse shares whole
  // pages, so smaller pages share more of a prompt.
  int64_t kv_page_size = 0;
  Speculation speculation = Speculation::kOff;
  int draft_tokens = 8;  // most tokens proposed per sequence and step (1..16)
  // kDraft: the proposing model (a folder or .gguf), loaded beside the model on the same device
  // with a KV cache of the same capacity; its tokenizer must have the model's vocabulary.
  std::filesystem::path draft_model_path;
  // LoRA adapters loaded with the model (and counted in its plan); more can be loaded later.
  std::vector<AdapterSpec> adapters;
  // The KV cache's storage: kF16 (the backend's own precision: fp16 on CUDA, fp32 on the CPU),
  // or kQ8 / kQ6 / kQ4 (rotated, quantized in groups of 32: 1.9×, 2.5×, 3.6× the tokens of fp16
  // in the same memory; heads of 64 or 128 dims).
  KvCacheType kv_cache_type = KvCacheType::kF16;

  static constexpr int64_t kDefaultMaxSeqLen = 8192;
  static constexpr int kMaxDraftTokens = 16;
};

// One KV-cache choice in a plan: its bytes per token, and how many tokens would fit in the
// device memory the rest of the load leaves.
struct CacheChoice {
  KvCacheType type = KvCacheType::kF16;
  size_t bytes_per_token = 0;
  int64_t tokens_that_fit = 0;
};

// One GPU's part of a CUDA load: the layers it runs and what they take there.
struct GpuShare {
  int device = 0;
  std::string name;
  int64_t first_layer = 0;
  int64_t layers = 0;
  size_t weights = 0;
  size_t kv_cache = 0;
  size_t activations = 0;
  size_t workspace = 0;
  size_t adapters = 0;
  size_t needed() const { return weights + kv_cache + activations + workspace + adapters; }
  size_t limit = 0;  // what it may take: its free memory, or less under LoadOptions::gpu_split_gib
  size_t device_free = 0;
  size_t device_total = 0;
  bool fits = true;
};

// What a load will need, computed before anything is allocated.
struct MemoryPlan {
  size_t weights = 0;
  size_t kv_cache = 0;
  size_t activations = 0;
  size_t workspace = 0;
  size_t adapters = 0;  // LoadOptions::adapters
  size_t needed() const { return weights + kv_cache + activations + workspace + adapters; }
  size_t device_free = 0;
  size_t device_total = 0;
  bool fits = true;
  std::string advice;  // when it does not fit: what to change
  std::string device_name;
  KvCacheType kv_cache_type = KvCacheType::kF16;  // the one planned (kv_cache)
  std::vector<CacheChoice> cache_choices;         // fp16, q8, q6, q4 (where the model allows)
  // CUDA: each GPU's share, in layer order (one entry without a split). The totals above add
  // them up; device_free and device_total are the GPUs' together.
  std::vector<GpuShare> gpus;
};

struct LoadProgress {
  std::string stage;  // "reading", "uploading", "allocating cache"
  int64_t done = 0;
  int64_t total = 0;
};

enum class FinishReason { kEos, kStopString, kLength, kCancelled, kContextFull, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "stop", "length", "cancelled", ...

struct GenerationRequest {
  std::vector<int32_t> prompt_tokens;  // token ids, used as they are when not empty
  std::string prompt;                  // raw text (ignored when messages is not empty)
  std::vector<ChatMessage> messages;   // rendered with the model's chat template
  SamplingParams sampling;
  int32_t max_tokens = 512;
  std::vector<std::string> stop_strings;
  bool ignore_eos = false;
  // -1: none; else each generated token's log-probability and its `logprobs` most likely
  // alternatives (0..kMaxTopLogprobs), from the model's distribution before sampling.
  int32_t logprobs = -1;
  // The LoRA adapters this request runs with (ids from Engine::adapters()); nullopt: every
  // loaded adapter at its own weight (AdapterInfo::weight).
  std::optional<std::vector<AdapterWeight>> adapters;
};

// An adapter that shaped a result, for the record (history, logs).
struct AppliedAdapter {
  std::string name;
  std::filesystem::path path;
  float weight = 1.0f;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // of prompt_tokens, those an earlier request left in cache
  int64_t generated_tokens = 0;
  int64_t proposed_tokens = 0;  // speculative proposals the model checked
  int64_t accepted_tokens = 0;  // of those, the ones kept (part of generated_tokens)
  double prompt_seconds = 0;
  double decode_seconds = 0;
  double prompt_tokens_per_s() const;
  double decode_tokens_per_s() const;
};

struct GenerationResult {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;  // one per generated token, when asked for
  FinishReason finish = FinishReason::kEos;
  GenerationStats stats;
  std::vector<AppliedAdapter> adapters;  // those applied with a weight other than 0
};

// Streamed while a request runs: each text piece as it becomes final (never a partial UTF-8
// character, never a piece of a stop string).
using TextCallback = std::function<void(const std::string& piece)>;
// Each generated token's log-probabilities (requests with logprobs >= 0), before its text.
using LogprobsCallback = std::function<void(const TokenLogprobs&)>;
using ProgressCallback = std::function<void(const LoadProgress&)>;

using RequestId = int64_t;
struct RequestCallbacks {
  TextCallback on_text;
  LogprobsCallback on_logprobs;
};

class Engine {
 public:
  Engine();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Reads a model's config and tensor list without loading its weights.
  static ModelInfo inspect(const std::filesystem::path& model_path);
  // What load(options) would need, against what the device has free now.
  static MemoryPlan plan(const LoadOptions& options);
  // Whether this build has a CUDA backend and a GPU it can use is present. Never throws.
  static bool cuda_available();
  // The same, with the driver and GPU found or, when CUDA cannot be used, why and what to
  // install, in words for the user. Probed once per process. Never throws.
  static const CudaStatus& cuda_status();
  // A device's name and memory now. Throws Error(kUnsupported) for CUDA without a usable GPU.
  static DeviceMemoryInfo device_memory(DeviceKind kind, int device = 0);
  // Every GPU a load can use (LoadOptions::gpus indexes this list), with its memory now; empty
  // without CUDA. Never throws.
  static std::vector<DeviceMemoryInfo> gpus();

  // Loads a model (replacing any loaded one). Throws Error; on any failure nothing stays loaded
  // and all memory is released. Throws Error(kOutOfMemory) with the plan's numbers and advice
  // when the model cannot fit.
  void load(const LoadOptions& options, const ProgressCallback& progress = {},
            const CancelToken& cancel = {});
  void unload();
  bool loaded() const;
  const ModelInfo& info() const;
  const LoadOptions& load_options() const;
  const Tokenizer& tokenizer() const;
  int64_t max_seq_len() const;
  MemoryUsage memory_usage() const;

  // LoRA adapters (at most kMaxAdapters loaded at once). Loading, unloading or re-weighting one
  // never reloads the model; a request keeps the weights it was submitted with. inspect_adapter
  // checks an adapter against a model without loading either; it throws Error(kInvalidFile /
  // kUnsupported) naming the adapter and the tensor.
  static AdapterInfo inspect_adapter(const std::filesystem::path& adapter,
                                     const std::filesystem::path& model_path);
  // Throws Error naming the adapter (and tensor) when it does not fit the loaded model; the model
  // keeps working. Returns the adapter's id.
  int load_adapter(const std::filesystem::path& path, float weight = 1.0f);
  // Whether `path` is an adapter rather than a model: a folder with adapter_config.json, or a
  // GGUF whose general.type is "adapter". Never throws.
  static bool is_adapter(const std::filesystem::path& path);
  // Error(kInvalidArgument) for an unknown id or one that running requests still use.
  void unload_adapter(int id);
  void set_adapter_weight(int id, float weight);  // for requests that do not choose their own
  std::vector<AdapterInfo> adapters() const;      // loaded, in load order
  static constexpr int kMaxAdapters = 8;

  // The model's chat template applied to messages (ChatML when the model has none).
  std::string render_chat(const std::vector<ChatMessage>& messages,
                          bool add_generation_prompt = true) const;

  // The token ids generate() runs for `request`: its prompt_tokens as given, else its messages
  // through the chat template, else its prompt text (after BOS). Passed back as prompt_tokens,
  // they let a caller know a prompt's length before it runs without tokenizing twice.
  std::vector<int32_t> encode_prompt(const GenerationRequest& request) const;

  // Incremental generation, for callers that take new requests while others run (a server):
  // submit() queues a request, step() runs one forward pass over every queued and running
  // request (new ones join the batch as room allows), take_result() hands a finished request's
  // result over once. Callbacks run inside step(). Throws Error(kInvalidArgument) for a bad
  // request (empty or too long a prompt, bad sampling values).
  RequestId submit(const GenerationRequest& request, RequestCallbacks callbacks = {});
  void cancel(RequestId id);  // it ends with FinishReason::kCancelled
  bool step();                // false when nothing was queued or running
  bool idle() const;
  std::optional<GenerationResult> take_result(RequestId id);  // nullopt while it runs
  // Where decode steps spent their time since the model was loaded or the last reset: the
  // generator's own work against the forward pass and sampling (benchmarks).
  DecodeStepTimes decode_step_times() const;
  void reset_decode_step_times();

  // Runs one request to the end on the calling thread, streaming text pieces.
  GenerationResult generate(const GenerationRequest& request, const TextCallback& on_text = {},
                            const CancelToken& cancel = {});
  // Several requests batched together; callback i receives request i's pieces.
  std::vector<GenerationResult> generate_batch(const std::vector<GenerationRequest>& requests,
                                               const std::vector<TextCallback>& on_text = {},
                                               const CancelToken& cancel = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth
