// Random but valid EXL2 and GPTQ layers and models, made in memory: the GPU tests' odd shapes
// and the benchmark's Llama-2-7B / Llama-3-8B / 13B / 70B-shaped quantized models, which are
// too large to ship. Codes are uniform random words (every bit pattern is a valid sequence of
// codes), scales are random in a range that keeps activations finite, act-order permutations are
// random. The tensors are exactly what a checkpoint holds, so they go through the real loader.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"

namespace hearth {

// An EXL2 layer recipe: (bits, share of rows) by non-increasing bits, and a group size per width,
// as exllamav2's QParams.
struct Exl2Recipe {
  std::vector<std::pair<int, double>> parts;
  std::map<int, int64_t> group_size;
};

// A recipe near a target bits per weight (2.5, 3.0, 4.0, 5.0, 6.0, 8.0, ...): mixes of two
// neighbouring widths at group size 64 or 128, like exllamav2's measurement ladder.
Exl2Recipe exl2_recipe_for_bpw(double bpw);
// exllamav2's -hb 6 head: 15 % of rows at 8 bits, the rest at 6, group size 128.
Exl2Recipe exl2_head_recipe();

// Adds `prefix`.q_weight, .q_scale, .q_scale_max, .q_groups, .q_invperm (and .bias) of a random
// layer with k inputs and n outputs (stored padded to a multiple of 32) to `out`.
void make_exl2_layer(std::map<std::string, HostTensor, std::less<>>& out, const std::string& prefix,
                     int64_t k, int64_t n, const Exl2Recipe& recipe, uint64_t seed,
                     bool bias = false);

struct GptqRecipe {
  int bits = 4;
  int64_t group_size = 128;  // -1: one group
  bool act_order = true;     // non-monotone g_idx
  bool sym = true;
  bool v2 = false;  // zeros stored as they are ("gptq_v2") rather than minus one
};

// Adds `prefix`.qweight, .qzeros, .scales, .g_idx of a random GPTQ layer (n * bits % 32 == 0 and
// k * bits % 32 == 0 required).
void make_gptq_layer(std::map<std::string, HostTensor, std::less<>>& out, const std::string& prefix,
                     int64_t k, int64_t n, const GptqRecipe& recipe, uint64_t seed);
// The quantization_config object a GPTQ checkpoint made with `recipe` carries.
std::string gptq_config_json(const GptqRecipe& recipe);

// Tensors held in memory.
class MemoryTensorSource final : public TensorSource {
 public:
  explicit MemoryTensorSource(std::map<std::string, HostTensor, std::less<>> tensors)
      : tensors_(std::move(tensors)) {}
  std::vector<std::string> tensor_names() const override;
  bool has(std::string_view name) const override;
  TensorInfo info(std::string_view name) const override;
  HostTensor get(std::string_view name) const override;
  uint64_t file_bytes() const override;

 private:
  std::map<std::string, HostTensor, std::less<>> tensors_;
};

// A whole quantized model of `config`'s shape: fp16 embedding and norms (random), every linear
// of the decoder quantized with one recipe, and a quantized lm_head (EXL2: the 6-bit head
// recipe; GPTQ: the layers' recipe). Tensors are made on each get(), deterministically.
class SyntheticQuantSource final : public TensorSource {
 public:
  struct Options {
    std::string format = "exl2";  // "exl2" or "gptq"
    double bpw = 4.0;             // EXL2 target
    GptqRecipe gptq;
    uint64_t seed = 1;
  };
  SyntheticQuantSource(const ModelConfig& config, const Options& options);

  std::vector<std::string> tensor_names() const override;
  bool has(std::string_view name) const override;
  TensorInfo info(std::string_view name) const override;
  HostTensor get(std::string_view name) const override;
  uint64_t file_bytes() const override;

  // config.quantization_config_json for a model read from this source.
  const std::string& quantization_config_json() const { return config_json_; }

 private:
  struct Linear {
    int64_t k = 0, n = 0;
    bool head = false;
  };
  struct Entry {
    std::string layer;  // the linear's prefix, or empty for a dense tensor
    TensorInfo info;
  };
  std::map<std::string, HostTensor, std::less<>> make_linear(const std::string& prefix) const;

  ModelConfig config_;
  Options options_;
  std::string config_json_;
  std::map<std::string, Linear, std::less<>> linears_;
  std::map<std::string, Entry, std::less<>> entries_;
  uint64_t bytes_ = 0;
  mutable std::mutex mutex_;
  mutable std::string cached_prefix_;
  mutable std::map<std::string, HostTensor, std::less<>> cached_;
};

}  // namespace hearth
