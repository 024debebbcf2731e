// Whether the CUDA backend can run on this machine and, when it cannot, why, in words a user can
// act on (what was found, what to install). The facts are gathered by the CUDA backend
// (cuda/cuda_probe.cpp); turning them into a verdict is kept here, free of CUDA, so that every
// case is tested on machines without a GPU.
#pragma once

#include <string>

namespace hearth {

// What was found. CUDA versions are encoded as 1000 * major + 10 * minor (13000 is 13.0).
struct CudaProbe {
  bool built_with_cuda = false;
  int runtime_version = 0;   // the CUDA version this build's backend needs
  int driver_version = 0;    // the newest CUDA the installed driver supports; 0: no driver
  std::string device_error;  // the runtime's error when it could not count devices
  int device_count = 0;
  std::string best_device_name;  // the device of highest compute capability
  int best_compute_major = 0;
  int best_compute_minor = 0;
  std::string cublas_error;  // why cuBLAS could not be loaded; empty when it was
  std::string cublas_path;   // where it was loaded from
};

struct CudaStatus {
  bool available = false;
  // When available: the driver and devices, for "info" lines. Otherwise: why not, what to do,
  // and that models run on the CPU meanwhile.
  std::string summary;
};

// The oldest NVIDIA Linux driver that supports CUDA `major` ("580" for CUDA 13).
std::string minimum_driver_for_cuda(int major);

CudaStatus describe_cuda_probe(const CudaProbe& probe);

}  // namespace hearth
