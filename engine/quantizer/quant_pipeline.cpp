// The driver of a quantization job: options, starting or resuming the job in its work folder,
// and running the stages in order (pipeline_*.cpp) over the state in pipeline_state.h.
#include "engine/quantizer/quant_pipeline.h"

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "engine/backend/backend_factory.h"
#include "engine/core/error.h"
#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/job_state.h"
#include "engine/quantizer/measurement_file.h"
#include "engine/quantizer/pipeline_state.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;

int64_t default_rows(const QuantizeOptions& o) {
  return o.device == DeviceKind::kCuda ? 100 : 16;
}
int64_t default_length(const QuantizeOptions& o) {
  return o.device == DeviceKind::kCuda ? 2048 : 512;
}
int64_t default_measure_rows(const QuantizeOptions& o) {
  return o.device == DeviceKind::kCuda ? 16 : 4;
}

void QuantPipeline::Impl::resolve_options() {
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

void QuantPipeline::Impl::start_or_resume() {
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

void QuantPipeline::Impl::advance(QuantizeStage next) {
  state.stage = next;
  state.step = 0;
  state.steps = 0;
  state.checkpoint = 0;
  save();
}

QuantizeResult QuantPipeline::Impl::run() {
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
