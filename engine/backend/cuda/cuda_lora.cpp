// LoRA on the CUDA backend. A group's A matrices are stacked into one [columns, in] matrix
// (every adapter and target of the group), so one projection serves them all; each target keeps
// Bᵀ of its columns with the adapters' scales folded in. On the outputs of quantized linears
// still queued (CudaBackendOptions::lora_fold_max_rows), the LoRA joins their launch
// (fuse_lora, kernels::QuantGemmLora).
// Otherwise a few rows run the shrink and expand kernels (kernels/lora.cu,
// CudaBackendOptions::lora_kernel_max_rows); more rows run cuBLAS with the rows' weights
// applied in between.
#include <cublas_v2.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_quant_linear.h"
#include "engine/core/error.h"

namespace hearth::cuda {
namespace {

class CudaLoraWeight final : public BackendWeight {
 public:
  explicit CudaLoraWeight(GraphEpoch epoch) : on_destroy(std::move(epoch)) {}
  size_t device_bytes() const override {
    size_t n = a.size() + slot_of_col.size();
    for (const Target& t : targets) n += t.bt.size();
    for (const auto& [matrix, copy] : stored_order) n += copy.size();
    return n;
  }
  struct Target {
    DeviceBuffer bt;  // [cols, out_features], scaled
    int64_t out_features = 0;
    int col0 = 0;
    int cols = 0;
  };
  EpochOnDestroy on_destroy;
  std::string name;
  int64_t in_features = 0;
  int total_cols = 0;
  size_t element_bytes = 2;  // of a and bt: the activation dtype's
  DeviceBuffer a;            // [total_cols, in_features]
  DeviceBuffer slot_of_col;  // int32 [total_cols]
  std::vector<int32_t> slot_of_col_host;
  std::vector<Target> targets;
  // A's columns of each target in the staging order of the quantized matrix it adds to (by that
  // matrix's row_src; kernels::lora_gather_features), made on first use by a fold
  // (CudaBackend::fuse_lora).
  mutable std::map<const int32_t*, DeviceBuffer> stored_order;
};

cudaDataType_t cublas_type(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

std::unique_ptr<BackendWeight> CudaBackend::upload_lora(const LoraSource& source) {
  DeviceGuard guard(options_.device);
  const auto targets = static_cast<int>(source.out_features.size());
  HEARTH_CHECK(targets > 0 && targets <= kernels::kLoraMaxTargets,
               source.name + ": LoRA target count");
  const int64_t K = source.in_features;
  auto w = std::make_unique<CudaLoraWeight>(epoch_);
  w->name = source.name;
  w->in_features = K;
  w->element_bytes = dtype_size(options_.activation_dtype);
  // Columns ordered by target, so each target's columns are one contiguous block.
  std::vector<float> a_stack;
  std::vector<int32_t> slots;
  const DType dtype = options_.activation_dtype;
  for (int t = 0; t < targets; ++t) {
    CudaLoraWeight::Target target;
    target.out_features = source.out_features[static_cast<size_t>(t)];
    target.col0 = static_cast<int>(slots.size());
    std::vector<const LoraPart*> parts;
    for (const LoraPart& p : source.parts) {
      if (p.target != t) continue;
      HEARTH_CHECK(p.slot >= 0 && p.slot < kMaxLoraSlots, source.name + ": LoRA slot");
      HEARTH_CHECK(p.a.shape.size() == 2 && p.b.shape.size() == 2 && p.a.shape[1] == K &&
                       p.b.shape[0] == target.out_features && p.b.shape[1] == p.a.shape[0],
                   source.name + ": LoRA A/B shapes");
      parts.push_back(&p);
      const std::vector<float> a = p.a.to_floats();
      a_stack.insert(a_stack.end(), a.begin(), a.end());
      slots.insert(slots.end(), static_cast<size_t>(p.a.shape[0]), p.slot);
    }
    target.cols = static_cast<int>(slots.size()) - target.col0;
    if (target.cols > 0) {
      // Bᵀ [cols, n]: column c of the target's block holds B[:, c] · scale.
      const int64_t n = target.out_features;
      std::vector<float> bt(static_cast<size_t>(target.cols * n));
      int c0 = 0;
      for (const LoraPart* p : parts) {
        const std::vector<float> b = p->b.to_floats();
        const int64_t rank = p->b.shape[1];
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t c = 0; c < rank; ++c) {
            bt[static_cast<size_t>((c0 + c) * n + j)] =
                b[static_cast<size_t>(j * rank + c)] * p->scale;
          }
        }
        c0 += static_cast<int>(rank);
      }
      target.bt = DeviceBuffer(bt.size() * dtype_size(dtype), MemoryCategory::kWeights, counters_,
                               source.name + " LoRA B");
      stream_to_device(bt.data(), DType::kF32, static_cast<int64_t>(bt.size()), target.bt.get(),
                       dtype, source.name + " LoRA B");
    }
    w->targets.push_back(std::move(target));
  }
  w->total_cols = static_cast<int>(slots.size());
  w->slot_of_col_host = slots;
  HEARTH_CHECK(w->total_cols > 0, source.name + ": LoRA without parts");
  w->a = DeviceBuffer(a_stack.size() * dtype_size(dtype), MemoryCategory::kWeights, counters_,
                      source.name + " LoRA A");
  stream_to_device(a_stack.data(), DType::kF32, static_cast<int64_t>(a_stack.size()), w->a.get(),
                   dtype, source.name + " LoRA A");
  w->slot_of_col = DeviceBuffer(slots.size() * sizeof(int32_t), MemoryCategory::kWeights, counters_,
                                source.name + " LoRA slots");
  check_cuda(cudaMemcpy(w->slot_of_col.get(), slots.data(), slots.size() * sizeof(int32_t),
                        cudaMemcpyHostToDevice),
             "uploading LoRA slots");
  return w;
}

bool CudaBackend::fuse_lora(const BackendWeight& weight, const DeviceTensor& x,
                            std::span<const DeviceTensor> outs) {
  const auto* w = dynamic_cast<const CudaLoraWeight*>(&weight);
  const int64_t rows = x.rows;
  if (!w || pending_quant_.size() != outs.size() || pending_quant_x_.data != x.data ||
      pending_quant_x_.rows != rows || rows <= 0 ||
      rows > std::min<int64_t>(options_.lora_fold_max_rows, kernels::kQuantGemmLoraMaxRows) ||
      x.dtype != DType::kF16 || w->element_bytes != sizeof(uint16_t) ||
      rows > prepared_.padded_tokens) {
    return false;
  }
  // Each target's columns of the slots this batch uses (prepared_.active_slots, part of the
  // graph key): the range from the first to the last, columns of unused slots inside it weigh 0.
  std::vector<std::pair<int, int>> used(outs.size(), {0, 0});  // [first, end)
  for (size_t t = 0; t < outs.size(); ++t) {
    const PendingQuantLinear& p = pending_quant_[t];
    const CudaLoraWeight::Target& g = w->targets[t];
    int first = g.col0 + g.cols, end = g.col0;
    for (int c = g.col0; c < g.col0 + g.cols; ++c) {
      if ((prepared_.active_slots >> w->slot_of_col_host[static_cast<size_t>(c)]) & 1u) {
        first = std::min(first, c);
        end = c + 1;
      }
    }
    if (first < end) used[t] = {first, end};
    if (p.out.data != outs[t].data || p.out.rows != rows || p.lora.cols != 0 ||
        end - first > kernels::kQuantGemmLoraMaxCols || g.out_features % 8 != 0) {
      return false;
    }
  }
  // A in each matrix's staging order: made outside graph capture (a step runs once before
  // it is captured), so a capture without it falls back. The folds are attached once every
  // target has its copy, so a fallback leaves the queued linears as they were.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream_, &capture), "checking for graph capture");
  std::vector<kernels::QuantGemmLora> folds(outs.size());
  for (size_t t = 0; t < outs.size(); ++t) {
    const CudaLoraWeight::Target& g = w->targets[t];
    const auto [first, end] = used[t];
    if (first == end) continue;
    const kernels::QuantMatrix& m = quantized_matrix(*pending_quant_[t].weight);
    const int64_t stored = m.chunks * 32;
    auto it = w->stored_order.find(m.row_src);
    if (it == w->stored_order.end()) {
      if (capture != cudaStreamCaptureStatusNone) return false;
      DeviceBuffer copy(static_cast<size_t>(g.cols * stored) * sizeof(uint16_t),
                        MemoryCategory::kWeights, counters_, w->name + " LoRA A, stored order");
      check_launch(kernels::lora_gather_features(
                       launch_plain(),
                       static_cast<const char*>(w->a.get()) +
                           static_cast<size_t>(g.col0) * static_cast<size_t>(w->in_features) *
                               w->element_bytes,
                       g.cols, w->in_features, m.row_src, stored, copy.get()),
                   "lora_gather_features");
      it = w->stored_order.emplace(m.row_src, std::move(copy)).first;
    }
    kernels::QuantGemmLora& l = folds[t];
    l.a = static_cast<const char*>(it->second.get()) +
          static_cast<size_t>(first - g.col0) * static_cast<size_t>(stored) * w->element_bytes;
    l.bt = static_cast<const char*>(g.bt.get()) + static_cast<size_t>(first - g.col0) *
                                                      static_cast<size_t>(g.out_features) *
                                                      w->element_bytes;
    l.slot_of_col = w->slot_of_col.as<int32_t>() + first;
    l.row_weights = adapter_rows_device_.as<float>();
    l.cols = end - first;
    l.slots = kMaxLoraSlots;
  }
  for (size_t t = 0; t < outs.size(); ++t) pending_quant_[t].lora = folds[t];
  ++folded_loras_;
  return true;
}

void CudaBackend::lora(const BackendWeight& weight, DeviceTensor x,
                       std::span<const DeviceTensor> outs) {
  const auto* w = dynamic_cast<const CudaLoraWeight*>(&weight);
  HEARTH_CHECK(w != nullptr, "lora: weight is not a CUDA LoRA weight");
  HEARTH_CHECK(x.cols == w->in_features && outs.size() == w->targets.size(),
               "lora " + w->name + ": shapes");
  const int64_t rows = x.rows;
  check_rows(x, rows, "lora");
  for (size_t t = 0; t < outs.size(); ++t) {
    HEARTH_CHECK(outs[t].cols == w->targets[t].out_features, "lora " + w->name + ": output shape");
    check_rows(outs[t], rows, "lora");
  }
  if (!prepared_.adapters || rows <= 0) return;  // no row weighs any adapter
  HEARTH_CHECK(rows <= prepared_.padded_tokens, "lora: more rows than the batch");
  // Into the launch of the outputs' quantized linears, when they are queued and it fits.
  if (fuse_lora(weight, x, outs)) return;
  flush_linears();  // the outputs' base linears (and a norm producing x) run first
  const kernels::Elem elem = to_elem(x.dtype);
  const size_t esize = dtype_size(x.dtype);
  const int cols = w->total_cols;
  grow_workspace(lora_t_, static_cast<size_t>(rows * cols) * esize, "LoRA projections");
  const auto* row_weights = adapter_rows_device_.as<float>();
  const auto* slot_of_col = w->slot_of_col.as<int32_t>();
  if (rows <= std::min<int64_t>(options_.lora_kernel_max_rows, kernels::kLoraKernelMaxRows) &&
      kernels::lora_expand_fits(rows, cols)) {
    check_launch(kernels::lora_shrink(launch(), elem, x.data, rows, w->in_features, w->a.get(),
                                      cols, slot_of_col, row_weights, kMaxLoraSlots, lora_t_.get()),
                 "lora_shrink");
    kernels::LoraExpandTargets targets;
    for (size_t t = 0; t < outs.size(); ++t) {
      const CudaLoraWeight::Target& g = w->targets[t];
      if (g.cols == 0) continue;
      targets.t[targets.count++] = {outs[t].data, g.bt.get(), g.out_features, g.col0, g.cols};
    }
    check_launch(kernels::lora_expand(launch(), elem, lora_t_.get(), rows, cols, targets),
                 "lora_expand");
    return;
  }
  // Many rows: t = x·Aᵀ in fp32, weighted per row, then out += t·Bᵀ per target (column-major
  // views as in linear_cublas).
  grow_workspace(lora_t_f32_, static_cast<size_t>(rows * cols) * sizeof(float),
                 "LoRA projections (fp32)");
  const float one = 1.0f, zero = 0.0f;
  const int k = static_cast<int>(w->in_features);
  const int r = static_cast<int>(rows);
  check_cublas(cuda::cublas().GemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, cols, r, k, &one,
                                     w->a.get(), cublas_type(x.dtype), k, x.data,
                                     cublas_type(x.dtype), k, &zero, lora_t_f32_.get(), CUDA_R_32F,
                                     cols, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               ("LoRA projection of " + w->name).c_str());
  check_launch(kernels::lora_scale_rows(launch(), elem, lora_t_f32_.as<float>(), rows, cols,
                                        slot_of_col, row_weights, kMaxLoraSlots, lora_t_.get()),
               "lora_scale_rows");
  for (size_t t = 0; t < outs.size(); ++t) {
    const CudaLoraWeight::Target& g = w->targets[t];
    if (g.cols == 0) continue;
    const int n = static_cast<int>(g.out_features);
    const void* t_block =
        static_cast<const char*>(lora_t_.get()) + static_cast<size_t>(g.col0) * esize;
    check_cublas(
        cuda::cublas().GemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, n, r, g.cols, &one, g.bt.get(),
                              cublas_type(x.dtype), n, t_block, cublas_type(x.dtype), cols, &one,
                              outs[t].data, cublas_type(outs[t].dtype), n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
        ("LoRA update of " + w->name).c_str());
  }
}

}  // namespace hearth::cuda
