#include "engine/quantizer/quant_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/io/gguf_file.h"
#include "engine/io/safetensors.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/calibration.h"
#include "engine/quantizer/cuda_quant_math.h"
#include "engine/quantizer/exl2_optimizer.h"
#include "engine/quantizer/hf_export.h"
#include "engine/quantizer/job_state.h"
#include "engine/quantizer/layer_runner.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/measurement_file.h"
#include "engine/quantizer/model_eval.h"
#include "engine/quantizer/phase_times.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t default_rows(const QuantizeOptions& o) {
  return o.device == DeviceKind::kCuda ? 100 : 16;
}
int64_t default_length(const QuantizeOptions& o) {
  return o.device == DeviceKind::kCuda ? 2048 : 512;
}
int64_t default_measure_rows(const QuantizeOptions& o) {
  return o.device == DeviceKind::kCuda ? 16 : 4;
}

namespace {

const char* kAttnProj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
const char* kMlpProj[] = {"gate_proj", "up_proj", "down_proj"};

std::string layer_key(int64_t i) {
  return "model.layers." + std::to_string(i);
}
std::string module_key(int64_t m) {
  return layer_key(m / 2) + (m % 2 == 0 ? ".self_attn" : ".mlp");
}

std::vector<float> to_floats(const HostTensor& t) {
  if (t.dtype == DType::kF32) return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
  return t.to_floats();
}

HostTensor fp16_of(const std::vector<float>& v, std::vector<int64_t> shape,
                   std::vector<std::string>* warnings, const std::string& name) {
  HostTensor t = HostTensor::allocate(DType::kF16, std::move(shape));
  auto* out = static_cast<uint16_t*>(t.mutable_data());
  int64_t clamped = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    float x = v[i];
    if (std::fabs(x) > 65504.0f && std::isfinite(x)) {
      x = std::copysign(65504.0f, x);
      ++clamped;
    }
    out[i] = float_to_half(x);
  }
  if (clamped && warnings) {
    warnings->push_back(name + ": " + std::to_string(clamped) +
                        " values beyond the fp16 range were clamped to ±65504");
  }
  return t;
}

HostTensor float_tensor(std::vector<float> v, std::vector<int64_t> shape) {
  return HostTensor::from_floats(std::move(v), std::move(shape));
}

// A buffer of the weights' size from `spare` (moved out), else an empty one: reusing resident
// pages is much cheaper than faulting in a few hundred MB for every candidate setting.
std::vector<float> take_spare(std::vector<std::vector<float>>& spare, const LinearWeights& w) {
  const auto want = static_cast<size_t>(w.out_features * w.in_features);
  for (size_t i = 0; i < spare.size(); ++i) {
    if (spare[i].size() == want) {
      std::vector<float> v = std::move(spare[i]);
      spare.erase(spare.begin() + static_cast<std::ptrdiff_t>(i));
      return v;
    }
  }
  return {};
}

}  // namespace

struct QuantPipeline::Impl {
  QuantizeOptions opt;
  QuantizeProgressCallback progress;
  CancelToken cancel;

  JobState state;
  ModelBundle bundle;
  ModelConfig config;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<LayerRunner> runner;
  std::unique_ptr<CudaQuantMath> gpu_math;  // with --backend cuda: Hessians and factorizations
  PhaseTimes times;                         // of the module in progress, for its log line
  std::vector<float> spare_states;          // the final pass's next states, reused
  TokenRows quant_rows, measure_rows;
  std::string calibration_name;
  Clock::time_point started = Clock::now();
  double elapsed_before = 0;
  Clock::time_point last_checkpoint = Clock::now();
  bool exl2() const { return opt.format == QuantizeFormat::kExl2; }

  // ---------------------------------------------------------------- helpers
  double elapsed() const {
    return elapsed_before + std::chrono::duration<double>(Clock::now() - started).count();
  }

  double stage_weight(QuantizeStage s) const {
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
  void log_times(const std::string& item, const char* what, double started_at) {
    const double seconds = elapsed() - started_at;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %s in %.1f s: ", item.c_str(), what, seconds);
    char rest[48];
    std::snprintf(rest, sizeof rest, ", other %.1f s", std::max(0.0, seconds - times.total()));
    report(item, buf + times.summary() + rest);
  }

  void report(const std::string& item, const std::string& message = {}) {
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
  double start_fraction = 0;

  void warn(const std::string& w) {
    state.warnings.push_back(w);
    report("", w);
  }

  void save() {
    state.elapsed_s = elapsed();
    save_job(opt.work_dir, state);
  }

  fs::path states_path(QuantizeStage stage, int64_t step) const {
    return opt.work_dir /
           ((stage == QuantizeStage::kMeasure ? "measure_states_" : "quant_states_") +
            std::to_string(step) + ".safetensors");
  }

  void write_states(QuantizeStage stage, int64_t step, const std::vector<float>& states,
                    const TokenRows& rows) {
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

  std::vector<float> read_states(QuantizeStage stage, int64_t step, const TokenRows& rows) {
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
  void checkpoint(const std::vector<float>& states, const TokenRows& rows, bool force) {
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
  LinearWeights linear(const std::string& prefix, int64_t n, int64_t k) {
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

  LinearWeights head_weights() {
    const int64_t V = config.vocab_size, H = config.hidden_size;
    if (bundle.weights->has("lm_head.weight")) return linear("lm_head", V, H);
    if (!config.tie_word_embeddings) {
      fail(ErrorCode::kInvalidFile, "the source has no lm_head and does not tie its embeddings");
    }
    LinearWeights w = linear("model.embed_tokens", V, H);
    w.name = "lm_head";
    return w;
  }

  std::vector<float> norm_weights(const std::string& name) {
    if (!bundle.weights->has(name)) fail(ErrorCode::kInvalidFile, "the source has no " + name);
    std::vector<float> v = to_floats(bundle.weights->get(name));
    if (static_cast<int64_t>(v.size()) != config.hidden_size) {
      fail(ErrorCode::kInvalidFile, name + " has the wrong size");
    }
    return v;
  }

  std::unique_ptr<BackendWeight> upload_norm(const std::string& name) {
    std::vector<float> v = norm_weights(name);
    const auto n = static_cast<int64_t>(v.size());
    return backend->upload(float_tensor(std::move(v), {n}));
  }

  std::unique_ptr<BackendWeight> upload_linear(const LinearWeights& w,
                                               const std::vector<float>* replacement = nullptr) {
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

  std::vector<float> embed_rows(const TokenRows& rows) {
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

  // Checks hidden states from a backend that computes in fp16 (spec §5.9): NaN is an error;
  // a few infinities are clamped with a warning, many are an error.
  void check_states(std::vector<float>& v, const std::string& module) {
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

  // A Hessian being summed: on the GPU when there is one (it crosses to the host once, in
  // prepare()), else on the CPU.
  struct HessianSum {
    std::optional<HessianAccumulator> host;
    std::unique_ptr<CudaQuantMath::GramSum> device;
  };
  HessianSum hessian_sum(int64_t k) {
    HessianSum h;
    if (gpu_math) {
      h.device = gpu_math->gram_sum(k);
    } else {
      h.host.emplace(k);
    }
    return h;
  }

  void add_to(HessianSum& h, const std::vector<float>& x, int64_t rows) {
    auto t = time_phase(&times, "hessian");
    if (h.device) {
      h.device->add(x.data(), rows);
    } else {
      h.host->add(x.data(), rows, *pool);
    }
  }

  GptqRunner gptq_runner() const {
    if (!gpu_math) return {};
    CudaQuantMath* m = gpu_math.get();
    return [m](const LinearWeights& w, int64_t n_pad, const PreparedHessian& h,
               const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind, bool want_codes,
               std::vector<float> storage) {
      return m->gptq_linear(w, n_pad, h, groups, kind, want_codes, std::move(storage));
    };
  }

  HessianOptions hessian_options() const {
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

  PreparedHessian prepare(HessianSum& h, const std::string& name) {
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

  // ---------------------------------------------------------------- stages
  void open_source() {
    bundle = open_model(opt.source, true);
    if (bundle.info.format == ModelFormat::kExl2 || bundle.info.format == ModelFormat::kGptq) {
      fail(ErrorCode::kUnsupported,
           opt.source.string() + " is already quantized; quantize from an fp16/bf16 model");
    }
    config = bundle.info.config;
    if (config.attention_bias || config.mlp_bias) {
      // Biases are carried through, but the layer runner's backends take them as uploaded.
    }
    pool = std::make_unique<ThreadPool>(opt.cpu_threads);
    backend = create_backend(opt.device, opt.cuda_device, opt.cpu_threads);
    if (opt.device == DeviceKind::kCuda) {
      gpu_math = std::make_unique<CudaQuantMath>(opt.cuda_device);
      gpu_math->set_phase_times(&times);
    }
  }

  void make_calibration() {
    const CalibrationText text = model_calibration_text(
        opt.calibration_file, bundle.chat_template_source, bundle.bos_token, bundle.eos_token);
    calibration_name = text.name;
    std::vector<std::string> w;
    quant_rows = make_token_rows(text, *bundle.tokenizer, opt.rows, opt.length, 0.0, &w);
    if (exl2()) {
      measure_rows =
          make_token_rows(text, *bundle.tokenizer, opt.measure_rows, opt.measure_length, 0.5, &w);
    }
    for (auto& s : w) {
      if (std::find(state.warnings.begin(), state.warnings.end(), s) == state.warnings.end()) {
        warn(s);
      }
    }
    runner = std::make_unique<LayerRunner>(*backend, config,
                                           std::max(opt.length, exl2() ? opt.measure_length : 0));
  }

  void check_budget_reachable() {
    if (!exl2()) return;
    int64_t cheapest = 0, richest = 0, weights = 0;
    const int64_t H = config.hidden_size, I = config.intermediate_size;
    const int64_t Q = config.q_dim(), KV = config.kv_dim();
    const int64_t shapes[7][2] = {{H, Q}, {H, KV}, {H, KV}, {Q, H}, {H, I}, {H, I}, {I, H}};
    for (int64_t i = 0; i < config.num_layers; ++i) {
      for (int kind = 0; kind < 2; ++kind) {
        const auto& ladder = kind == 0 ? exl2_attention_ladder() : exl2_mlp_ladder();
        int64_t lo = INT64_MAX, hi = 0;
        for (const auto& row : ladder) {
          int64_t bits = 0;
          for (size_t p = 0; p < row.size(); ++p) {
            const auto* s = shapes[kind == 0 ? p : 4 + p];
            bits += exl2_total_bits(row[p], s[0], s[1]);
          }
          lo = std::min(lo, bits);
          hi = std::max(hi, bits);
        }
        cheapest += lo;
        richest += hi;
      }
      for (const auto& s : shapes) weights += s[0] * s[1];
    }
    const double min_bpw = static_cast<double>(cheapest) / static_cast<double>(weights);
    const double max_bpw = static_cast<double>(richest) / static_cast<double>(weights);
    if (opt.target_bpw < min_bpw) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "target %.3f bpw is below the cheapest EXL2 setting for this model (%.3f bpw)",
                    opt.target_bpw, min_bpw);
      fail(ErrorCode::kInvalidArgument, buf);
    }
    if (opt.target_bpw > max_bpw + 1e-9) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "target %.3f bpw is above the richest EXL2 setting for this model (%.3f "
                    "bpw); it will use %.3f",
                    opt.target_bpw, max_bpw, max_bpw);
      if (std::find(state.warnings.begin(), state.warnings.end(), buf) == state.warnings.end()) {
        warn(buf);
      }
    }
  }

  Measurement measurement;
  fs::path measurement_path() const { return opt.work_dir / "measurement.json"; }

  // The linears of one module in the order the passes use them: q, k, v, o or gate, up, down.
  std::vector<LinearWeights> module_linears(const std::string& p, bool attn) {
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

  // Measures one attention (m even) or MLP module on the reference states.
  void measure_module(int64_t m, std::vector<float>& states) {
    const int64_t layer = m / 2;
    const std::string p = layer_key(layer) + ".";
    const int64_t H = config.hidden_size, T = measure_rows.length;
    const int64_t R = measure_rows.rows;
    const bool attn = m % 2 == 0;
    const int nproj = attn ? 4 : 3;
    std::vector<LinearWeights> w;
    {
      auto t = time_phase(&times, "load");
      w = module_linears(p, attn);
    }
    auto norm =
        upload_norm(p + (attn ? "input_layernorm.weight" : "post_attention_layernorm.weight"));
    times.clear();
    const double started_at = elapsed();
    runner->forget_rows();
    std::vector<std::unique_ptr<BackendWeight>> fp;
    for (const auto& lw : w) fp.push_back(upload_linear(lw));

    // Reference pass: Hessians, targets (the next module's input) and, kept on the device, each
    // row's module output, which every candidate's output is compared with there.
    HessianSum h_in = hessian_sum(H);
    HessianSum h_mid = hessian_sum(attn ? config.q_dim() : config.intermediate_size);
    std::vector<std::vector<float>> targets(static_cast<size_t>(R));
    std::vector<double> target_norm(static_cast<size_t>(R), 0.0);  // Σ target², per row
    std::vector<float> a, b;
    for (int64_t r = 0; r < R; ++r) {
      cancel.throw_if_cancelled();
      const float* x = states.data() + r * T * H;
      const DeviceTensor reference = runner->reference_slot(static_cast<size_t>(r), T);
      {
        auto t = time_phase(&times, "forward");
        if (attn) {
          runner->attention(x, T, {norm.get(), fp[0].get(), fp[1].get(), fp[2].get(), fp[3].get()},
                            {&a, &b, &targets[r], reference});
        } else {
          runner->mlp(x, T, {norm.get(), fp[0].get(), fp[1].get(), fp[2].get()},
                      {&a, &b, &targets[r], reference});
        }
      }
      check_states(targets[r], module_key(m));
      for (float v : targets[r]) target_norm[r] += static_cast<double>(v) * v;
      add_to(h_in, a, T);
      add_to(h_mid, b, T);
    }
    const PreparedHessian hp_in = prepare(h_in, w[0].name);
    const PreparedHessian hp_mid = prepare(h_mid, w[nproj - 1].name);

    const auto& ladder = attn ? exl2_attention_ladder() : exl2_mlp_ladder();
    // Reconstructions per (projection, distinct setting), computed when first needed and
    // dropped after the last row that uses them.
    std::vector<std::map<std::string, std::vector<float>>> cache(static_cast<size_t>(nproj));
    std::vector<std::vector<float>> spare;  // evicted reconstructions, reused as buffers
    std::vector<MeasuredOption> options;
    for (size_t row = 0; row < ladder.size(); ++row) {
      MeasuredOption opt_row;
      std::vector<std::unique_ptr<BackendWeight>> qw;
      for (int j = 0; j < nproj; ++j) {
        const Exl2QParams& qp = ladder[row][j];
        const std::string key = qp.describe();
        auto it = cache[j].find(key);
        if (it == cache[j].end()) {
          cancel.throw_if_cancelled();
          const PreparedHessian& h = j == nproj - 1 ? hp_mid : hp_in;
          it = cache[j]
                   .emplace(key, quantize_linear_exl2(w[j], h, qp, false, *pool, gptq_runner(),
                                                      &times, take_spare(spare, w[j]))
                                     .reconstruction)
                   .first;
        }
        qw.push_back(upload_linear(w[j], &it->second));
        opt_row.total_bits += exl2_total_bits(qp, w[j].in_features, w[j].out_features,
                                              w[j].bias ? w[j].out_features : 0);
        opt_row.settings.emplace_back(attn ? kAttnProj[j] : kMlpProj[j], qp);
      }
      // Relative output error per row, averaged (spec §3.3.6): ‖out − target‖ / ‖target‖, where
      // out − target is the difference of the module outputs (the residual cancels), summed on
      // the device.
      double error_sum = 0;
      for (int64_t r = 0; r < R; ++r) {
        cancel.throw_if_cancelled();
        const float* x = states.data() + r * T * H;
        {
          auto t = time_phase(&times, "forward");
          if (attn) {
            runner->attention(x, T,
                              {norm.get(), qw[0].get(), qw[1].get(), qw[2].get(), qw[3].get()}, {});
          } else {
            runner->mlp(x, T, {norm.get(), qw[0].get(), qw[1].get(), qw[2].get()}, {});
          }
        }
        auto t = time_phase(&times, "error");
        const double diff = runner->backend().squared_distance(
            runner->last_delta(), runner->reference_slot(static_cast<size_t>(r), T), T);
        const double den = target_norm[static_cast<size_t>(r)];
        error_sum += den > 0 ? std::sqrt(diff / den) : 0.0;
      }
      opt_row.accuracy = std::max(1e-6, 1.0 - error_sum / static_cast<double>(R));
      options.push_back(opt_row);
      auto t = time_phase(&times, "free");
      qw.clear();
      // Evict settings no later row needs.
      for (int j = 0; j < nproj; ++j) {
        for (auto it = cache[j].begin(); it != cache[j].end();) {
          bool needed = false;
          for (size_t later = row + 1; later < ladder.size(); ++later) {
            needed = needed || ladder[later][j].describe() == it->first;
          }
          if (needed) {
            ++it;
          } else {
            spare.push_back(std::move(it->second));  // its pages serve a later setting
            it = cache[j].erase(it);
          }
        }
      }
    }
    double best = 0;
    for (const auto& o : options) best = std::max(best, o.accuracy);
    if (best < 0.1) {
      fail(ErrorCode::kInternal, module_key(m) +
                                     ": even the richest setting keeps less than 10% "
                                     "accuracy; the measurement failed");
    }
    measurement.modules[module_key(m)] = std::move(options);
    log_times(module_key(m), "measured", started_at);
    // The next module sees the unquantized output (measurement never chains errors).
    runner->forget_rows();
    for (int64_t r = 0; r < R; ++r) {
      std::copy(targets[r].begin(), targets[r].end(), states.begin() + r * T * H);
    }
  }

  void run_measure() {
    const int64_t modules = 2 * config.num_layers;
    state.steps = modules;
    std::vector<float> states;
    if (state.checkpoint > 0) {
      states = read_states(QuantizeStage::kMeasure, state.checkpoint, measure_rows);
      measurement = load_measurement(measurement_path());
      state.step = state.checkpoint;
    } else {
      states = embed_rows(measure_rows);
      state.step = 0;
      measurement = Measurement{};
    }
    for (int64_t m = state.step; m < modules; ++m) {
      report(module_key(m));
      measure_module(m, states);
      measurement.last_module_idx = m;
      save_measurement(measurement_path(), measurement);
      state.step = m + 1;
      checkpoint(states, measure_rows, false);
    }
  }

  void run_optimize() {
    state.steps = 1;
    state.step = 0;
    report("");
    const Measurement& meas = measurement;
    std::vector<std::vector<SlotOption>> slots;
    int64_t weights = 0;
    const int64_t H = config.hidden_size, I = config.intermediate_size;
    for (int64_t m = 0; m < 2 * config.num_layers; ++m) {
      auto it = meas.modules.find(module_key(m));
      if (it == meas.modules.end()) {
        fail(ErrorCode::kInvalidFile, "the measurement has no entry for " + module_key(m));
      }
      std::vector<SlotOption> s;
      for (const auto& o : it->second) s.push_back({o.total_bits, 1.0 - o.accuracy});
      slots.push_back(std::move(s));
      weights += m % 2 == 0 ? 2 * H * config.q_dim() + 2 * H * config.kv_dim() : 3 * H * I;
    }
    const auto budget = static_cast<int64_t>(static_cast<double>(weights) * opt.target_bpw);
    const OptimizerResult r = optimize_exl2(slots, budget);
    state.strategy = json::array();
    for (int64_t m = 0; m < 2 * config.num_layers; ++m) {
      state.strategy.push_back(option_to_json(meas.modules.at(module_key(m))[r.choice[m]]));
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "optimizer: %.4f bpw, max error %.5f, sum %.5f (norm %.1f)",
                  static_cast<double>(r.cost) / static_cast<double>(weights), r.max_error,
                  r.sum_error, r.norm);
    report("", buf);
    state.step = 1;
    save();
  }

  std::map<std::string, Exl2QParams> strategy_for(int64_t m) {
    std::map<std::string, Exl2QParams> out;
    const MeasuredOption o = option_from_json(state.strategy.at(static_cast<size_t>(m)));
    for (const auto& [proj, qp] : o.settings) out[proj] = qp;
    return out;
  }

  fs::path layer_file(const std::string& name) const {
    return opt.work_dir / "layers" / (name + ".safetensors");
  }

  // Quantizes one linear in the final pass, writes its packed tensors, returns the
  // reconstruction.
  std::vector<float> final_linear(const LinearWeights& w, const PreparedHessian& h,
                                  const Exl2QParams* qp) {
    cancel.throw_if_cancelled();
    QuantizedLinear q;
    LayerReport rep;
    if (qp) {
      q = quantize_linear_exl2(w, h, *qp, true, *pool, gptq_runner(), &times);
      rep.setting = qp->describe();
    } else {
      GptqSettings s;
      s.bits = opt.bits;
      s.group_size = opt.group_size;
      s.symmetric = opt.symmetric;
      q = quantize_linear_gptq(w, h, s, true, *pool, gptq_runner(), &times);
      rep.setting = std::to_string(opt.bits) + "b g" + std::to_string(opt.group_size) +
                    (opt.act_order ? " act-order" : "") + (opt.symmetric ? " sym" : " asym");
    }
    {
      auto t = time_phase(&times, "write");
      NamedTensors tensors(q.tensors.begin(), q.tensors.end());
      write_safetensors(layer_file(w.name), tensors);
    }
    rep.name = w.name;
    rep.proxy_error = q.proxy_error;
    rep.damp = h.damp;
    rep.weight_error = relative_weight_error(w.weight, q.reconstruction);
    rep.total_bits = q.total_bits;
    rep.weights = w.in_features * w.out_features;
    state.layers.push_back(rep);
    return std::move(q.reconstruction);
  }

  void quantize_module(int64_t m, std::vector<float>& states) {
    const int64_t layer = m / 2;
    const std::string p = layer_key(layer) + ".";
    const int64_t H = config.hidden_size, T = quant_rows.length, R = quant_rows.rows;
    const bool attn = m % 2 == 0;
    std::map<std::string, Exl2QParams> strat;
    if (exl2()) strat = strategy_for(m);
    auto setting = [&](const char* proj) -> const Exl2QParams* {
      if (!exl2()) return nullptr;
      auto it = strat.find(proj);
      if (it == strat.end()) {
        fail(ErrorCode::kInvalidFile, "the strategy of " + module_key(m) + " lacks " + proj);
      }
      return &it->second;
    };
    times.clear();
    const double started_at = elapsed();
    runner->forget_rows();
    auto norm =
        upload_norm(p + (attn ? "input_layernorm.weight" : "post_attention_layernorm.weight"));
    std::vector<float> a;
    // 1. The shared input (q/k/v or gate/up) is the norm's output alone.
    HessianSum h_in = hessian_sum(H);
    for (int64_t r = 0; r < R; ++r) {
      cancel.throw_if_cancelled();
      {
        auto t = time_phase(&times, "forward");
        runner->norm(states.data() + r * T * H, T, *norm, a);
      }
      add_to(h_in, a, T);
    }
    std::vector<LinearWeights> w;
    {
      auto t = time_phase(&times, "load");
      w = module_linears(p, attn);
    }
    const int nproj = attn ? 4 : 3;
    const PreparedHessian hp_in = prepare(h_in, w[0].name);
    std::vector<std::unique_ptr<BackendWeight>> up(static_cast<size_t>(nproj));
    for (int j = 0; j < nproj - 1; ++j) {
      const std::vector<float> rec =
          final_linear(w[j], hp_in, setting(attn ? kAttnProj[j] : kMlpProj[j]));
      up[j] = upload_linear(w[j], &rec);
    }
    // 2. The last projection's input, through the already quantized ones (true sequential).
    up[nproj - 1] = upload_linear(w[nproj - 1]);
    HessianSum h_last = hessian_sum(w[nproj - 1].in_features);
    for (int64_t r = 0; r < R; ++r) {
      cancel.throw_if_cancelled();
      const float* x = states.data() + r * T * H;
      {
        auto t = time_phase(&times, "forward");
        if (attn) {
          runner->attention(x, T, {norm.get(), up[0].get(), up[1].get(), up[2].get(), up[3].get()},
                            {nullptr, &a, nullptr, {}});
        } else {
          runner->mlp(x, T, {norm.get(), up[0].get(), up[1].get(), up[2].get()},
                      {nullptr, &a, nullptr, {}});
        }
      }
      add_to(h_last, a, T);
    }
    const PreparedHessian hp_last = prepare(h_last, w[nproj - 1].name);
    {
      const std::vector<float> rec = final_linear(
          w[nproj - 1], hp_last, setting(attn ? kAttnProj[nproj - 1] : kMlpProj[nproj - 1]));
      up[nproj - 1] = upload_linear(w[nproj - 1], &rec);
    }
    // 3. The quantized module's output is the next module's input.
    // The previous module's buffer: resized, not reallocated (gigabytes of fresh pages otherwise).
    std::vector<float>& next = spare_states;
    next.resize(states.size());
    std::vector<float> o;
    for (int64_t r = 0; r < R; ++r) {
      cancel.throw_if_cancelled();
      const float* x = states.data() + r * T * H;
      {
        auto t = time_phase(&times, "forward");
        if (attn) {
          runner->attention(x, T, {norm.get(), up[0].get(), up[1].get(), up[2].get(), up[3].get()},
                            {nullptr, nullptr, &o, {}});
        } else {
          runner->mlp(x, T, {norm.get(), up[0].get(), up[1].get(), up[2].get()},
                      {nullptr, nullptr, &o, {}});
        }
      }
      check_states(o, module_key(m));
      std::copy(o.begin(), o.end(), next.begin() + r * T * H);
    }
    runner->forget_rows();
    states.swap(next);
    log_times(module_key(m), "quantized", started_at);
  }

  bool quantize_head() const { return exl2() || opt.quantize_head; }

  void quantize_head_layer(const std::vector<float>& states) {
    const int64_t H = config.hidden_size, T = quant_rows.length, R = quant_rows.rows;
    times.clear();
    const double started_at = elapsed();
    runner->forget_rows();
    auto norm = upload_norm("model.norm.weight");
    HessianSum h = hessian_sum(H);
    std::vector<float> a;
    for (int64_t r = 0; r < R; ++r) {
      cancel.throw_if_cancelled();
      runner->norm(states.data() + r * T * H, T, *norm, a);
      add_to(h, a, T);
    }
    const LinearWeights w = head_weights();
    const PreparedHessian hp = prepare(h, "lm_head");
    const Exl2QParams qp = exl2_head_qparams(opt.head_bits);
    final_linear(w, hp, exl2() ? &qp : nullptr);
    runner->forget_rows();
    log_times("lm_head", "quantized", started_at);
  }

  static int64_t reports_for(int64_t modules) {
    int64_t n = 0;
    for (int64_t m = 0; m < modules; ++m) n += m % 2 == 0 ? 4 : 3;
    return n;
  }

  void run_quantize() {
    const int64_t modules = 2 * config.num_layers;
    state.steps = modules + (quantize_head() ? 1 : 0);
    fs::create_directories(opt.work_dir / "layers");
    std::vector<float> states;
    if (state.checkpoint > 0) {
      states = read_states(QuantizeStage::kQuantize, state.checkpoint, quant_rows);
      state.step = state.checkpoint;
    } else {
      states = embed_rows(quant_rows);
      state.step = 0;
    }
    state.layers.resize(static_cast<size_t>(std::min<int64_t>(
        reports_for(std::min(state.step, modules)), static_cast<int64_t>(state.layers.size()))));
    for (int64_t m = state.step; m < modules; ++m) {
      report(module_key(m));
      quantize_module(m, states);
      state.step = m + 1;
      checkpoint(states, quant_rows, false);
    }
    if (quantize_head() && state.step == modules) {
      report("lm_head");
      quantize_head_layer(states);
      state.step = modules + 1;
      save();
    }
  }

  // ---------------------------------------------------------------- output folder
  std::vector<std::pair<std::string, HostTensor>> output_tensors() {
    std::vector<std::pair<std::string, HostTensor>> t;
    std::vector<std::string>* warns = &state.warnings;
    const int64_t H = config.hidden_size;
    auto dense = [&](const std::string& name) {
      const HostTensor src = bundle.weights->get(name);
      t.emplace_back(name, fp16_of(to_floats(src), src.shape, warns, name));
    };
    auto packed = [&](const std::string& name) {
      SafetensorsFile f = SafetensorsFile::open(layer_file(name));
      for (const auto& st : f.tensors()) {
        // Copy out of the mapping (the file object goes away).
        const HostTensor v = f.tensor(st);
        HostTensor c = HostTensor::allocate(v.dtype, v.shape);
        std::memcpy(c.mutable_data(), v.data, v.nbytes());
        t.emplace_back(st.name, std::move(c));
      }
    };
    (void)H;
    dense("model.embed_tokens.weight");
    for (int64_t i = 0; i < config.num_layers; ++i) {
      const std::string p = layer_key(i) + ".";
      dense(p + "input_layernorm.weight");
      for (const char* proj : kAttnProj) packed(p + "self_attn." + proj);
      dense(p + "post_attention_layernorm.weight");
      for (const char* proj : kMlpProj) packed(p + "mlp." + proj);
    }
    dense("model.norm.weight");
    if (quantize_head()) {
      packed("lm_head");
    } else if (bundle.weights->has("lm_head.weight")) {
      dense("lm_head.weight");
    }
    return t;
  }

  void copy_side_files(const fs::path& out) {
    if (bundle.gguf) {
      write_tokenizer_files_from_gguf(*bundle.gguf, config, out);
      return;
    }
    for (const auto& e : fs::directory_iterator(opt.source)) {
      if (!e.is_regular_file()) continue;
      const std::string n = e.path().filename().string();
      const std::string ext = e.path().extension().string();
      if (ext == ".safetensors" || ext == ".bin" || ext == ".pt" || ext == ".pth" ||
          ext == ".gguf" || ext == ".ckpt" || n == "model.safetensors.index.json" ||
          n == "config.json" || n == "quantize_config.json" || n.starts_with(".")) {
        continue;
      }
      fs::copy_file(e.path(), out / n, fs::copy_options::overwrite_existing);
    }
  }

  void write_config(const fs::path& out) {
    nlohmann::ordered_json cfg;
    if (!bundle.gguf) {
      std::ifstream in(opt.source / "config.json");
      std::ostringstream ss;
      ss << in.rdbuf();
      cfg = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
      if (cfg.is_discarded() || !cfg.is_object()) {
        fail(ErrorCode::kInvalidFile, (opt.source / "config.json").string() + " is not JSON");
      }
    } else {
      cfg = config_json_from(config);
    }
    cfg["torch_dtype"] = "float16";
    nlohmann::ordered_json q;
    if (exl2()) {
      q["quant_method"] = "exl2";
      q["version"] = "0.3.2";
      q["bits"] = opt.target_bpw;
      q["head_bits"] = opt.head_bits;
      q["calibration"] = {
          {"rows", opt.rows},
          {"length", opt.length},
          {"dataset", opt.calibration_file.empty() ? std::string("(default)")
                                                   : opt.calibration_file.filename().string()}};
      q["quantizer"] = "Hearth";
    } else {
      q["bits"] = opt.bits;
      q["group_size"] = opt.group_size;
      q["damp_percent"] = opt.damp_percent;
      q["desc_act"] = opt.act_order;
      q["static_groups"] = false;
      q["sym"] = opt.symmetric;
      q["true_sequential"] = true;
      q["model_name_or_path"] = nullptr;
      q["model_file_base_name"] = "model";
      q["quant_method"] = "gptq";
      q["checkpoint_format"] = "gptq";
      q["lm_head"] = opt.quantize_head;
      write_file_atomically(out / "quantize_config.json", q.dump(2) + "\n");
    }
    cfg["quantization_config"] = q;
    write_file_atomically(out / "config.json", cfg.dump(2) + "\n");
  }

  void run_write() {
    state.steps = 1;
    state.step = 0;
    report(opt.output.string());
    std::error_code ec;
    fs::create_directories(opt.output, ec);
    if (ec) fail(ErrorCode::kIo, opt.output.string() + ": cannot create: " + ec.message());
    // Remove shards of an interrupted earlier write.
    for (const auto& e : fs::directory_iterator(opt.output)) {
      if (e.path().extension() == ".safetensors") fs::remove(e.path(), ec);
    }
    auto tensors = output_tensors();
    const uint64_t limit =
        opt.shard_size_mb <= 0 ? UINT64_MAX : static_cast<uint64_t>(opt.shard_size_mb) << 20;
    std::vector<NamedTensors> shards(1);
    uint64_t cur = 0;
    for (auto& nt : tensors) {
      const uint64_t sz = nt.second.nbytes();
      if (!shards.back().empty() && cur + sz > limit) {
        shards.emplace_back();
        cur = 0;
      }
      cur += sz;
      shards.back().push_back(std::move(nt));
    }
    const size_t N = shards.size();
    auto name = [&](size_t i) {
      const std::string base = exl2() ? "output" : "model";
      if (N == 1) return base + ".safetensors";
      char buf[64];
      std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.safetensors", i + 1, N);
      return base + buf;
    };
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    for (size_t i = 0; i < N; ++i) {
      cancel.throw_if_cancelled();
      write_safetensors(opt.output / name(i), shards[i]);
      for (const auto& nt : shards[i]) weight_map[nt.first] = name(i);
    }
    if (!exl2() && N > 1) {  // Hugging Face sharded layout for GPTQ (EXL2 writes no index)
      nlohmann::ordered_json idx{{"metadata", json::object()}, {"weight_map", weight_map}};
      write_file_atomically(opt.output / "model.safetensors.index.json", idx.dump(2) + "\n");
    }
    copy_side_files(opt.output);
    write_config(opt.output);
    state.step = 1;
    save();
  }

  QuantizeResult result;

  void run_evaluate() {
    state.steps = 1;
    state.step = 0;
    report("");
    EvalOptions eo;
    eo.device = opt.device;
    eo.cuda_device = opt.cuda_device;
    eo.cpu_threads = opt.cpu_threads;
    eo.ctx = opt.eval_ctx;
    eo.max_tokens = opt.eval_max_tokens;
    std::string text;
    if (opt.eval_file.empty()) {
      text = builtin_eval_text();
    } else {
      std::ifstream in(opt.eval_file, std::ios::binary);
      if (!in) fail(ErrorCode::kIo, opt.eval_file.string() + ": cannot open");
      std::ostringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    const KlResult k = evaluate_kl_divergence(opt.output, opt.source, text, eo, {}, cancel);
    QuantizeEvaluation ev;
    ev.tokens = k.tokens;
    ev.perplexity_source = k.perplexity_reference;
    ev.perplexity_quant = k.perplexity_model;
    ev.kl_mean = k.kl_mean;
    ev.kl_p999 = k.kl_p999;
    ev.top1_agreement = k.top1_agreement;
    result.evaluation = ev;
    state.step = 1;
  }

  // ---------------------------------------------------------------- driver
  void resolve_options() {
    if (opt.source.empty()) fail(ErrorCode::kInvalidArgument, "no source model given");
    if (opt.output.empty()) fail(ErrorCode::kInvalidArgument, "no output folder given");
    opt.source = fs::absolute(opt.source);
    opt.output = fs::absolute(opt.output);
    if (opt.work_dir.empty()) opt.work_dir = default_work_dir(opt.output);
    opt.work_dir = fs::absolute(opt.work_dir);
    if (!opt.calibration_file.empty()) opt.calibration_file = fs::absolute(opt.calibration_file);
    if (!opt.measurement.empty()) opt.measurement = fs::absolute(opt.measurement);
    if (opt.rows <= 0) opt.rows = default_rows(opt);
    if (opt.length <= 0) opt.length = default_length(opt);
    if (opt.measure_rows <= 0) opt.measure_rows = default_measure_rows(opt);
    if (opt.measure_length <= 0) opt.measure_length = opt.length;
    if (exl2()) {
      exl2_head_qparams(opt.head_bits);  // validates
      if (!(opt.target_bpw > 0) || opt.target_bpw > 16) {
        fail(ErrorCode::kInvalidArgument, "target bpw must be between 2 and 8");
      }
    } else {
      if (opt.bits != 2 && opt.bits != 3 && opt.bits != 4 && opt.bits != 8) {
        fail(ErrorCode::kInvalidArgument, "GPTQ bits must be 2, 3, 4 or 8");
      }
      if (opt.group_size == 0 || opt.group_size < -1) {
        fail(ErrorCode::kInvalidArgument, "GPTQ group size must be positive or -1");
      }
      if (!(opt.damp_percent > 0) || opt.damp_percent >= 1) {
        fail(ErrorCode::kInvalidArgument, "damp_percent must be in (0, 1)");
      }
    }
    if (opt.rows > 100000 || opt.length > 65536 || opt.measure_rows > 100000) {
      fail(ErrorCode::kInvalidArgument, "calibration rows or length are too large");
    }
    if (opt.device == DeviceKind::kCuda && !cuda_available()) {
      fail(ErrorCode::kInvalidArgument, "no CUDA device is available; use the CPU backend");
    }
  }

  void start_or_resume() {
    std::error_code ec;
    const bool has_job = fs::exists(job_file(opt.work_dir), ec);
    if (has_job && opt.resume) {
      JobState old = load_job(opt.work_dir);
      const std::string diff = first_output_difference(old.options, opt);
      if (!diff.empty()) {
        fail(ErrorCode::kInvalidArgument, "the job in " + opt.work_dir.string() +
                                              " was started with a different \"" + diff +
                                              "\"; resume it with the same options or restart");
      }
      const QuantizeOptions keep = opt;
      state = std::move(old);
      state.options.cpu_threads = keep.cpu_threads;
      state.options.evaluate = keep.evaluate;
      state.options.eval_file = keep.eval_file;
      state.options.eval_ctx = keep.eval_ctx;
      state.options.eval_max_tokens = keep.eval_max_tokens;
      state.options.keep_work = keep.keep_work;
      elapsed_before = state.elapsed_s;
      return;
    }
    if (has_job && !opt.restart) {
      fail(ErrorCode::kInvalidArgument,
           opt.work_dir.string() +
               " holds an earlier job; resume it (--resume) or start over (--restart)");
    }
    if (!has_job && opt.resume) {
      fail(ErrorCode::kInvalidArgument, "there is no job to resume in " + opt.work_dir.string());
    }
    if (fs::exists(opt.output, ec) && fs::is_directory(opt.output, ec) &&
        !fs::is_empty(opt.output, ec) && !opt.restart) {
      fail(ErrorCode::kInvalidArgument,
           opt.output.string() + " exists and is not empty; choose another output folder");
    }
    fs::remove_all(opt.work_dir, ec);
    fs::create_directories(opt.work_dir, ec);
    if (ec) fail(ErrorCode::kIo, opt.work_dir.string() + ": cannot create: " + ec.message());
    state = JobState{};
    state.options = opt;
    state.stage = QuantizeStage::kPrepare;
    save();
  }

  void advance(QuantizeStage next) {
    state.stage = next;
    state.step = 0;
    state.steps = 0;
    state.checkpoint = 0;
    save();
  }

  QuantizeResult run() {
    resolve_options();
    start_or_resume();
    opt = state.options;
    try {
      open_source();
      if (state.stage <= QuantizeStage::kOptimize) check_budget_reachable();
      if (state.stage <= QuantizeStage::kQuantize) make_calibration();
      report("");
      {
        // Where progress starts on a resumed job, for the remaining-time estimate.
        double total = 0, done = 0;
        for (int s = 0; s < static_cast<int>(QuantizeStage::kDone); ++s) {
          const double w = stage_weight(static_cast<QuantizeStage>(s));
          total += w;
          if (s < static_cast<int>(state.stage)) done += w;
        }
        start_fraction = total > 0 ? done / total : 0;
      }
      if (state.stage == QuantizeStage::kPrepare) {
        advance(exl2() ? QuantizeStage::kMeasure : QuantizeStage::kQuantize);
      }
      if (state.stage == QuantizeStage::kMeasure) {
        if (!opt.measurement.empty()) {
          measurement = load_measurement(opt.measurement);
          save_measurement(measurement_path(), measurement);
        } else {
          run_measure();
        }
        advance(QuantizeStage::kOptimize);
      }
      if (state.stage == QuantizeStage::kOptimize) {
        measurement = load_measurement(measurement_path());
        run_optimize();
        advance(QuantizeStage::kQuantize);
      }
      if (state.stage == QuantizeStage::kQuantize) {
        run_quantize();
        runner.reset();
        advance(QuantizeStage::kWrite);
      }
      if (state.stage == QuantizeStage::kWrite) {
        run_write();
        advance(opt.evaluate ? QuantizeStage::kEvaluate : QuantizeStage::kDone);
      }
      backend.reset();
      if (state.stage == QuantizeStage::kEvaluate) {
        run_evaluate();
        advance(QuantizeStage::kDone);
      }
    } catch (const Error& e) {
      // Whatever happened, the job file stays consistent with the last checkpoint.
      try {
        save();
      } catch (...) {
      }
      throw;
    }
    report("");
    result.output = opt.output;
    for (const auto& e : fs::recursive_directory_iterator(opt.output)) {
      if (e.is_regular_file()) result.bytes_on_disk += e.file_size();
    }
    int64_t bits = 0, weights = 0;
    for (const auto& l : state.layers) {
      if (l.name == "lm_head") {
        result.head_bits_per_weight =
            static_cast<double>(l.total_bits) / static_cast<double>(l.weights);
        continue;
      }
      bits += l.total_bits;
      weights += l.weights;
    }
    if (!quantize_head()) result.head_bits_per_weight = 16;
    result.bits_per_weight = weights ? static_cast<double>(bits) / static_cast<double>(weights) : 0;
    result.seconds = elapsed();
    result.warnings = state.warnings;
    if (!opt.keep_work) {
      std::error_code ec;
      fs::remove_all(opt.work_dir, ec);
    }
    return result;
  }
};

QuantPipeline::QuantPipeline(const QuantizeOptions& options,
                             const QuantizeProgressCallback& progress, const CancelToken& cancel)
    : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
  impl_->progress = progress;
  impl_->cancel = cancel;
}

QuantPipeline::~QuantPipeline() = default;

QuantizeResult QuantPipeline::run() {
  return impl_->run();
}

}  // namespace hearth::quantizer
