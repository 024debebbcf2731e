// The pipeline's shared helpers (progress reports, warnings, the job file, activation
// checkpoints) and its access to the source model: linear and norm weights, embeddings, the
// activation check, and the Hessians every stage sums and prepares.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/io/safetensors.h"
#include "engine/quantizer/pipeline_state.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;

namespace {

HostTensor float_tensor(std::vector<float> v, std::vector<int64_t> shape) {
  return HostTensor::from_floats(std::move(v), std::move(shape));
}

}  // namespace

// ---------------------------------------------------------------- helpers
double QuantPipeline::Impl::stage_weight(QuantizeStage s) const {
  switch (s) {
    case QuantizeStage::kPrepare:
      return 0.02;
    case QuantizeStage::kMeasure:
      return exl2() && opt.measurement.empty() ? 0.55 : 0.0;
    case QuantizeStage::kOptimize:
      return exl2() ? 0.01 : 0.0;
    case QuantizeStage::kQuantize:
      return 0.35;
    case QuantizeStage::kWrite:
      return 0.03;
    case QuantizeStage::kEvaluate:
      return opt.evaluate ? 0.08 : 0.0;
    default:
      return 0;
  }
}

// The log line of a finished module: its time and where it went.
void QuantPipeline::Impl::log_times(const std::string& item, const char* what, double started_at) {
  const double seconds = elapsed() - started_at;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s %s in %.1f s: ", item.c_str(), what, seconds);
  char rest[48];
  std::snprintf(rest, sizeof rest, ", other %.1f s", std::max(0.0, seconds - times.total()));
  report(item, buf + times.summary() + rest);
}

void QuantPipeline::Impl::report(const std::string& item, const std::string& message) {
  if (!progress) return;
  QuantizeProgress p;
  p.stage = state.stage;
  p.step = state.step;
  p.steps = state.steps;
  p.item = item;
  p.message = message;
  p.elapsed_s = elapsed();
  double total = 0, done = 0;
  for (int s = 0; s < static_cast<int>(QuantizeStage::kDone); ++s) {
    const auto st = static_cast<QuantizeStage>(s);
    const double w = stage_weight(st);
    total += w;
    if (s < static_cast<int>(state.stage)) {
      done += w;
    } else if (st == state.stage && state.steps > 0) {
      done += w * static_cast<double>(state.step) / static_cast<double>(state.steps);
    }
  }
  p.fraction = total > 0 ? std::clamp(done / total, 0.0, 1.0) : 0.0;
  if (state.stage == QuantizeStage::kDone) p.fraction = 1.0;
  const double run_s = std::chrono::duration<double>(Clock::now() - started).count();
  p.remaining_s = p.fraction > 0.03 && run_s > 1.0
                      ? run_s * (1.0 - p.fraction) / std::max(1e-9, p.fraction - start_fraction)
                      : -1.0;
  if (p.remaining_s < 0 || !std::isfinite(p.remaining_s)) p.remaining_s = -1;
  progress(p);
}

void QuantPipeline::Impl::warn(const std::string& w) {
  state.warnings.push_back(w);
  report("", w);
}

void QuantPipeline::Impl::save() {
  state.elapsed_s = elapsed();
  save_job(opt.work_dir, state);
}

fs::path QuantPipeline::Impl::states_path(QuantizeStage stage, int64_t step) const {
  return opt.work_dir / ((stage == QuantizeStage::kMeasure ? "measure_states_" : "quant_states_") +
                         std::to_string(step) + ".safetensors");
}

void QuantPipeline::Impl::write_states(QuantizeStage stage, int64_t step,
                                       const std::vector<float>& states, const TokenRows& rows) {
  HostTensor t;
  t.dtype = DType::kF32;
  t.shape = {rows.rows, rows.length, config.hidden_size};
  t.data = states.data();
  write_safetensors(states_path(stage, step), {{"states", t}});
  // Older checkpoints of this stage are no longer needed.
  for (const auto& e : fs::directory_iterator(opt.work_dir)) {
    const std::string n = e.path().filename().string();
    const std::string prefix =
        stage == QuantizeStage::kMeasure ? "measure_states_" : "quant_states_";
    if (n.starts_with(prefix) && e.path() != states_path(stage, step)) {
      std::error_code ec;
      fs::remove(e.path(), ec);
    }
  }
}

std::vector<float> QuantPipeline::Impl::read_states(QuantizeStage stage, int64_t step,
                                                    const TokenRows& rows) {
  const fs::path p = states_path(stage, step);
  SafetensorsFile f = SafetensorsFile::open(p);
  const SafetensorsTensor* t = f.find("states");
  const std::vector<int64_t> want = {rows.rows, rows.length, config.hidden_size};
  if (!t || t->shape != want || t->dtype != DType::kF32) {
    fail(ErrorCode::kInvalidFile, p.string() + ": hidden states do not match the job");
  }
  const HostTensor h = f.tensor(*t);
  return std::vector<float>(h.as<float>(), h.as<float>() + h.numel());
}

// Saves the states after `step` modules when due (always for small models, at least every
// two minutes for large ones, and when forced).
void QuantPipeline::Impl::checkpoint(const std::vector<float>& states, const TokenRows& rows,
                                     bool force) {
  const bool small = states.size() * sizeof(float) < (size_t{256} << 20);
  const bool due = std::chrono::duration<double>(Clock::now() - last_checkpoint).count() > 120;
  if (force || small || due) {
    write_states(state.stage, state.step, states, rows);
    state.checkpoint = state.step;
    last_checkpoint = Clock::now();
  }
  save();
}

// ---------------------------------------------------------------- source access
LinearWeights QuantPipeline::Impl::linear(const std::string& prefix, int64_t n, int64_t k) {
  LinearWeights w;
  w.name = prefix;
  w.out_features = n;
  w.in_features = k;
  const std::string wname = prefix + ".weight";
  if (!bundle.weights->has(wname)) fail(ErrorCode::kInvalidFile, "the source has no " + wname);
  const TensorInfo info = bundle.weights->info(wname);
  if (info.shape != std::vector<int64_t>{n, k}) {
    fail(ErrorCode::kInvalidFile, info.file + ": " + wname + " has the wrong shape");
  }
  w.weight = to_floats(bundle.weights->get(wname));
  w.id = next_weights_id();
  if (bundle.weights->has(prefix + ".bias"))
    w.bias = to_floats(bundle.weights->get(prefix + ".bias"));
  return w;
}

LinearWeights QuantPipeline::Impl::head_weights() {
  const int64_t V = config.vocab_size, H = config.hidden_size;
  if (bundle.weights->has("lm_head.weight")) return linear("lm_head", V, H);
  if (!config.tie_word_embeddings) {
    fail(ErrorCode::kInvalidFile, "the source has no lm_head and does not tie its embeddings");
  }
  LinearWeights w = linear("model.embed_tokens", V, H);
  w.name = "lm_head";
  return w;
}

std::vector<float> QuantPipeline::Impl::norm_weights(const std::string& name) {
  if (!bundle.weights->has(name)) fail(ErrorCode::kInvalidFile, "the source has no " + name);
  std::vector<float> v = to_floats(bundle.weights->get(name));
  if (static_cast<int64_t>(v.size()) != config.hidden_size) {
    fail(ErrorCode::kInvalidFile, name + " has the wrong size");
  }
  return v;
}

std::unique_ptr<BackendWeight> QuantPipeline::Impl::upload_norm(const std::string& name) {
  std::vector<float> v = norm_weights(name);
  const auto n = static_cast<int64_t>(v.size());
  return backend->upload(float_tensor(std::move(v), {n}));
}

std::unique_ptr<BackendWeight> QuantPipeline::Impl::upload_linear(
    const LinearWeights& w, const std::vector<float>* replacement) {
  LinearSource s;
  s.name = w.name;
  const std::vector<float>& values = replacement ? *replacement : w.weight;
  if (backend->reads_host_weights()) {
    s.weight = float_tensor(values, {w.out_features, w.in_features});  // a copy it can keep
  } else {
    s.weight.dtype = DType::kF32;  // a view: the backend copies while uploading
    s.weight.shape = {w.out_features, w.in_features};
    s.weight.data = values.data();
  }
  if (w.bias) s.bias = float_tensor(*w.bias, {w.out_features});
  auto t = time_phase(&times, "upload");
  return backend->upload_linear(s);
}

std::vector<float> QuantPipeline::Impl::embed_rows(const TokenRows& rows) {
  const int64_t H = config.hidden_size;
  const HostTensor table = bundle.weights->get("model.embed_tokens.weight");
  const std::vector<float> t = to_floats(table);
  std::vector<float> states(static_cast<size_t>(rows.rows * rows.length * H));
  for (int64_t i = 0; i < rows.rows * rows.length; ++i) {
    const int32_t id = rows.ids[i];
    if (id < 0 || id >= config.vocab_size) {
      fail(ErrorCode::kInternal, "calibration token outside the vocabulary");
    }
    std::copy(t.begin() + id * H, t.begin() + (id + 1) * H, states.begin() + i * H);
  }
  return states;
}

// The linears of one module in the order the passes use them: q, k, v, o or gate, up, down.
std::vector<LinearWeights> QuantPipeline::Impl::module_linears(const std::string& p, bool attn) {
  const int64_t H = config.hidden_size;
  std::vector<LinearWeights> w;
  if (attn) {
    w.push_back(linear(p + "self_attn.q_proj", config.q_dim(), H));
    w.push_back(linear(p + "self_attn.k_proj", config.kv_dim(), H));
    w.push_back(linear(p + "self_attn.v_proj", config.kv_dim(), H));
    w.push_back(linear(p + "self_attn.o_proj", H, config.q_dim()));
  } else {
    w.push_back(linear(p + "mlp.gate_proj", config.intermediate_size, H));
    w.push_back(linear(p + "mlp.up_proj", config.intermediate_size, H));
    w.push_back(linear(p + "mlp.down_proj", H, config.intermediate_size));
  }
  return w;
}

// Checks hidden states from a backend that computes in fp16 (docs/FORMATS.md §5.9): NaN is an
// error; a few infinities are clamped with a warning, many are an error.
void QuantPipeline::Impl::check_states(std::vector<float>& v, const std::string& module) {
  int64_t inf = 0;
  for (float& x : v) {
    if (std::isnan(x)) {
      fail(ErrorCode::kUnsupported,
           module + ": the activations became NaN; this model overflows " +
               (backend->activation_dtype() == DType::kF32 ? "fp32" : "fp16") +
               " (quantize it with --backend cpu, which computes in fp32)");
    }
    if (std::isinf(x)) {
      ++inf;
      x = std::copysign(65504.0f, x);
    }
  }
  if (inf > 0) {
    if (static_cast<double>(inf) > 0.005 * static_cast<double>(v.size())) {
      fail(ErrorCode::kUnsupported,
           module + ": " + std::to_string(inf) +
               " activations overflowed fp16; quantize this model with --backend cpu (fp32)");
    }
    warn(module + ": clamped " + std::to_string(inf) + " infinite activations");
  }
}

// ---------------------------------------------------------------- Hessians
QuantPipeline::Impl::HessianSum QuantPipeline::Impl::hessian_sum(int64_t k) {
  HessianSum h;
  if (gpu_math) {
    h.device = gpu_math->gram_sum(k);
  } else {
    h.host.emplace(k);
  }
  return h;
}

void QuantPipeline::Impl::add_to(HessianSum& h, const std::vector<float>& x, int64_t rows) {
  auto t = time_phase(&times, "hessian");
  if (h.device) {
    h.device->add(x.data(), rows);
  } else {
    h.host->add(x.data(), rows, *pool);
  }
}

GptqRunner QuantPipeline::Impl::gptq_runner() const {
  if (!gpu_math) return {};
  CudaQuantMath* m = gpu_math.get();
  return [m](const LinearWeights& w, int64_t n_pad, const PreparedHessian& h,
             const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind, bool want_codes,
             std::vector<float> storage) {
    return m->gptq_linear(w, n_pad, h, groups, kind, want_codes, std::move(storage));
  };
}

HessianOptions QuantPipeline::Impl::hessian_options() const {
  HessianOptions h;
  if (gpu_math) {
    CudaQuantMath* m = gpu_math.get();
    h.factor = [m](const std::vector<float>& hh, int64_t n, std::vector<float>& u) {
      return m->inverse_upper_cholesky(hh, n, u);
    };
  }
  h.act_order = exl2() || opt.act_order;
  h.damp_fraction = exl2() ? 0.12 : opt.damp_percent;
  return h;
}

PreparedHessian QuantPipeline::Impl::prepare(HessianSum& h, const std::string& name) {
  auto t = time_phase(&times, "factor");
  const int64_t k = h.device ? h.device->k() : h.host->k();
  std::vector<float> full = h.device ? h.device->finish() : h.host->finish(pool.get());
  h.device.reset();
  h.host.reset();
  std::vector<std::string> w;
  PreparedHessian p = prepare_hessian(full, k, hessian_options(), name, *pool, &w);
  for (auto& s : w) warn(s);
  return p;
}

}  // namespace hearth::quantizer
