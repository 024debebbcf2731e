// How tensor parallelism divides a Llama-family model over N devices: whole key/value heads (and
// the query heads that share them) and blocks of MLP features, as evenly as they go. The tensor-
// parallel backend shards its linears and KV cache by it; the load plan sizes each GPU's part.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth {

struct TensorParallelShape {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
};

struct TensorParallelSplit {
  // Device d holds key/value heads [kv_heads[d], kv_heads[d + 1]) and MLP features
  // [mlp[d], mlp[d + 1]); query heads follow their key/value heads.
  std::vector<int64_t> kv_heads;
  std::vector<int64_t> mlp;
  int64_t heads_per_kv = 1;
  int64_t head_dim = 0;

  int devices() const { return static_cast<int>(kv_heads.size()) - 1; }
  int64_t kv_width(int d) const { return (kv_heads[d + 1] - kv_heads[d]) * head_dim; }
  int64_t q_width(int d) const { return kv_width(d) * heads_per_kv; }
  int64_t kv_begin(int d) const { return kv_heads[d] * head_dim; }
  int64_t q_begin(int d) const { return kv_begin(d) * heads_per_kv; }
  int64_t mlp_width(int d) const { return mlp[d + 1] - mlp[d]; }
};

// MLP features are divided in blocks of this many (the quantized kernels' 32-output tiles).
inline constexpr int64_t kTensorParallelMlpBlock = 32;

// Throws Error(kUnsupported) when the model cannot be divided over `devices` (fewer key/value
// heads than devices, query heads not a multiple of them), Error(kInvalidArgument) for fewer than
// two devices.
TensorParallelSplit tensor_parallel_split(const TensorParallelShape& shape, int devices);

}  // namespace hearth
