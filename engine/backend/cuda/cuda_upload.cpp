// Weights from host memory (usually a view into the mapped model file) to the GPU, streamed in
// chunks through two pinned staging buffers: while one chunk crosses the bus the host fills the
// other. No full host copy is ever made. Conversions (F32 or BF16 sources into fp16, quantized
// rows dequantized on the host) happen per chunk, on the GPU.
#include <algorithm>
#include <cstring>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/error.h"
#include "engine/core/quantized_weight.h"
#include "engine/formats/quant_tile_layout.h"

namespace hearth::cuda {
namespace {

constexpr size_t kChunkBytes = size_t(32) << 20;

}  // namespace

void CudaBackend::stream_to_device(const void* src, DType src_dtype, int64_t count, void* dst,
                                   DType dst_dtype, const std::string& what) {
  if (count <= 0) return;
  if (src == nullptr) fail(ErrorCode::kInvalidArgument, what + ": no data");
  const size_t src_size = dtype_size(src_dtype);
  const size_t dst_size = dtype_size(dst_dtype);
  const bool same = src_dtype == dst_dtype;
  if (!upload_host_[0].get()) {
    for (auto& slot : upload_host_) slot = PinnedBuffer(kChunkBytes);
  }
  if (!same && !upload_device_[0]) {
    for (auto& slot : upload_device_) {
      slot = DeviceBuffer(kChunkBytes, MemoryCategory::kWorkspace, counters_, "upload staging");
    }
  }
  const int64_t per_chunk = static_cast<int64_t>(kChunkBytes / src_size);
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  int slot = 0;
  for (int64_t done = 0; done < count; done += per_chunk, slot ^= 1) {
    const int64_t n = std::min(per_chunk, count - done);
    check_cuda(cudaEventSynchronize(upload_done_[slot]), "waiting for an upload");
    std::memcpy(upload_host_[slot].get(), from + static_cast<size_t>(done) * src_size,
                static_cast<size_t>(n) * src_size);
    if (same) {
      check_cuda(
          cudaMemcpyAsync(to + static_cast<size_t>(done) * dst_size, upload_host_[slot].get(),
                          static_cast<size_t>(n) * src_size, cudaMemcpyHostToDevice, stream_),
          ("uploading " + what).c_str());
    } else {
      check_cuda(
          cudaMemcpyAsync(upload_device_[slot].get(), upload_host_[slot].get(),
                          static_cast<size_t>(n) * src_size, cudaMemcpyHostToDevice, stream_),
          ("uploading " + what).c_str());
      check_launch(
          kernels::convert(launch_plain(), to_elem(src_dtype), upload_device_[slot].get(),
                           to_elem(dst_dtype), to + static_cast<size_t>(done) * dst_size, n),
          "convert");
    }
    check_cuda(cudaEventRecord(upload_done_[slot], stream_), "recording an event");
  }
  // The caller may release the host tensor as soon as we return.
  check_cuda(cudaStreamSynchronize(stream_), ("uploading " + what).c_str());
}

void CudaBackend::stream_quantized(const QuantizedWeight& q, void* dst, const std::string& what) {
  const int64_t n = q.out_features();
  const int64_t k = q.in_features();
  if (!upload_host_[0].get()) {
    for (auto& slot : upload_host_) slot = PinnedBuffer(kChunkBytes);
  }
  if (!upload_device_[0]) {
    for (auto& slot : upload_device_) {
      slot = DeviceBuffer(kChunkBytes, MemoryCategory::kWorkspace, counters_, "upload staging");
    }
  }
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / (sizeof(float) * k)));
  if (static_cast<size_t>(k) * sizeof(float) > kChunkBytes) {
    fail(ErrorCode::kUnsupported, what + ": rows too long to stream");
  }
  const size_t dst_size = dtype_size(options_.activation_dtype);
  int slot = 0;
  for (int64_t r = 0; r < n; r += rows_per_chunk, slot ^= 1) {
    const int64_t rows = std::min(rows_per_chunk, n - r);
    check_cuda(cudaEventSynchronize(upload_done_[slot]), "waiting for an upload");
    q.dequantize_rows(r, r + rows, upload_host_[slot].as<float>());
    const size_t bytes = static_cast<size_t>(rows * k) * sizeof(float);
    check_cuda(cudaMemcpyAsync(upload_device_[slot].get(), upload_host_[slot].get(), bytes,
                               cudaMemcpyHostToDevice, stream_),
               ("uploading " + what).c_str());
    check_launch(
        kernels::convert(launch_plain(), kernels::Elem::kF32, upload_device_[slot].get(),
                         to_elem(options_.activation_dtype),
                         static_cast<std::byte*>(dst) + static_cast<size_t>(r * k) * dst_size,
                         rows * k),
        "convert");
    check_cuda(cudaEventRecord(upload_done_[slot], stream_), "recording an event");
  }
  check_cuda(cudaStreamSynchronize(stream_), ("uploading " + what).c_str());
}

std::unique_ptr<BackendWeight> CudaBackend::upload_linear(const LinearSource& source) {
  DeviceGuard guard(options_.device);
  // EXL2, GPTQ and GGUF (every type with a GgufCodeForm, but for small matrices) layers run on
  // the quantized kernels (fp16 activations; engine/formats). Other packed weights are expanded
  // to dense below.
  const bool has_quant_kernels = source.quantized && runs_packed_on_gpu(*source.quantized);
  if (has_quant_kernels && options_.activation_dtype == DType::kF16) {
    return upload_quantized_linear(source);
  }
  auto w = std::make_unique<CudaLinearWeight>(epoch_);
  w->name = source.name;
  w->dtype = options_.activation_dtype;
  const size_t elem = dtype_size(w->dtype);
  if (source.quantized) {
    // Packed weights without GPU kernels (any with bf16 activations) are
    // dequantized row block by row block on the host and kept dense on the GPU.
    const QuantizedWeight& q = *source.quantized;
    w->out_features = q.out_features();
    w->in_features = q.in_features();
    w->weight = DeviceBuffer(static_cast<size_t>(w->out_features * w->in_features) * elem,
                             MemoryCategory::kWeights, counters_, source.name);
    stream_quantized(q, w->weight.get(), source.name);
  } else {
    const HostTensor& t = source.weight;
    if (t.shape.size() != 2) {
      fail(ErrorCode::kInvalidFile,
           source.name + ": a linear weight must be 2-D, got " + t.shape_string());
    }
    if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16) {
      fail(ErrorCode::kUnsupported,
           source.name + ": unsupported weight dtype " + std::string(dtype_name(t.dtype)));
    }
    w->out_features = t.shape[0];
    w->in_features = t.shape[1];
    w->weight = DeviceBuffer(t.nbytes() / dtype_size(t.dtype) * elem, MemoryCategory::kWeights,
                             counters_, source.name);
    stream_to_device(t.data, t.dtype, t.numel(), w->weight.get(), w->dtype, source.name);
  }
  if (source.bias) {
    const HostTensor& b = *source.bias;
    if (b.numel() != w->out_features) {
      fail(ErrorCode::kInvalidFile, source.name + ": bias has " + std::to_string(b.numel()) +
                                        " values for " + std::to_string(w->out_features) +
                                        " outputs");
    }
    w->bias = DeviceBuffer(static_cast<size_t>(b.numel()) * sizeof(float), MemoryCategory::kWeights,
                           counters_, source.name + " bias");
    stream_to_device(b.data, b.dtype, b.numel(), w->bias.get(), DType::kF32, source.name + " bias");
  }
  return w;
}

}  // namespace hearth::cuda
