// Owned device and pinned host allocations, with the device ones counted by category for
// Backend::memory_usage(). Freed on destruction whatever the CUDA state (errors are ignored
// there: the memory goes back to the driver with the context at the latest).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace hearth::cuda {

enum class MemoryCategory { kWeights, kKvCache, kActivations, kWorkspace };

struct MemoryCounters {
  std::array<size_t, 4> bytes{};
  size_t& operator[](MemoryCategory c) { return bytes[static_cast<size_t>(c)]; }
  size_t operator[](MemoryCategory c) const { return bytes[static_cast<size_t>(c)]; }
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws Error(kOutOfMemory) naming `what`, the size and the device's free memory. The
  // counters are shared so that a buffer may outlive the backend that counted it.
  DeviceBuffer(size_t bytes, MemoryCategory category, std::shared_ptr<MemoryCounters> counters,
               const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  void reset();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  MemoryCategory category_ = MemoryCategory::kWorkspace;
  std::shared_ptr<MemoryCounters> counters_;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);  // throws Error(kOutOfMemory)
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

std::string mebibytes(size_t bytes);  // "123.4 MiB"

}  // namespace hearth::cuda
