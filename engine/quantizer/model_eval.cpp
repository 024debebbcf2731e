#include "engine/quantizer/model_eval.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/model/key_offsets.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/calibration.h"

namespace hearth {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kPage = 256;

// The model on a backend with a cache for one window.
struct LoadedModel {
  ModelBundle bundle;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvCacheStorage> cache;
  std::vector<int32_t> pages;

  LoadedModel(const fs::path& path, Backend& backend, int64_t ctx, const CancelToken& cancel,
              const std::vector<AdapterSpec>& adapters = {},
              KvCacheType cache_type = KvCacheType::kF16, int64_t measured_tokens = 0)
      : bundle(open_model(path, true)) {
    LlamaModelOptions o;
    o.max_seq_len = ctx;
    o.max_batch_tokens = ctx;
    o.max_logit_rows = ctx;
    model = std::make_unique<LlamaModel>(bundle.info.config, backend, *bundle.weights, o,
                                         WeightProgress{}, cancel);
    const int64_t n = (ctx + kPage - 1) / kPage;
    cache = backend.create_kv_cache(model->kv_cache_spec(n, kPage, cache_type));
    pages.resize(static_cast<size_t>(n));
    std::iota(pages.begin(), pages.end(), 0);
    std::vector<std::shared_ptr<const LoraAdapter>> slots;
    for (const AdapterSpec& a : adapters) {
      slots.push_back(
          std::make_shared<const LoraAdapter>(read_lora_adapter(a.path, bundle.info.config)));
      adapter_weights.push_back(a.weight);
    }
    if (!slots.empty()) model->set_adapters(slots);
    calibrate_key_offsets(*model, *cache, *bundle.tokenizer, measured_tokens);
  }
  std::vector<float> adapter_weights;  // per slot

  // Log-probabilities [rows, V] of the window's positions [first, tokens.size() - 1).
  std::vector<float> log_probs(std::span<const int32_t> tokens, int64_t first) {
    BatchDesc b;
    SequenceSlice s;
    s.tokens = tokens;
    s.start_pos = 0;
    s.page_table = pages;
    s.all_logits = true;
    s.adapter_weights = adapter_weights;
    b.seqs.push_back(s);
    const DeviceTensor logits = model->forward(b, *cache);
    const auto T = static_cast<int64_t>(tokens.size());
    std::vector<float> all = model->backend().read(logits, T);
    const int64_t V = model->config().vocab_size;
    const int64_t rows = T - 1 - first;
    std::vector<float> out(static_cast<size_t>(rows * V));
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = all.data() + (first + r) * V;
      float* dst = out.data() + r * V;
      float mx = -INFINITY;
      for (int64_t v = 0; v < V; ++v) mx = std::max(mx, src[v]);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(src[v] - mx));
      const float lse = mx + static_cast<float>(std::log(sum));
      for (int64_t v = 0; v < V; ++v) dst[v] = src[v] - lse;
    }
    return out;
  }
};

std::vector<int32_t> tokenize(const ModelBundle& b, const std::string& text, const EvalOptions& o) {
  std::vector<int32_t> ids = b.tokenizer->encode(text, false);
  if (o.add_bos && b.tokenizer->adds_bos() && b.tokenizer->bos_id()) {
    ids.insert(ids.begin(), *b.tokenizer->bos_id());
  }
  if (o.max_tokens > 0 && static_cast<int64_t>(ids.size()) > o.max_tokens) {
    ids.resize(static_cast<size_t>(o.max_tokens));
  }
  if (ids.size() < 2)
    fail(ErrorCode::kInvalidArgument, "the evaluation text has fewer than 2 tokens");
  return ids;
}

// Windows of the sliding-window method: (begin, end, first scored position within the window).
struct Window {
  int64_t begin, end, first;
};

std::vector<Window> windows(int64_t n, int64_t ctx, int64_t stride) {
  std::vector<Window> w;
  int64_t prev_end = 0;
  for (int64_t begin = 0; begin < n; begin += stride) {
    const int64_t end = std::min(begin + ctx, n);
    const int64_t trg = end - prev_end;  // tokens newly scored
    // Window position j predicts token j + 1; tokens prev_end..end-1 are scored, the first
    // window's token 0 cannot be.
    const int64_t first = std::max<int64_t>(0, (end - trg) - begin - 1);
    w.push_back({begin, end, first});
    prev_end = end;
    if (end == n) break;
  }
  return w;
}

void check_ctx(EvalOptions& o, const ModelConfig& c) {
  if (o.ctx < 2) fail(ErrorCode::kInvalidArgument, "the evaluation context must be at least 2");
  o.ctx = std::min(o.ctx, c.max_position_embeddings);
  if (o.stride <= 0) o.stride = std::max<int64_t>(1, o.ctx / 2);
  if (o.stride > o.ctx) fail(ErrorCode::kInvalidArgument, "the stride must not exceed the context");
}

}  // namespace

PerplexityResult evaluate_perplexity(const fs::path& model, const std::string& text,
                                     const EvalOptions& options, const EvalProgress& progress,
                                     const CancelToken& cancel) {
  EvalOptions o = options;
  const ModelInfo info = Engine::inspect(model);
  check_ctx(o, info.config);
  auto backend = create_backend(o.device, o.cuda_device, o.cpu_threads, o.cpu_linears);
  LoadedModel m(model, *backend, o.ctx, cancel, o.adapters, o.kv_cache_type,
                key_offset_tokens(o.device));
  const std::vector<int32_t> ids = tokenize(m.bundle, text, o);
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t V = m.bundle.info.config.vocab_size;
  PerplexityResult r;
  double nll = 0;
  const auto ws = windows(n, o.ctx, o.stride);
  for (const Window& w : ws) {
    cancel.throw_if_cancelled();
    std::span<const int32_t> win(ids.data() + w.begin, static_cast<size_t>(w.end - w.begin));
    const std::vector<float> lp = m.log_probs(win, w.first);
    const int64_t rows = (w.end - w.begin) - 1 - w.first;
    for (int64_t j = 0; j < rows; ++j) {
      const int32_t target = win[static_cast<size_t>(w.first + j + 1)];
      nll -= lp[j * V + target];
    }
    r.tokens += rows;
    ++r.windows;
    if (progress) progress(r.tokens, n - 1);
  }
  r.nll = nll / static_cast<double>(r.tokens);
  r.perplexity = std::exp(r.nll);
  return r;
}

KlResult evaluate_kl_divergence(const fs::path& model, const fs::path& reference,
                                const std::string& text, const EvalOptions& options,
                                const EvalProgress& progress, const CancelToken& cancel) {
  EvalOptions o = options;
  const ModelInfo ref_info = Engine::inspect(reference);
  const ModelInfo info = Engine::inspect(model);
  if (ref_info.config.vocab_size != info.config.vocab_size) {
    fail(ErrorCode::kInvalidArgument, "the models have different vocabularies (" +
                                          std::to_string(info.config.vocab_size) + " and " +
                                          std::to_string(ref_info.config.vocab_size) + " tokens)");
  }
  check_ctx(o, ref_info.config);
  o.ctx = std::min(o.ctx, info.config.max_position_embeddings);
  auto backend = create_backend(o.device, o.cuda_device, o.cpu_threads, o.cpu_linears);
  LoadedModel ref(reference, *backend, o.ctx, cancel);
  LoadedModel mod(model, *backend, o.ctx, cancel, o.adapters, o.kv_cache_type,
                  key_offset_tokens(o.device));
  const std::vector<int32_t> ids = tokenize(ref.bundle, text, o);
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t V = ref_info.config.vocab_size;
  KlResult r;
  std::vector<double> kls;
  double nll_ref = 0, nll_mod = 0;
  int64_t agree = 0;
  for (const Window& w : windows(n, o.ctx, o.stride)) {
    cancel.throw_if_cancelled();
    std::span<const int32_t> win(ids.data() + w.begin, static_cast<size_t>(w.end - w.begin));
    const std::vector<float> a = ref.log_probs(win, w.first);
    const std::vector<float> b = mod.log_probs(win, w.first);
    const int64_t rows = (w.end - w.begin) - 1 - w.first;
    for (int64_t j = 0; j < rows; ++j) {
      const float* pa = a.data() + j * V;
      const float* pb = b.data() + j * V;
      double kl = 0;
      int64_t am = 0, bm = 0;
      for (int64_t v = 0; v < V; ++v) {
        const double p = std::exp(static_cast<double>(pa[v]));
        kl += p * (static_cast<double>(pa[v]) - pb[v]);
        if (pa[v] > pa[am]) am = v;
        if (pb[v] > pb[bm]) bm = v;
      }
      kls.push_back(std::max(0.0, kl));
      agree += am == bm;
      const int32_t target = win[static_cast<size_t>(w.first + j + 1)];
      nll_ref -= pa[target];
      nll_mod -= pb[target];
    }
    r.tokens += rows;
    if (progress) progress(r.tokens, n - 1);
  }
  const auto T = static_cast<double>(r.tokens);
  r.kl_mean = std::accumulate(kls.begin(), kls.end(), 0.0) / T;
  std::vector<double> sorted = kls;
  std::sort(sorted.begin(), sorted.end());
  const auto idx = static_cast<size_t>(
      std::max<double>(0.0, std::ceil(0.999 * static_cast<double>(sorted.size())) - 1.0));
  r.kl_p999 = sorted[std::min(idx, sorted.size() - 1)];
  r.kl_max = sorted.back();
  r.top1_agreement = static_cast<double>(agree) / T;
  r.perplexity_reference = std::exp(nll_ref / T);
  r.perplexity_model = std::exp(nll_mod / T);
  return r;
}

std::string builtin_eval_text() {
  for (const auto& [name, bytes] : quantizer::builtin_calibration_files()) {
    if (name == "heldout.txt") return bytes;
  }
  fail(ErrorCode::kIo, "the built-in evaluation text is missing from this build");
}

}  // namespace hearth
