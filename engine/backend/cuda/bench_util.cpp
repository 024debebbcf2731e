#include "engine/backend/cuda/bench_util.h"

#include <algorithm>
#include <cstdio>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"

namespace hearth::cuda::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double time_ms(cudaStream_t stream, const std::function<void(int)>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn(i);
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "creating an event");
  check_cuda(cudaEventCreate(&stop), "creating an event");
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    check_cuda(cudaEventRecord(start, stream), "recording an event");
    fn(warmup + i);
    check_cuda(cudaEventRecord(stop, stream), "recording an event");
    check_cuda(cudaEventSynchronize(stop), "timing");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return median(times);
}

double copy_bandwidth_gbs(CudaBackend& be, double* ms_out) {
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer a = be.alloc_workspace(bytes, "bandwidth test");
  DeviceBuffer b = be.alloc_workspace(bytes, "bandwidth test");
  check_cuda(cudaMemsetAsync(a.get(), 1, bytes, be.stream()), "filling");
  const double ms = time_ms(
      be.stream(),
      [&](int) {
        check_cuda(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, be.stream()),
                   "copying");
      },
      3, 10);
  if (ms_out) *ms_out = ms;
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

double datasheet_fp16_tflops(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H100") && has("PCIe")) return 756.0;
  if (has("H100") && has("NVL")) return 835.0;
  if (has("H100") || has("H200") || has("GH200")) return 989.4;
  if (has("B200")) return 2250.0;
  if (has("A100")) return 312.0;
  if (has("L40S")) return 362.05;
  if (has("A6000")) return 154.8;
  if (has("4090")) return 165.2;
  if (has("3090")) return 71.0;
  return 0.0;
}

std::vector<int32_t> tokens_for(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  uint64_t z = seed;
  for (auto& id : t) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((z >> 33) % static_cast<uint64_t>(vocab));
  }
  return t;
}

std::string fmt(const char* format, double value) {
  char b[64];
  std::snprintf(b, sizeof(b), format, value);
  return b;
}

}  // namespace hearth::cuda::bench
