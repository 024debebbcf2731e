// The stages of a quantization job (quantize_job.h): prepare, EXL2 measurement, optimization,
// the final GPTQ pass over the quantized model's own activations, writing the folder, and the
// evaluation. One object per run; its state is saved in the work folder after every module.
#pragma once

#include <memory>

#include "engine/quantizer/quantize_job.h"

namespace hearth::quantizer {

class QuantPipeline {
 public:
  QuantPipeline(const QuantizeOptions& options, const QuantizeProgressCallback& progress,
                const CancelToken& cancel);
  ~QuantPipeline();
  QuantizeResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Defaults that depend on the device (CPU runs use less calibration data).
int64_t default_rows(const QuantizeOptions& o);
int64_t default_length(const QuantizeOptions& o);
int64_t default_measure_rows(const QuantizeOptions& o);

}  // namespace hearth::quantizer
