#include "engine/bench/bench_util.h"

#include <algorithm>
#include <cstdio>

#include <cuda_profiler_api.h>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/error.h"
#include "engine/model/llama_model.h"
#include "engine/sampling/sampling_params.h"

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

ModelNumbers model_numbers(const ModelConfig& c) {
  ModelNumbers m;
  const int64_t H = c.hidden_size;
  m.layer_linear = H * c.q_dim() + 2 * H * c.kv_dim() + c.q_dim() * H + 3 * H * c.intermediate_size;
  m.lm_head = c.vocab_size * H;
  m.linear_params = m.layer_linear * c.num_layers + m.lm_head;
  m.norm_params = (2 * c.num_layers + 1) * H;
  return m;
}

double prefill_flops(const ModelConfig& c, int64_t tokens) {
  const ModelNumbers m = model_numbers(c);
  const auto T = static_cast<double>(tokens);
  const double linear = 2.0 * T * static_cast<double>(m.layer_linear * c.num_layers) +
                        2.0 * static_cast<double>(m.lm_head);
  const double attention = static_cast<double>(c.num_layers * c.num_heads) * 4.0 *
                           static_cast<double>(c.head_dim) * T * (T + 1) / 2.0;
  return linear + attention;
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

namespace {

// A timed step whose capture was abandoned was recorded twice and ran directly: the figure then
// measures a fault, not the steady state (counted on the sampling backend).
void warn_if_captures_abandoned(const Backend& backend, int64_t abandoned_before, const char* what,
                                int64_t size, int steps) {
  if (const int64_t n = backend.graph_stats().abandoned - abandoned_before; n > 0) {
    std::fprintf(stderr,
                 "warning: %s %lld: %lld of %d timed steps had their graph capture abandoned and "
                 "ran directly\n",
                 what, static_cast<long long>(size), static_cast<long long>(n), steps);
  }
}

}  // namespace

double time_greedy_decode(LlamaModel& model, Backend& backend, KvCacheStorage& cache, int64_t batch,
                          int64_t pages_per_seq, int64_t context, int steps, bool profile_first,
                          const std::vector<std::vector<float>>* adapter_weights) {
  std::vector<std::vector<int32_t>> page_tables(static_cast<size_t>(batch));
  int32_t next = 0;
  for (auto& t : page_tables) {
    for (int64_t i = 0; i < pages_per_seq; ++i) t.push_back(next++);
  }
  std::vector<std::vector<int32_t>> feed(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) feed[static_cast<size_t>(b)] = {static_cast<int32_t>(b + 1)};
  SamplingParams greedy;
  std::vector<SampleRequest> requests(static_cast<size_t>(batch));
  for (auto& r : requests) r.params = &greedy;
  std::chrono::steady_clock::time_point start;
  int64_t abandoned_before = 0;
  for (int step = 0; step < kDecodeWarmSteps + steps; ++step) {
    // The previous step's sample() waited for the device(s).
    if (step == kDecodeWarmSteps) {
      start = std::chrono::steady_clock::now();
      abandoned_before = backend.graph_stats().abandoned;
    }
    BatchDesc desc;
    for (int64_t b = 0; b < batch; ++b) {
      SequenceSlice s;
      s.tokens = feed[static_cast<size_t>(b)];
      s.start_pos = static_cast<int32_t>(context + step);
      s.page_table = page_tables[static_cast<size_t>(b)];
      if (adapter_weights && !adapter_weights->empty()) {
        s.adapter_weights = (*adapter_weights)[static_cast<size_t>(b) % adapter_weights->size()];
      }
      desc.seqs.push_back(s);
    }
    const bool profile = profile_first && step == kDecodeWarmSteps;
    if (profile) check_cuda(cudaProfilerStart(), "starting the profiler");
    DeviceTensor logits = model.forward(desc, cache);
    const auto ids = backend.sample(logits, requests);
    if (profile) check_cuda(cudaProfilerStop(), "stopping the profiler");
    for (int64_t b = 0; b < batch; ++b)
      feed[static_cast<size_t>(b)] = {ids[static_cast<size_t>(b)]};
  }
  const double seconds = seconds_since(start);
  warn_if_captures_abandoned(backend, abandoned_before, "decode batch", batch, steps);
  return seconds;
}

double time_prefill(LlamaModel& model, Backend& backend, KvCacheStorage& cache, int64_t tokens,
                    int64_t page_size) {
  return time_prefix_step(model, backend, cache, 1, tokens, 0, page_size);
}

double time_prefix_step(LlamaModel& model, Backend& backend, KvCacheStorage& cache,
                        int64_t sequences, int64_t new_tokens, int64_t cached, int64_t page_size,
                        bool profile_first) {
  HEARTH_CHECK(sequences > 0 && new_tokens > 0 && cached >= 0 && cached % page_size == 0,
               "time_prefix_step: shape");
  const int64_t shared_pages = cached / page_size;
  const int64_t own_pages = (new_tokens + page_size - 1) / page_size;
  std::vector<int32_t> prefix_pages;
  for (int64_t i = 0; i < shared_pages; ++i) prefix_pages.push_back(static_cast<int32_t>(i));
  SamplingParams greedy;
  if (cached > 0) {  // the shared positions hold a real prompt's keys and values
    const std::vector<int32_t> ids = tokens_for(cached, model.config().vocab_size, 13);
    BatchDesc prefix;
    SequenceSlice s;
    s.tokens = ids;
    s.page_table = prefix_pages;
    prefix.seqs.push_back(s);
    const DeviceTensor logits = model.forward(prefix, cache);
    SampleRequest request;
    request.params = &greedy;
    backend.sample(logits, std::span<const SampleRequest>(&request, 1));
  }
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(sequences));
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(sequences));
  BatchDesc batch;
  for (int64_t q = 0; q < sequences; ++q) {
    auto& own = ids[static_cast<size_t>(q)];
    own = tokens_for(new_tokens, model.config().vocab_size, 11 + static_cast<uint64_t>(q));
    auto& table = tables[static_cast<size_t>(q)];
    table = prefix_pages;
    for (int64_t p = 0; p < own_pages; ++p)
      table.push_back(static_cast<int32_t>(shared_pages + q * own_pages + p));
    SequenceSlice s;
    s.tokens = own;
    s.start_pos = static_cast<int32_t>(cached);
    s.page_table = table;
    batch.seqs.push_back(s);
  }
  std::vector<SampleRequest> requests(static_cast<size_t>(sequences));
  for (auto& r : requests) r.params = &greedy;
  std::vector<double> times;
  for (int rep = 0; rep < 4; ++rep) {
    const bool profiled = profile_first && rep == 1;
    if (profiled) check_cuda(cudaProfilerStart(), "cudaProfilerStart");
    const auto start = std::chrono::steady_clock::now();
    const DeviceTensor logits = model.forward(batch, cache);
    backend.sample(logits, requests);
    if (rep > 0) times.push_back(seconds_since(start));
    if (profiled) check_cuda(cudaProfilerStop(), "cudaProfilerStop");
  }
  return median(times);
}

double time_check_steps(LlamaModel& model, CudaBackend& backend, KvCacheStorage& cache,
                        int64_t tokens, int64_t pages_per_seq, int64_t context, int steps,
                        bool profile_first) {
  std::vector<int32_t> page_table;
  for (int64_t i = 0; i < pages_per_seq; ++i) page_table.push_back(static_cast<int32_t>(i));
  std::vector<int32_t> feed = tokens_for(tokens, model.config().vocab_size, 5);
  SamplingParams greedy;
  std::vector<SampleRequest> requests(static_cast<size_t>(tokens));
  for (auto& r : requests) r.params = &greedy;
  std::chrono::steady_clock::time_point start;
  int64_t abandoned_before = 0;
  for (int step = 0; step < kDecodeWarmSteps + steps; ++step) {
    // The previous step's sample() waited for the device(s).
    if (step == kDecodeWarmSteps) {
      start = std::chrono::steady_clock::now();
      abandoned_before = backend.graph_stats().abandoned;
    }
    BatchDesc desc;
    SequenceSlice s;
    s.tokens = feed;
    s.start_pos = static_cast<int32_t>(context + step);
    s.page_table = page_table;
    s.all_logits = tokens > 1;
    desc.seqs.push_back(s);
    const bool profile = profile_first && step == kDecodeWarmSteps;
    if (profile) check_cuda(cudaProfilerStart(), "starting the profiler");
    DeviceTensor logits = model.forward(desc, cache);
    feed[0] = backend.sample(logits, requests)[0];
    if (profile) check_cuda(cudaProfilerStop(), "stopping the profiler");
  }
  const double seconds = seconds_since(start);
  warn_if_captures_abandoned(backend, abandoned_before, "check of tokens", tokens, steps);
  return seconds;
}

}  // namespace hearth::cuda::bench
