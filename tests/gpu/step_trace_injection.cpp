// A CUPTI tracer injected into any CUDA program (CUDA_INJECTION64_PATH=libhearth_step_trace.so):
// it records the start and end of every kernel, graph nodes included, at real concurrency, and
// writes those that ran between the program's first cudaProfilerStart and the next
// cudaProfilerStop (quant_bench --profile-step: one decode step) to the CSV file named by
// HEARTH_STEP_TRACE, in the columns tests/gpu/timeline_summary.py reads. For machines without
// Nsight Systems; it measures what `nsys --cuda-graph-trace=node` would.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelRecord {
  uint64_t start, end;
  unsigned grid[3], block[3];
  std::string name;
};

std::mutex g_mutex;
std::vector<KernelRecord> g_kernels;
std::atomic<uint64_t> g_window_start{0}, g_window_end{0};
CUpti_SubscriberHandle g_subscriber;

constexpr size_t kBufferBytes = 8u << 20;

std::string demangled(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    g_kernels.push_back({k->start,
                         k->end,
                         {unsigned(k->gridX), unsigned(k->gridY), unsigned(k->gridZ)},
                         {unsigned(k->blockX), unsigned(k->blockY), unsigned(k->blockZ)},
                         demangled(k->name)});
  }
  std::free(buffer);
}

std::atomic<bool> g_written{false};

void write_trace() {
  cuptiActivityFlushAll(1);
  const char* path = std::getenv("HEARTH_STEP_TRACE");
  FILE* f = std::fopen(path ? path : "step_trace.csv", "w");
  if (!f) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::sort(g_kernels.begin(), g_kernels.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start < b.start; });
  const uint64_t from = g_window_start, to = g_window_end ? g_window_end.load() : UINT64_MAX;
  std::fprintf(f,
               "\"Start (ns)\",\"Duration (ns)\",\"GrdX\",\"GrdY\",\"GrdZ\",\"BlkX\","
               "\"BlkY\",\"BlkZ\",\"Name\"\n");
  for (const KernelRecord& k : g_kernels) {
    if (k.start < from || k.end > to) continue;
    std::string name = k.name;
    std::replace(name.begin(), name.end(), '"', '\'');
    std::fprintf(f, "%llu,%llu,%u,%u,%u,%u,%u,%u,\"%s\"\n", (unsigned long long)k.start,
                 (unsigned long long)(k.end - k.start), k.grid[0], k.grid[1], k.grid[2], k.block[0],
                 k.block[1], k.block[2], name.c_str());
  }
  std::fclose(f);
}

// The profiler window: its start after cudaProfilerStart returns, its end when Stop is called.
void CUPTIAPI on_runtime_call(void*, CUpti_CallbackDomain, CUpti_CallbackId id, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 &&
      info->callbackSite == CUPTI_API_EXIT) {
    uint64_t none = 0;
    g_window_start.compare_exchange_strong(none, now);
  } else if (id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000 && g_window_start != 0) {
    if (info->callbackSite == CUPTI_API_ENTER) {
      uint64_t none = 0;
      g_window_end.compare_exchange_strong(none, now);
    } else if (!g_written.exchange(true)) {
      write_trace();  // the step's kernels have finished: quant_bench read its tokens back
    }
  }
}

}  // namespace

extern "C" int InitializeInjection(void) {
  if (cuptiSubscribe(&g_subscriber, on_runtime_call, nullptr) != CUPTI_SUCCESS) return 0;
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::atexit([] {
    if (!g_written.exchange(true)) write_trace();
  });
  return 1;
}
