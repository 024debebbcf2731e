// Random weights of real model shapes, made directly in memory: the benchmarks' stand-in for
// checkpoints that are too large to ship, and small deterministic models for tests. The values
// depend only on (seed, tensor name, element index), so every backend sees the same model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"

namespace hearth {

class ThreadPool;

// "llama2-7b", "llama3-8b", "llama2-13b", "llama2-70b" (the published shapes), "smollm2-135m",
// and test sizes "tiny" (GQA 4, head_dim 64), "tiny-mha" (head_dim 128), "tiny-gqa8",
// "tiny-odd" (head_dim 64, odd sizes elsewhere). Throws Error(kInvalidArgument) for other names.
ModelConfig synthetic_model_config(std::string_view name);
std::vector<std::string> synthetic_model_names();

class SyntheticSource final : public TensorSource {
 public:
  // dtype: F16, BF16 or F32. threads <= 0: one per hardware thread.
  SyntheticSource(const ModelConfig& config, uint64_t seed, DType dtype = DType::kF16,
                  int threads = 0);
  ~SyntheticSource() override;

  std::vector<std::string> tensor_names() const override;
  bool has(std::string_view name) const override;
  TensorInfo info(std::string_view name) const override;
  HostTensor get(std::string_view name) const override;
  uint64_t file_bytes() const override;

 private:
  struct Spec {
    std::vector<int64_t> shape;
    float center = 0;  // values are uniform in [center - scale, center + scale)
    float scale = 0;
  };
  ModelConfig config_;
  uint64_t seed_;
  DType dtype_;
  std::map<std::string, Spec, std::less<>> specs_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace hearth
