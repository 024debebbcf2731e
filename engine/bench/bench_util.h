// Measuring helpers shared by the GPU benchmarks (engine/bench/cuda_bench.cpp,
// engine/bench/quant_bench.cpp): event timing, the device's copy bandwidth, prompt tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace hearth {
class Backend;
class KvCacheStorage;
class LlamaModel;
struct ModelConfig;
}  // namespace hearth

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
// Parameter counts of a model's linears and norms.
struct ModelNumbers {
  int64_t linear_params = 0;  // per layer × layers + lm_head (what a decode step reads)
  int64_t layer_linear = 0;   // per layer
  int64_t lm_head = 0;
  int64_t norm_params = 0;
};
ModelNumbers model_numbers(const ModelConfig& config);
// Floating-point operations of one `tokens`-token prompt: every linear of every layer for each
// token, the head for the last one, and causal attention (QKᵀ and PV over the lower triangle).
double prefill_flops(const ModelConfig& config, int64_t tokens);
// Deterministic token ids for benchmark prompts (the weights are random: any ids do).
std::vector<int32_t> tokens_for(int64_t n, int64_t vocab, uint64_t seed);
// Untimed decode steps before the timed ones: a direct run, the graph capture, a first replay.
constexpr int kDecodeWarmSteps = 3;
// Seconds for `steps` greedy decode steps of `batch` sequences (one token each, the first at
// position `context`; sequence b owns pages [b·pages_per_seq, (b+1)·pages_per_seq)), sampled on
// the device, after kDecodeWarmSteps untimed steps. `profile_first` brackets the first timed
// step with cudaProfilerStart/Stop, for Nsight's --profile-from-start off.
// `adapter_weights`, when given, holds each sequence's LoRA slot weights (row b % size()).
double time_greedy_decode(LlamaModel& model, Backend& backend, KvCacheStorage& cache, int64_t batch,
                          int64_t pages_per_seq, int64_t context, int steps,
                          bool profile_first = false,
                          const std::vector<std::vector<float>>* adapter_weights = nullptr);
// Median seconds of one forward pass over a `tokens`-token prompt (pages 0, 1, ... of
// `page_size` positions) and a greedy sample of its last row, over three runs after a warm-up.
double time_prefill(LlamaModel& model, Backend& backend, KvCacheStorage& cache, int64_t tokens,
                    int64_t page_size);
// Median seconds of the step that serves a burst of requests behind a cached system prompt:
// `sequences` prompts of `new_tokens` tokens each continue the same `cached` positions (a
// multiple of `page_size`, written once by an untimed prefill into pages 0, 1, ... and shared by
// every sequence's page table; each sequence's own positions in pages after them), with a greedy
// sample of each last row; over three runs after a warm-up. `profile_first` brackets the first
// timed run with cudaProfilerStart/Stop (its kernel timeline: tests/gpu/step_trace_injection.cpp).
double time_prefix_step(LlamaModel& model, Backend& backend, KvCacheStorage& cache,
                        int64_t sequences, int64_t new_tokens, int64_t cached, int64_t page_size,
                        bool profile_first = false);
// Seconds for `steps` speculative check steps of one sequence, laid out as
// time_greedy_decode's: each step feeds the last sampled token and `tokens` - 1 proposals at
// position `context` + step (every row's logits, sampled on the device), the cost of checking
// `tokens` - 1 proposals against a one-token step (`tokens` = 1).
// `profile_first` as for time_greedy_decode.
double time_check_steps(LlamaModel& model, CudaBackend& backend, KvCacheStorage& cache,
                        int64_t tokens, int64_t pages_per_seq, int64_t context, int steps,
                        bool profile_first = false);
// printf-style formatting of one number.
std::string fmt(const char* format, double value);

}  // namespace bench
}  // namespace hearth::cuda
