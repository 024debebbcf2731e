#include "engine/backend/cuda_status.h"

namespace hearth {
namespace {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

constexpr int kMinimumComputeMajor = 8;  // the kernels use sm_80 features (cp.async, bf16 mma)

}  // namespace

std::string minimum_driver_for_cuda(int major) {
  // From NVIDIA's CUDA release notes (Linux, minor-version compatibility).
  switch (major) {
    case 11:
      return "450.80.02";
    case 12:
      return "525.60.13";
    case 13:
      return "580";
    default:
      return "a driver released for CUDA " + std::to_string(major);
  }
}

CudaStatus describe_cuda_probe(const CudaProbe& p) {
  CudaStatus status;
  const std::string on_cpu = " Models run on the CPU meanwhile.";
  if (!p.built_with_cuda) {
    status.summary = "This build of Hearth has no CUDA backend; models run on the CPU.";
    return status;
  }
  const std::string needed = "CUDA " + version_text(p.runtime_version) + " (NVIDIA driver " +
                             minimum_driver_for_cuda(p.runtime_version / 1000) + " or newer)";
  if (p.driver_version == 0) {
    status.summary =
        "No NVIDIA driver was found (libcuda.so.1 is not installed). To run models "
        "on an NVIDIA GPU, install the NVIDIA driver: Hearth's GPU backend needs " +
        needed + "." + on_cpu;
    return status;
  }
  const std::string driver = "The NVIDIA driver (CUDA " + version_text(p.driver_version) + ")";
  if (p.driver_version / 1000 < p.runtime_version / 1000) {
    status.summary = driver + " is too old for Hearth's GPU backend, which needs " + needed +
                     ". Update the NVIDIA driver to use the GPU." + on_cpu;
    return status;
  }
  if (!p.device_error.empty()) {
    status.summary = driver + " could not open a GPU: " + p.device_error + "." + on_cpu;
    return status;
  }
  if (p.device_count == 0) {
    status.summary = driver + " is installed, but no NVIDIA GPU was found." + on_cpu;
    return status;
  }
  if (p.best_compute_major < kMinimumComputeMajor) {
    status.summary =
        "The GPU found (" + p.best_device_name + ", compute capability " +
        std::to_string(p.best_compute_major) + "." + std::to_string(p.best_compute_minor) +
        ") is older than Hearth's kernels support (8.0, NVIDIA Ampere, or newer)." + on_cpu;
    return status;
  }
  if (!p.cublas_error.empty()) {
    status.summary =
        "The GPU is present, but cuBLAS, which Hearth ships with its package, could "
        "not be loaded; reinstall Hearth to use the GPU." +
        on_cpu + " (" + p.cublas_error + ")";
    return status;
  }
  status.available = true;
  status.summary = driver + ", " + std::to_string(p.device_count) + " GPU" +
                   (p.device_count == 1 ? "" : "s") + " (best: " + p.best_device_name +
                   "); cuBLAS from " + p.cublas_path;
  return status;
}

}  // namespace hearth
