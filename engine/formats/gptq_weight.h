// A GPTQ linear layer (AutoGPTQ / GPTQModel / TheBloke layout, docs/FORMATS.md §2), validated
// on load and kept packed as the file holds it.
//
// Tensors of layer P: P.qweight I32 [K·b/32, N] (column n is a little-endian bitstream along
// k), P.qzeros I32 [G, N·b/32] (row g is a bitstream along n), P.scales F16/F32/BF16 [G, N],
// P.g_idx I32 [K] (optional: the group of each input row; act-order makes it non-monotone).
// W[k,n] = fp16((q[k,n] − z[g_idx[k],n]) · fp16(scales[g_idx[k],n])), where z is the stored
// zero plus one in the v1 ("gptq") convention and the stored zero in v2 ("gptq_v2").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/core/quantized_weight.h"
#include "engine/formats/gptq_config.h"
#include "engine/io/tensor_source.h"

namespace hearth {

enum class GptqZeros {
  kV1,  // "gptq": stored zero = Z − 1
  kV2,  // "gptq_v2": stored zero = Z
};

class GptqWeight final : public QuantizedWeight {
 public:
  // Loads and validates layer `prefix`. `config` is the model's quantization config (may be
  // empty); `out_features`, when > 0, must match the stored N.
  static std::shared_ptr<const GptqWeight> load(const TensorSource& source,
                                                const std::string& prefix, const GptqConfig& config,
                                                int64_t out_features);

  std::string_view format() const override { return "gptq"; }
  int64_t in_features() const override { return k_; }
  int64_t out_features() const override { return n_; }
  double bits_per_weight() const override { return bits_per_weight_; }
  void dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const override;

  // --- for kernels and tests ---
  const std::string& name() const { return name_; }
  int bits() const { return bits_; }
  int64_t groups() const { return groups_; }
  GptqZeros zero_format() const { return zeros_; }
  // True when every zero is 2^(b-1) (symmetric quantization): kernels need no zero tensor.
  bool symmetric() const { return symmetric_; }
  // Group of each input row, as the checkpoint says (or k / group_size without g_idx).
  std::span<const int32_t> group_index() const { return g_idx_; }
  int64_t group_size() const { return group_size_; }  // 0 when g_idx alone defines groups
  const uint32_t* qweight() const { return qweight_.as<uint32_t>(); }  // [K·b/32, N]
  uint32_t code(int64_t k, int64_t n) const;                           // q[k, n]
  int zero(int64_t g, int64_t n) const;     // effective Z (v1 stored + 1)
  float scale(int64_t g, int64_t n) const;  // fp16 scale, as float

 private:
  GptqWeight() = default;

  std::string name_;
  int bits_ = 0;
  int64_t k_ = 0, n_ = 0, groups_ = 0, group_size_ = 0;
  double bits_per_weight_ = 0;
  GptqZeros zeros_ = GptqZeros::kV1;
  bool symmetric_ = false;
  HostTensor qweight_, qzeros_;
  std::vector<float> scales_;  // [G, N], fp16 values
  std::vector<int32_t> g_idx_;
};

// Decides v1 or v2 zeros: a symmetric checkpoint tells by its zero words (all 2^(b-1) − 1: v1;
// all 2^(b-1): v2), whatever its label says; otherwise the label decides ("gptq_v2": v2, else v1).
GptqZeros resolve_gptq_zeros(const std::string& checkpoint_format, bool all_v1_sym,
                             bool all_v2_sym);

}  // namespace hearth
