// What the user is told about the GPU for each machine Hearth may start on (no CUDA build, no
// driver, a driver too old, no GPU, a GPU too old, cuBLAS missing, all present), and that the
// real probe never stops Hearth from starting.
#include <gtest/gtest.h>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda_status.h"
#include "engine/core/error.h"

namespace hearth {
namespace {

CudaProbe full_machine() {
  CudaProbe p;
  p.built_with_cuda = true;
  p.runtime_version = 13000;
  p.driver_version = 13010;
  p.device_count = 2;
  p.best_device_name = "NVIDIA H100 80GB HBM3";
  p.best_compute_major = 9;
  p.best_compute_minor = 0;
  p.cublas_path = "/usr/lib/hearth/libcublas.so.13";
  return p;
}

void expect_cpu_fallback(const CudaStatus& s, const std::string& must_say) {
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.summary.find(must_say), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("CPU"), std::string::npos) << s.summary;
}

TEST(CudaStatus, EverythingPresentIsAvailable) {
  const CudaStatus s = describe_cuda_probe(full_machine());
  EXPECT_TRUE(s.available);
  EXPECT_NE(s.summary.find("CUDA 13.1"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("2 GPUs"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("H100"), std::string::npos) << s.summary;
}

TEST(CudaStatus, ABuildWithoutCudaSaysSo) {
  expect_cpu_fallback(describe_cuda_probe(CudaProbe{}), "no CUDA backend");
}

TEST(CudaStatus, NoDriverNamesWhatToInstall) {
  CudaProbe p = full_machine();
  p.driver_version = 0;
  const CudaStatus s = describe_cuda_probe(p);
  expect_cpu_fallback(s, "No NVIDIA driver");
  EXPECT_NE(s.summary.find("580"), std::string::npos) << s.summary;
}

TEST(CudaStatus, AnOldDriverSaysWhichVersionIsNeeded) {
  CudaProbe p = full_machine();
  p.driver_version = 12040;
  const CudaStatus s = describe_cuda_probe(p);
  expect_cpu_fallback(s, "CUDA 12.4");
  EXPECT_NE(s.summary.find("too old"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("CUDA 13.0 (NVIDIA driver 580 or newer)"), std::string::npos)
      << s.summary;
}

TEST(CudaStatus, ANewerMinorDriverIsEnough) {
  CudaProbe p = full_machine();
  p.runtime_version = 13020;
  p.driver_version = 13000;  // minor-version compatibility within CUDA 13
  EXPECT_TRUE(describe_cuda_probe(p).available);
}

TEST(CudaStatus, DriverErrorsAndMissingGpusAreExplained) {
  CudaProbe p = full_machine();
  p.device_error = "cudaErrorNoDevice, no CUDA-capable device is detected";
  expect_cpu_fallback(describe_cuda_probe(p), "no CUDA-capable device");
  p = full_machine();
  p.device_count = 0;
  expect_cpu_fallback(describe_cuda_probe(p), "no NVIDIA GPU was found");
}

TEST(CudaStatus, AGpuOlderThanAmpereIsNamed) {
  CudaProbe p = full_machine();
  p.best_device_name = "Tesla T4";
  p.best_compute_major = 7;
  p.best_compute_minor = 5;
  const CudaStatus s = describe_cuda_probe(p);
  expect_cpu_fallback(s, "Tesla T4, compute capability 7.5");
}

TEST(CudaStatus, AMissingCublasAsksForAReinstall) {
  CudaProbe p = full_machine();
  p.cublas_error = "cuBLAS (libcublas.so.13) could not be loaded; tried: ...";
  const CudaStatus s = describe_cuda_probe(p);
  expect_cpu_fallback(s, "reinstall Hearth");
  EXPECT_NE(s.summary.find("libcublas.so.13"), std::string::npos) << s.summary;
}

// On this machine, whatever it has: the probe answers, and without a usable GPU a CUDA load is
// refused with the same explanation instead of failing later.
TEST(CudaStatus, TheRealProbeAnswersAndRefusalsCarryItsReason) {
  const CudaStatus& s = cuda_status();
  EXPECT_FALSE(s.summary.empty());
  EXPECT_EQ(&s, &cuda_status());  // probed once
  if (s.available) GTEST_SKIP() << "a usable GPU is present: " << s.summary;
  try {
    create_backend(DeviceKind::kCuda, 0, 1);
    FAIL() << "a CUDA backend was created without a usable GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find(s.summary), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hearth
