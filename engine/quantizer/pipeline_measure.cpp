// The EXL2 measurement stage: every module's output error at each setting of its ladder, on
// the unquantized model's activations, saved to measurement.json module by module.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/measurement_file.h"
#include "engine/quantizer/pipeline_state.h"

namespace hearth::quantizer {

namespace {

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

// Measures one attention (m even) or MLP module on the reference states.
void QuantPipeline::Impl::measure_module(int64_t m, std::vector<float>& states) {
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
    // Relative output error per row, averaged (docs/FORMATS.md §3.3.6): ‖out − target‖ /
    // ‖target‖, where out − target is the difference of the module outputs (the residual
    // cancels), summed on the device.
    double error_sum = 0;
    for (int64_t r = 0; r < R; ++r) {
      cancel.throw_if_cancelled();
      const float* x = states.data() + r * T * H;
      {
        auto t = time_phase(&times, "forward");
        if (attn) {
          runner->attention(x, T, {norm.get(), qw[0].get(), qw[1].get(), qw[2].get(), qw[3].get()},
                            {});
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

void QuantPipeline::Impl::run_measure() {
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

}  // namespace hearth::quantizer
