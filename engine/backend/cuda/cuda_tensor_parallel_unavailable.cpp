// Built without nccl.h: tensor parallelism is refused with the reason.
#include "engine/backend/cuda/cuda_tensor_parallel.h"

#include "engine/core/error.h"

namespace hearth {

std::unique_ptr<Backend> create_tensor_parallel_backend(const std::vector<int>& devices,
                                                        const TensorParallelShape& shape,
                                                        const CudaBackendOptions& options) {
  (void)devices, (void)shape, (void)options;
  fail(ErrorCode::kUnsupported,
       "this build of Hearth has no tensor parallelism (NCCL's header was not found when it was "
       "built): split the model by layers instead");
}

double tensor_parallel_all_reduce_us(Backend& backend, int64_t rows, int64_t cols, int reps,
                                     bool nccl) {
  (void)backend, (void)rows, (void)cols, (void)reps, (void)nccl;
  fail(ErrorCode::kUnsupported, "this build of Hearth has no tensor parallelism");
}

}  // namespace hearth
