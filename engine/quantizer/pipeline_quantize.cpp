// The final quantization stage: GPTQ (or EXL2 at the chosen settings) module by module over the
// quantized model's own activations, each linear's packed tensors written to the work folder,
// and the head.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/pipeline_state.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;

namespace {

// The layer reports of the first `modules` modules (4 linears per attention, 3 per MLP): a
// resumed job drops those of the modules it redoes.
int64_t reports_for(int64_t modules) {
  int64_t n = 0;
  for (int64_t m = 0; m < modules; ++m) n += m % 2 == 0 ? 4 : 3;
  return n;
}

}  // namespace

// Quantizes one linear in the final pass, writes its packed tensors, returns the
// reconstruction.
std::vector<float> QuantPipeline::Impl::final_linear(const LinearWeights& w,
                                                     const PreparedHessian& h,
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

void QuantPipeline::Impl::quantize_module(int64_t m, std::vector<float>& states) {
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

void QuantPipeline::Impl::quantize_head_layer(const std::vector<float>& states) {
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

void QuantPipeline::Impl::run_quantize() {
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

}  // namespace hearth::quantizer
