#include "engine/backend/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <utility>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/error.h"

namespace hearth::cuda {

std::string mebibytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

DeviceBuffer::DeviceBuffer(size_t bytes, MemoryCategory category,
                           std::shared_ptr<MemoryCounters> counters, const std::string& what)
    : bytes_(bytes), category_(category), counters_(std::move(counters)) {
  if (bytes == 0) return;
  const cudaError_t status = cudaMalloc(&ptr_, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    ptr_ = nullptr;
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    fail(ErrorCode::kOutOfMemory, "not enough GPU memory for " + what + ": needs " +
                                      mebibytes(bytes) + ", " + mebibytes(free) + " free of " +
                                      mebibytes(total));
  }
  if (status != cudaSuccess) {
    ptr_ = nullptr;
    throw_cuda_error(status, "allocating " + mebibytes(bytes) + " for " + what);
  }
  if (counters_) (*counters_)[category_] += bytes_;
}

DeviceBuffer::~DeviceBuffer() {
  reset();
}

void DeviceBuffer::reset() {
  if (ptr_) {
    cudaFree(ptr_);
    if (counters_) (*counters_)[category_] -= bytes_;
  }
  ptr_ = nullptr;
  bytes_ = 0;
  counters_.reset();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept {
  *this = std::move(other);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    category_ = other.category_;
    counters_ = std::move(other.counters_);
  }
  return *this;
}

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t status = cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault);
  if (status != cudaSuccess) {
    cudaGetLastError();
    ptr_ = nullptr;
    fail(ErrorCode::kOutOfMemory,
         "cannot pin " + mebibytes(bytes) + " of host memory: " + cudaGetErrorString(status));
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept {
  *this = std::move(other);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace hearth::cuda
