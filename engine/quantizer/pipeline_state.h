// The state of one quantization job as its stages share it (QuantPipeline::Impl): the options,
// the job file's state, the source model, backend and layer runner, the calibration rows, the
// measurement and the result, with every stage as a member function. Internal to the pipeline:
// only quant_pipeline.cpp (the driver) and the stages' pipeline_*.cpp include it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/core/cancel.h"
#include "engine/core/host_tensor.h"
#include "engine/core/thread_pool.h"
#include "engine/io/model_config.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/calibration.h"
#include "engine/quantizer/cuda_quant_math.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/hessian.h"
#include "engine/quantizer/job_state.h"
#include "engine/quantizer/layer_runner.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/measurement_file.h"
#include "engine/quantizer/phase_times.h"
#include "engine/quantizer/quant_pipeline.h"
#include "engine/quantizer/quantize_job.h"

namespace hearth::quantizer {

struct QuantPipeline::Impl {
  using Clock = std::chrono::steady_clock;

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
  double start_fraction = 0;  // where progress stood when this run started (a resumed job)
  Measurement measurement;
  QuantizeResult result;

  bool exl2() const { return opt.format == QuantizeFormat::kExl2; }
  bool quantize_head() const { return exl2() || opt.quantize_head; }
  double elapsed() const {
    return elapsed_before + std::chrono::duration<double>(Clock::now() - started).count();
  }
  std::filesystem::path measurement_path() const { return opt.work_dir / "measurement.json"; }
  std::filesystem::path layer_file(const std::string& name) const {
    return opt.work_dir / "layers" / (name + ".safetensors");
  }

  // Names several stages use.
  static constexpr const char* kAttnProj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
  static constexpr const char* kMlpProj[] = {"gate_proj", "up_proj", "down_proj"};

  static std::string layer_key(int64_t i) { return "model.layers." + std::to_string(i); }
  static std::string module_key(int64_t m) {
    return layer_key(m / 2) + (m % 2 == 0 ? ".self_attn" : ".mlp");
  }
  static std::vector<float> to_floats(const HostTensor& t) {
    if (t.dtype == DType::kF32) return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
    return t.to_floats();
  }

  // Helpers: progress, warnings, the job file, activation checkpoints (pipeline_common.cpp).
  double stage_weight(QuantizeStage s) const;
  void log_times(const std::string& item, const char* what, double started_at);
  void report(const std::string& item, const std::string& message = {});
  void warn(const std::string& w);
  void save();
  std::filesystem::path states_path(QuantizeStage stage, int64_t step) const;
  void write_states(QuantizeStage stage, int64_t step, const std::vector<float>& states,
                    const TokenRows& rows);
  std::vector<float> read_states(QuantizeStage stage, int64_t step, const TokenRows& rows);
  void checkpoint(const std::vector<float>& states, const TokenRows& rows, bool force);

  // Source access (pipeline_common.cpp).
  LinearWeights linear(const std::string& prefix, int64_t n, int64_t k);
  LinearWeights head_weights();
  std::vector<float> norm_weights(const std::string& name);
  std::unique_ptr<BackendWeight> upload_norm(const std::string& name);
  std::unique_ptr<BackendWeight> upload_linear(const LinearWeights& w,
                                               const std::vector<float>* replacement = nullptr);
  std::vector<float> embed_rows(const TokenRows& rows);
  std::vector<LinearWeights> module_linears(const std::string& p, bool attn);
  void check_states(std::vector<float>& v, const std::string& module);

  // Hessians (pipeline_common.cpp).
  // A Hessian being summed: on the GPU when there is one (it crosses to the host once, in
  // prepare()), else on the CPU.
  struct HessianSum {
    std::optional<HessianAccumulator> host;
    std::unique_ptr<CudaQuantMath::GramSum> device;
  };
  HessianSum hessian_sum(int64_t k);
  void add_to(HessianSum& h, const std::vector<float>& x, int64_t rows);
  GptqRunner gptq_runner() const;
  HessianOptions hessian_options() const;
  PreparedHessian prepare(HessianSum& h, const std::string& name);

  // Prepare (pipeline_prepare.cpp).
  void open_source();
  void make_calibration();
  void check_budget_reachable();

  // EXL2 measurement (pipeline_measure.cpp).
  void measure_module(int64_t m, std::vector<float>& states);
  void run_measure();

  // EXL2 bit allocation (pipeline_optimize.cpp).
  void run_optimize();
  std::map<std::string, Exl2QParams> strategy_for(int64_t m);

  // The final pass and the head (pipeline_quantize.cpp).
  std::vector<float> final_linear(const LinearWeights& w, const PreparedHessian& h,
                                  const Exl2QParams* qp);
  void quantize_module(int64_t m, std::vector<float>& states);
  void quantize_head_layer(const std::vector<float>& states);
  void run_quantize();

  // The output folder (pipeline_write.cpp).
  std::vector<std::pair<std::string, HostTensor>> output_tensors();
  void copy_side_files(const std::filesystem::path& out);
  void write_config(const std::filesystem::path& out);
  void run_write();

  // Evaluation (pipeline_evaluate.cpp).
  void run_evaluate();

  // The driver (quant_pipeline.cpp).
  void resolve_options();
  void start_or_resume();
  void advance(QuantizeStage next);
  QuantizeResult run();
};

}  // namespace hearth::quantizer
