// The prepare stage: opening the source model and the backend, making the calibration rows,
// and checking that an EXL2 target is reachable for this model.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/calibration.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/pipeline_state.h"

namespace hearth::quantizer {

void QuantPipeline::Impl::open_source() {
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

void QuantPipeline::Impl::make_calibration() {
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

void QuantPipeline::Impl::check_budget_reachable() {
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

}  // namespace hearth::quantizer
