#include "engine/backend/tensor_parallel_split.h"

#include <string>

#include "engine/core/error.h"

namespace hearth {
namespace {

// Bounds of `devices` near-equal shares of `units` units (the first shares take the remainder).
std::vector<int64_t> even_bounds(int64_t units, int devices) {
  std::vector<int64_t> bounds{0};
  for (int d = 0; d < devices; ++d) {
    bounds.push_back(bounds.back() + units / devices + (d < units % devices ? 1 : 0));
  }
  return bounds;
}

}  // namespace

TensorParallelSplit tensor_parallel_split(const TensorParallelShape& shape, int devices) {
  if (devices < 2) {
    fail(ErrorCode::kInvalidArgument, "tensor parallelism needs two GPUs or more");
  }
  if (shape.num_kv_heads < devices) {
    fail(ErrorCode::kUnsupported,
         "tensor parallelism divides whole key/value heads, and the model has " +
             std::to_string(shape.num_kv_heads) + " for " + std::to_string(devices) +
             " GPUs: use fewer GPUs or split by layers");
  }
  if (shape.num_heads % shape.num_kv_heads != 0) {
    fail(ErrorCode::kUnsupported,
         "the model's query heads are not a multiple of its key/value heads");
  }
  const int64_t block =
      shape.intermediate_size % kTensorParallelMlpBlock == 0 ? kTensorParallelMlpBlock : 1;
  if (shape.intermediate_size / block < devices) {
    fail(ErrorCode::kUnsupported,
         "the model's MLP is too narrow for " + std::to_string(devices) + " GPUs: split by layers");
  }
  TensorParallelSplit split;
  split.kv_heads = even_bounds(shape.num_kv_heads, devices);
  split.mlp = even_bounds(shape.intermediate_size / block, devices);
  for (int64_t& b : split.mlp) b *= block;
  split.heads_per_kv = shape.num_heads / shape.num_kv_heads;
  split.head_dim = shape.head_dim;
  return split;
}

}  // namespace hearth
