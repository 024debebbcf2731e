#include "engine/backend/backend_factory.h"

#include <fstream>
#include <thread>

#include "engine/api/engine.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"

namespace hearth {

bool cuda_available() { return false; }

DeviceMemoryInfo query_device_memory(DeviceKind kind, int device) {
  DeviceMemoryInfo info;
  if (kind == DeviceKind::kCuda) {
    fail(ErrorCode::kUnsupported, "this build of Hearth has no CUDA backend");
  }
  info.name = "CPU (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  size_t kb;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") info.total_bytes = kb * 1024;
    if (key == "MemAvailable:") info.free_bytes = kb * 1024;
  }
  return info;
}

std::unique_ptr<Backend> create_backend(DeviceKind kind, int device, int cpu_threads) {
  if (kind == DeviceKind::kCuda) {
    fail(ErrorCode::kUnsupported, "this build of Hearth has no CUDA backend");
  }
  return create_cpu_backend(cpu_threads);
}

}  // namespace hearth
