#include "engine/api/memory_planner.h"

#include <algorithm>
#include <cstdio>

#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"

namespace hearth {

size_t adapter_device_bytes(const LoraAdapter& lora, DType dtype, bool packed_quantized_base) {
  int64_t values = lora.parameter_count();
  if (packed_quantized_base) {
    constexpr int64_t kChunkRows = 32;
    for (const LoraLinear& l : lora.linears) {
      const int64_t inputs = l.a.shape[1];
      values += l.rank() * ((inputs + kChunkRows - 1) / kChunkRows * kChunkRows);
    }
  }
  return static_cast<size_t>(values) * dtype_size(dtype);
}

bool packed_quantized_base(const LoadOptions& options, const ModelInfo& info) {
  if (options.device != DeviceKind::kCuda) return false;
  if (info.format == ModelFormat::kExl2 || info.format == ModelFormat::kGptq) return true;
  if (info.format != ModelFormat::kGguf || info.cuda_layer_bytes.empty()) return false;
  // GGUF linears small enough to run faster in fp16 are expanded at load: packed when a layer
  // takes less than its linears would in fp16.
  uint64_t fp16_linears = 0;
  for (int p = 0; p < kLoraProjections; ++p) {
    const auto [out, in] = lora_projection_shape(static_cast<LoraProjection>(p), info.config);
    fp16_linears += static_cast<uint64_t>(out * in) * 2;
  }
  return info.cuda_layer_bytes.front() < fp16_linears;
}

std::string format_bytes(size_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1ull << 20));
  }
  return buf;
}

ResolvedLoad resolve_load(const LoadOptions& options, const ModelInfo& info) {
  ResolvedLoad r;
  const ModelConfig& c = info.config;
  if (options.max_seq_len < 0) fail(ErrorCode::kInvalidArgument, "max_seq_len must be >= 0");
  if (options.max_batch < 1 || options.max_batch > 256) {
    fail(ErrorCode::kInvalidArgument, "max_batch must be in 1..256");
  }
  r.max_seq_len = options.max_seq_len > 0 ? options.max_seq_len
                                          : std::min<int64_t>(c.max_position_embeddings,
                                                              LoadOptions::kDefaultMaxSeqLen);
  if (r.max_seq_len > (1 << 22)) fail(ErrorCode::kInvalidArgument, "max_seq_len is too large");
  r.max_batch = options.max_batch;
  r.cache_tokens = options.cache_tokens > 0 ? options.cache_tokens : r.max_seq_len;
  if (options.kv_page_size != 0) {
    if (options.kv_page_size < 16 || options.kv_page_size > 1024 || options.kv_page_size % 16) {
      fail(ErrorCode::kInvalidArgument, "kv_page_size must be a multiple of 16 from 16 to 1024");
    }
    r.page_size = options.kv_page_size;
  }
  r.num_pages = (r.cache_tokens + r.page_size - 1) / r.page_size;
  r.max_batch_tokens = options.device == DeviceKind::kCuda ? 2048 : 512;
  r.max_logit_rows = r.max_batch;
  if (options.speculation != Speculation::kOff) {
    if (options.draft_tokens < 1 || options.draft_tokens > LoadOptions::kMaxDraftTokens) {
      fail(ErrorCode::kInvalidArgument,
           "draft_tokens must be in 1.." + std::to_string(LoadOptions::kMaxDraftTokens));
    }
    if (options.speculation == Speculation::kDraft && options.draft_model_path.empty()) {
      fail(ErrorCode::kInvalidArgument, "draft speculation needs a draft model");
    }
    // A step checks up to kSpeculationStepRows decode rows, and prompt chunks add one each.
    r.max_logit_rows = r.max_batch + kSpeculationStepRows;
  }
  return r;
}

MemoryPlan estimate_memory(const LoadOptions& options, const ModelInfo& info,
                           const ResolvedLoad& r) {
  const ModelConfig& c = info.config;
  const bool cuda = options.device == DeviceKind::kCuda;
  const size_t act_size = cuda ? 2 : 4;
  MemoryPlan plan;
  const auto params = static_cast<size_t>(info.parameters);
  switch (info.format) {
    case ModelFormat::kGguf:
      // The CPU keeps block-quantized linears packed (re-laid by its fast path) and the
      // embedding table in fp32; the GPU keeps the linears its quantized kernels run packed and
      // the rest in fp16.
      if (cuda) {
        plan.weights = info.cuda_weight_bytes > 0 ? info.cuda_weight_bytes : params * 2;
      } else {
        const bool fast = options.cpu_linears == CpuLinears::kFast && info.cpu_fast_weight_bytes;
        plan.weights = (fast ? info.cpu_fast_weight_bytes : info.file_bytes) +
                       static_cast<size_t>(c.vocab_size * c.hidden_size) * 4;
      }
      break;
    case ModelFormat::kSafetensors:
      plan.weights = cuda ? params * 2 : info.file_bytes;
      break;
    case ModelFormat::kExl2:
    case ModelFormat::kGptq:
      // The CPU's fast path re-lays the quantized linears (EXL2 groups wider than 4 bits as
      // bytes: up to about twice the file); the GPU keeps the file's layout.
      plan.weights = !cuda && options.cpu_linears == CpuLinears::kFast && info.cpu_fast_weight_bytes
                         ? info.cpu_fast_weight_bytes
                         : info.file_bytes;
      break;
  }
  KvCacheSpec spec;
  spec.num_layers = c.num_layers;
  spec.num_kv_heads = c.num_kv_heads;
  spec.head_dim = c.head_dim;
  spec.page_size = r.page_size;
  spec.num_pages = r.num_pages;
  require_kv_quant_supported(options.kv_cache_type, c.head_dim);
  const KvCacheType native = cuda ? KvCacheType::kF16 : KvCacheType::kF32;
  for (KvCacheType t : {native, KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    if (is_quantized(t) && !kv_quant_supported(c.head_dim)) continue;
    spec.type = t;
    plan.cache_choices.push_back({t == native ? KvCacheType::kF16 : t, spec.bytes_per_token(), 0});
  }
  spec.type = is_quantized(options.kv_cache_type) ? options.kv_cache_type : native;
  plan.kv_cache_type = options.kv_cache_type;
  plan.kv_cache = spec.bytes();
  const auto T = static_cast<size_t>(r.max_batch_tokens);
  const auto per_row = static_cast<size_t>(4 * c.hidden_size + 2 * c.q_dim() + 2 * c.kv_dim() +
                                           2 * c.intermediate_size);
  plan.activations = (T * per_row + static_cast<size_t>(r.max_logit_rows) *
                                        static_cast<size_t>(c.hidden_size + c.vocab_size)) *
                     act_size;
  WorkspaceShape shape;
  shape.max_batch_tokens = r.max_batch_tokens;
  shape.max_logit_rows = r.max_logit_rows;
  shape.vocab = c.vocab_size;
  shape.num_heads = c.num_heads;
  shape.head_dim = c.head_dim;
  shape.max_out_features = std::max(c.vocab_size, c.intermediate_size);
  shape.max_in_features = std::max({c.hidden_size, c.q_dim(), c.intermediate_size});
  shape.quantized_linears = info.format == ModelFormat::kExl2 || info.format == ModelFormat::kGptq;
  plan.workspace = backend_workspace_bytes(options.device, shape);
  return plan;
}

void judge_plan(MemoryPlan& plan, const LoadOptions& options, const ResolvedLoad& r) {
  // Keep a margin: the rest of the system (and the display, on a GPU) needs memory too.
  const size_t margin =
      options.device == DeviceKind::kCuda ? options.gpu_reserve_bytes : (size_t{512} << 20);
  const size_t besides_cache = margin + plan.needed() - plan.kv_cache;
  for (CacheChoice& choice : plan.cache_choices) {
    choice.tokens_that_fit =
        plan.device_free > besides_cache && choice.bytes_per_token > 0
            ? static_cast<int64_t>((plan.device_free - besides_cache) / choice.bytes_per_token)
            : 0;
  }
  plan.fits = plan.needed() + margin <= plan.device_free;
  if (plan.fits) return;
  std::string advice = "needs " + format_bytes(plan.needed()) + " (weights " +
                       format_bytes(plan.weights) + ", cache " + format_bytes(plan.kv_cache) +
                       ", activations " + format_bytes(plan.activations) + ") but " +
                       format_bytes(plan.device_free) + " is free on " + plan.device_name + ".";
  if (plan.weights + margin > plan.device_free) {
    advice += options.device == DeviceKind::kCuda
                  ? " The weights alone do not fit: choose a smaller quantization (fewer bits "
                    "per weight) or load on the CPU."
                  : " The weights alone do not fit: choose a smaller quantization.";
  } else {
    const size_t fixed = margin + plan.weights + plan.activations + plan.workspace;
    const size_t room = plan.device_free > fixed ? plan.device_free - fixed : 0;
    const size_t per_token =
        r.num_pages > 0 ? plan.kv_cache / static_cast<size_t>(r.num_pages * r.page_size) : 1;
    const size_t tokens = per_token ? room / per_token : 0;
    advice += " Lower max_seq_len / cache size to about " + std::to_string(tokens / 256 * 256) +
              " tokens" + (options.device == DeviceKind::kCuda ? ", or load on the CPU" : "");
    // A smaller cache type that would fit the whole context, if there is one.
    const int64_t wanted = r.num_pages * r.page_size;
    for (const CacheChoice& choice : plan.cache_choices) {
      if (is_quantized(choice.type) && choice.type != options.kv_cache_type &&
          choice.tokens_that_fit >= wanted) {
        advice += std::string(", or choose the ") + kv_cache_type_name(choice.type) +
                  " KV cache, which fits it";
        break;
      }
    }
    advice += ".";
  }
  plan.advice = advice;
}

}  // namespace hearth
