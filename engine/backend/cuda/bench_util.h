// Measuring helpers shared by the GPU benchmarks (engine/backend/cuda/cuda_bench.cpp,
// engine/quant/quant_bench.cpp): event timing, the device's copy bandwidth, prompt tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace hearth::cuda {

class CudaBackend;

namespace bench {

double median(std::vector<double> v);
double seconds_since(std::chrono::steady_clock::time_point t0);
// Median milliseconds of `fn` on the stream, timed with events, after warm-up runs; fn gets
// the run's index (warm-ups first).
double time_ms(cudaStream_t stream, const std::function<void(int)>& fn, int warmup, int reps);
// Device-to-device copy of 1 GiB: (bytes read + bytes written) / time, in GB/s.
double copy_bandwidth_gbs(CudaBackend& backend, double* ms = nullptr);
// Dense fp16 tensor-core peak with fp32 accumulation from the vendors' datasheets (TFLOP/s),
// 0 for unknown devices.
double datasheet_fp16_tflops(const std::string& device_name);
// Deterministic token ids for benchmark prompts (the weights are random: any ids do).
std::vector<int32_t> tokens_for(int64_t n, int64_t vocab, uint64_t seed);
// printf-style formatting of one number.
std::string fmt(const char* format, double value);

}  // namespace bench
}  // namespace hearth::cuda
