// Creates the backend for a device kind and reports a device's memory, for load plans.
#pragma once

#include <memory>
#include <string>

#include "engine/backend/backend.h"

namespace hearth {

enum class DeviceKind;

struct DeviceMemoryInfo {
  std::string name;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

bool cuda_available();  // built with CUDA and at least one device present
DeviceMemoryInfo query_device_memory(DeviceKind kind, int device);
std::unique_ptr<Backend> create_backend(DeviceKind kind, int device, int cpu_threads);

}  // namespace hearth
