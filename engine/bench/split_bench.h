// The layer-split benchmark (CUDA, several GPUs): a synthetic model of a real shape (fp16, or
// EXL2 / GPTQ as the quantized-model benchmark names them) split by layers over the given GPUs,
// and on the first GPU alone where it fits, in the same run: prefill and decode tokens/s, and
// the time one hand-over of activations between GPUs takes; then by tensor parallelism over the
// same GPUs, with the time of one all-reduce.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hearth {

struct SplitBenchOptions {
  std::string model = "llama3-8b";  // synthetic_model_names()
  std::string quant;                // "" for fp16, else "exl2:<bpw>" or "gptq:<bits>:<group>"
  std::vector<int> gpus = {0, 1};   // in layer order; the layers are shared evenly
  std::vector<int64_t> prefill_lengths = {2048};
  std::vector<int64_t> decode_batches = {1, 32};
  int64_t decode_context = 512;
  int decode_steps = 32;
  bool single_gpu = true;       // also run the model on gpus[0] alone (skipped when it cannot fit)
  bool layer_split = true;      // split by layers over the GPUs
  bool tensor_parallel = true;  // and by tensor parallelism over the same GPUs
  // Tensor parallelism once per way of summing decode steps: "fused" (the default: the peer
  // kernel with the add and norm after it), "peer" (that kernel alone), "nccl".
  std::vector<std::string> all_reduce = {"fused"};
  uint64_t seed = 1;
};

struct SplitBenchReport {
  nlohmann::json json;
  std::string text;
};

// Throws Error(kBackend) without the GPUs, Error(kInvalidArgument) for unknown names.
SplitBenchReport run_layer_split_benchmark(const SplitBenchOptions& options);

}  // namespace hearth
