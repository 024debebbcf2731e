// The CUDA backend's setup, memory, batch preparation, graph capture and reads. Ops are in
// cuda_ops.cpp, weight streaming in cuda_upload.cpp, sampling in cuda_sampling.cpp.
#include "engine/backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_quant_linear.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"

namespace hearth {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

CudaDeviceInfo cuda_device_info(int device) {
  const int count = cuda_device_count();
  if (device < 0 || device >= count) {
    fail(ErrorCode::kInvalidArgument, "CUDA device " + std::to_string(device) +
                                          " does not exist (" + std::to_string(count) +
                                          " device(s) found)");
  }
  cuda::DeviceGuard guard(device);
  cudaDeviceProp prop{};
  cuda::check_cuda(cudaGetDeviceProperties(&prop, device), "reading the device properties");
  CudaDeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  int mem_clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess) {
    info.memory_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  }
  cudaGetLastError();
  cuda::check_cuda(cudaMemGetInfo(&info.free_bytes, &info.total_bytes), "reading free memory");
  return info;
}

size_t cuda_free_memory(int device) {
  return cuda_device_info(device).free_bytes;
}

int64_t cuda_decode_bucket(int64_t sequences) {
  if (sequences <= 1) return 1;
  if (sequences <= 2) return 2;
  if (sequences <= 4) return 4;
  if (sequences > 256) return sequences;
  return (sequences + 7) / 8 * 8;
}

size_t cuda_workspace_bytes(int64_t max_batch_tokens, int64_t max_logit_rows, int64_t vocab,
                            int64_t num_heads, int64_t head_dim, int64_t max_out_features) {
  const size_t cublas = size_t(32) << 20;
  const size_t gemv = size_t(3) * cuda::kQuantPartialBytesPerMatrix;  // split-K partials
  const size_t rows = static_cast<size_t>(std::max<int64_t>(max_logit_rows, 1));
  const size_t decode =
      kernels::decode_partial_floats(static_cast<int>(rows), static_cast<int>(num_heads),
                                     static_cast<int>(head_dim)) *
      sizeof(float);
  const size_t meta = static_cast<size_t>(max_batch_tokens) * 3 * 4 + (size_t(1) << 20);
  const size_t sampling = rows * static_cast<size_t>(vocab) * 16 +
                          kernels::sort_rows_scratch_bytes(static_cast<int64_t>(rows), vocab);
  const size_t staging = size_t(2) * (size_t(32) << 20);
  (void)max_out_features;
  return cublas + gemv + decode + meta + sampling + staging;
}

std::unique_ptr<Backend> create_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

namespace cuda {

kernels::Elem to_elem(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return kernels::Elem::kF16;
    case DType::kBF16:
      return kernels::Elem::kBF16;
    case DType::kF32:
      return kernels::Elem::kF32;
    default:
      fail(ErrorCode::kUnsupported, "the CUDA backend handles F32, F16 and BF16 tensors, not " +
                                        std::string(dtype_name(dtype)));
  }
}

CudaBackend::CudaBackend(const CudaBackendOptions& options) : options_(options) {
  if (options.activation_dtype != DType::kF16 && options.activation_dtype != DType::kBF16) {
    fail(ErrorCode::kInvalidArgument, "the CUDA backend runs fp16 or bf16 activations");
  }
  if (cuda_device_count() == 0) fail(ErrorCode::kBackend, "no CUDA device is available");
  info_ = cuda_device_info(options.device);
  if (info_.compute_major < 8) {
    fail(ErrorCode::kUnsupported, info_.name + " (compute capability " +
                                      std::to_string(info_.compute_major) + "." +
                                      std::to_string(info_.compute_minor) +
                                      ") is too old: Hearth's kernels need sm_80 or newer");
  }
  name_ = "cuda:" + std::to_string(options.device) + " " + info_.name;
  try {
    check_cuda(cudaSetDevice(options.device), "selecting the device");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
    check_cublas(cuda::cublas().Create(&cublas_), "creating the cuBLAS handle");
    check_cublas(cuda::cublas().SetStream(cublas_, stream_), "setting the cuBLAS stream");
    cublas_workspace_ = DeviceBuffer(options.cublas_workspace_bytes, MemoryCategory::kWorkspace,
                                     counters_, "the cuBLAS workspace");
    check_cublas(
        cuda::cublas().SetWorkspace(cublas_, cublas_workspace_.get(), cublas_workspace_.size()),
        "setting the cuBLAS workspace");
    check_cuda(kernels::prepare_device(), "setting kernel attributes");
    // Asked once here, outside any graph capture (a probe launch).
    options_.quant_mma_wgmma = options_.quant_mma_wgmma && kernels::wgmma_supported();
    options_.attention_warpgroup_mma =
        options_.attention_warpgroup_mma && kernels::wgmma_supported();
    for (auto& e : meta_copied_) {
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    }
    for (auto& e : upload_done_) {
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    }
    check_cuda(cudaEventCreateWithFlags(&handoff_event_, cudaEventDisableTiming),
               "creating an event");
    launch_ = {stream_, options.pdl && info_.compute_major >= 9, info_.multiprocessors};
    ensure_meta_capacity(1024, 64, 64, 4096);
    // Counters for split-K reductions start at zero and every kernel leaves them at zero.
    ensure_gemv_scratch(0, 65536);
  } catch (...) {
    release();
    throw;
  }
}

CudaBackend::~CudaBackend() {
  release();
}

void CudaBackend::release() noexcept {
  if (stream_) cudaStreamSynchronize(stream_);
  dequant_slots_.release();
  for (auto& [key, graph] : graphs_) cudaGraphExecDestroy(graph.exec);
  graphs_.clear();
  if (cublas_) cuda::cublas().Destroy(cublas_);
  cublas_ = nullptr;
  for (auto& e : meta_copied_) {
    if (e) cudaEventDestroy(e);
    e = nullptr;
  }
  for (auto& e : upload_done_) {
    if (e) cudaEventDestroy(e);
    e = nullptr;
  }
  if (handoff_event_) cudaEventDestroy(handoff_event_);
  handoff_event_ = nullptr;
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
  cudaGetLastError();
}

void CudaBackend::set_pdl(bool on) {
  launch_.pdl = on && info_.compute_major >= 9;
  invalidate_graphs();
}

void CudaBackend::set_cuda_graphs(bool on) {
  options_.cuda_graphs = on;
  invalidate_graphs();
}

void CudaBackend::invalidate_graphs() {
  ++*epoch_;
}

void CudaBackend::flush_queued() {
  DeviceGuard guard(options_.device);
  flush_linears();
}

void CudaBackend::abandon_queued() {
  drop_pending();
}

void CudaBackend::synchronize() {
  check_cuda(cudaStreamSynchronize(stream_), "waiting for the GPU");
}

DeviceBuffer CudaBackend::alloc_workspace(size_t bytes, const std::string& what) {
  DeviceGuard guard(options_.device);
  return DeviceBuffer(bytes, MemoryCategory::kWorkspace, counters_, what);
}

bool CudaBackend::capturing() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream_, &status) != cudaSuccess) return false;
  return status == cudaStreamCaptureStatusActive;
}

void CudaBackend::grow_guard() const {
  if (capturing()) throw CaptureInvalidated();
}

void CudaBackend::ensure_gemv_scratch(size_t partial_floats, size_t counters) {
  if (gemv_partials_.size() < partial_floats * sizeof(float)) {
    grow_guard();
    const size_t bytes = std::max(partial_floats * sizeof(float), gemv_partials_.size() * 3 / 2);
    gemv_partials_.reset();
    gemv_partials_ =
        DeviceBuffer(bytes, MemoryCategory::kWorkspace, counters_, "GEMV split-K partial sums");
    invalidate_graphs();
  }
  if (gemv_counters_.size() < counters * sizeof(int32_t)) {
    grow_guard();
    gemv_counters_.reset();
    gemv_counters_ = DeviceBuffer(counters * sizeof(int32_t), MemoryCategory::kWorkspace, counters_,
                                  "GEMV split-K counters");
    check_cuda(cudaMemsetAsync(gemv_counters_.get(), 0, gemv_counters_.size(), stream_),
               "clearing GEMV counters");
    invalidate_graphs();
  }
}

void CudaBackend::grow_workspace(DeviceBuffer& buffer, size_t bytes, const char* what) {
  if (buffer.size() >= bytes) return;
  grow_guard();
  buffer.reset();  // first, so the old and new buffers are never held together
  buffer = DeviceBuffer(bytes, MemoryCategory::kWorkspace, counters_, what);
  invalidate_graphs();
}

void CudaBackend::ensure_decode_scratch(size_t partial_floats, size_t counters) {
  grow_workspace(decode_partials_, partial_floats * sizeof(float),
                 "decode attention partial results");
  if (decode_counters_.size() < counters * sizeof(int32_t)) {
    grow_guard();
    decode_counters_.reset();
    decode_counters_ = DeviceBuffer(counters * sizeof(int32_t), MemoryCategory::kWorkspace,
                                    counters_, "decode attention counters");
    check_cuda(cudaMemsetAsync(decode_counters_.get(), 0, decode_counters_.size(), stream_),
               "clearing decode counters");
    invalidate_graphs();
  }
}

void CudaBackend::ensure_meta_capacity(int64_t tokens, int64_t seqs, int64_t logit_rows,
                                       int64_t pages) {
  if (meta_device_ && tokens <= meta_.tokens && seqs <= meta_.seqs &&
      logit_rows <= meta_.logit_rows && pages <= meta_.pages) {
    return;
  }
  // Wait for copies out of the old slots before they go.
  check_cuda(cudaStreamSynchronize(stream_), "waiting for the GPU");
  auto grown = [&](int64_t need, int64_t have) {
    if (need <= have) return std::max<int64_t>(have, 1);
    return std::max<int64_t>(need, meta_device_ ? have * 2 : need);
  };
  MetaLayout m;
  m.tokens = grown(tokens, meta_.tokens);
  m.seqs = grown(seqs, meta_.seqs);
  m.logit_rows = grown(logit_rows, meta_.logit_rows);
  m.pages = grown(pages, meta_.pages);
  auto align = [](size_t n) { return (n + 31) / 32 * 32; };  // 128-byte regions
  size_t at = 0;
  m.tokens_at = at;
  at += align(m.tokens);
  m.positions_at = at;
  at += align(m.tokens);
  m.token_seq_at = at;
  at += align(m.tokens);
  m.q_start_at = at;
  at += align(m.seqs + 1);
  m.kv_len_at = at;
  at += align(m.seqs);
  m.seq_pages_at = at;
  at += align(m.seqs);
  m.logit_rows_at = at;
  at += align(m.logit_rows);
  m.pages_at = at;
  at += align(m.pages);
  m.total = at;
  meta_device_.reset();
  meta_device_ = DeviceBuffer(m.total * sizeof(int32_t), MemoryCategory::kWorkspace, counters_,
                              "batch layout");
  for (auto& slot : meta_host_) slot = PinnedBuffer(m.total * sizeof(int32_t));
  const size_t adapter_bytes = static_cast<size_t>(m.tokens * kMaxLoraSlots) * sizeof(float);
  adapter_rows_device_.reset();
  adapter_rows_device_ = DeviceBuffer(adapter_bytes, MemoryCategory::kWorkspace, counters_,
                                      "adapter weights of the batch's rows");
  for (auto& slot : adapter_rows_host_) slot = PinnedBuffer(adapter_bytes);
  meta_ = m;
  invalidate_graphs();
}

kernels::BatchView CudaBackend::batch_view() const {
  const auto* base = meta_device_.as<int32_t>();
  kernels::BatchView b;
  b.tokens = base + meta_.tokens_at;
  b.positions = base + meta_.positions_at;
  b.token_seq = base + meta_.token_seq_at;
  b.seq_q_start = base + meta_.q_start_at;
  b.seq_kv_len = base + meta_.kv_len_at;
  b.seq_pages = base + meta_.seq_pages_at;
  b.pages = base + meta_.pages_at;
  b.logit_rows = base + meta_.logit_rows_at;
  b.num_tokens = static_cast<int32_t>(prepared_.padded_tokens);
  b.num_seqs = static_cast<int32_t>(prepared_.padded_seqs);
  b.num_logit_rows = static_cast<int32_t>(prepared_.padded_logit_rows);
  return b;
}

// ---- memory ----

std::unique_ptr<BackendWeight> CudaBackend::upload(const HostTensor& tensor) {
  DeviceGuard guard(options_.device);
  if (tensor.dtype != DType::kF32 && tensor.dtype != DType::kF16 && tensor.dtype != DType::kBF16) {
    fail(ErrorCode::kUnsupported, "cuda backend: tensors must be F32, F16 or BF16, got " +
                                      std::string(dtype_name(tensor.dtype)));
  }
  if (tensor.shape.empty() || tensor.shape.size() > 2) {
    fail(ErrorCode::kInvalidArgument,
         "cuda backend: only 1-D and 2-D tensors are uploaded, got " + tensor.shape_string());
  }
  auto w = std::make_unique<CudaTensorWeight>(epoch_);
  // 1-D tensors (norm weights, rope tables) stay in f32; tables in the activation dtype.
  w->dtype = tensor.shape.size() == 1 ? DType::kF32 : options_.activation_dtype;
  w->shape = tensor.shape;
  const int64_t count = tensor.numel();
  w->buffer =
      DeviceBuffer(static_cast<size_t>(count) * dtype_size(w->dtype), MemoryCategory::kWeights,
                   counters_, "a " + tensor.shape_string() + " tensor");
  stream_to_device(tensor.data, tensor.dtype, count, w->buffer.get(), w->dtype,
                   "a " + tensor.shape_string() + " tensor");
  return w;
}

DeviceTensor CudaBackend::alloc_activation(int64_t rows, int64_t cols) {
  DeviceGuard guard(options_.device);
  if (rows <= 0 || cols <= 0) {
    fail(ErrorCode::kInvalidArgument,
         "activation of " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  const size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(options_.activation_dtype);
  DeviceBuffer buffer(bytes, MemoryCategory::kActivations, counters_,
                      "activations [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  check_cuda(cudaMemsetAsync(buffer.get(), 0, bytes, stream_), "clearing activations");
  DeviceTensor t{buffer.get(), options_.activation_dtype, rows, cols};
  activations_.push_back(std::move(buffer));
  min_activation_rows_ = std::min(min_activation_rows_, rows);
  return t;
}

CudaKvCache::CudaKvCache(GraphEpoch epoch, const KvCacheSpec& spec, DeviceBuffer pool,
                         DeviceBuffer key_offsets, kernels::Elem elem, int device,
                         cudaStream_t stream)
    : on_destroy_(std::move(epoch)),
      spec_(spec),
      pool_(std::move(pool)),
      key_offsets_(std::move(key_offsets)),
      elem_(elem),
      device_(device),
      stream_(stream) {}

void CudaKvCache::set_key_offsets(std::span<const float> offsets) {
  if (!offsets_keys()) KvCacheStorage::set_key_offsets(offsets);  // throws: nothing to offset
  check_key_offsets(spec_, offsets);
  DeviceGuard guard(device_);
  host_offsets_.assign(offsets.begin(), offsets.end());
  // Ordered after the stream's earlier steps (their keys keep the old offsets) and before its
  // later ones; synchronous, so `offsets` may go once this returns.
  check_cuda(cudaMemcpyAsync(key_offsets_.get(), host_offsets_.data(),
                             host_offsets_.size() * sizeof(float), cudaMemcpyHostToDevice, stream_),
             "sending the key offsets");
  check_cuda(cudaStreamSynchronize(stream_), "waiting for the key offsets");
}

std::vector<float> CudaKvCache::mean_keys(std::span<const int32_t> pages, int64_t begin,
                                          int64_t end) const {
  if (!offsets_keys()) return KvCacheStorage::mean_keys(pages, begin, end);  // throws
  DeviceGuard guard(device_);
  // Whole pages come to the host; the CPU's dequantization reads them (the same bits).
  const KvQuantLayout q = KvQuantLayout::of(spec_);
  const auto page_bytes = static_cast<size_t>(spec_.num_layers * q.layer_page_bytes);
  std::vector<uint8_t> host(page_bytes);
  check_cuda(cudaStreamSynchronize(stream_), "waiting for the GPU");
  return mean_stored_keys(spec_, pages, begin, end, host_offsets_, [&](int32_t page) {
    check_cuda(cudaMemcpy(host.data(), static_cast<const char*>(pool_.get()) + page * page_bytes,
                          page_bytes, cudaMemcpyDeviceToHost),
               "reading a cache page");
    return host.data();
  });
}

void CudaKvCache::copy_positions(int32_t from, int32_t to, int64_t count) {
  if (from < 0 || to < 0 || from >= spec_.num_pages || to >= spec_.num_pages || count < 0 ||
      count > spec_.page_size) {
    fail(ErrorCode::kInvalidArgument, "copy_positions: page or count out of range");
  }
  if (from == to || count == 0) return;
  DeviceGuard guard(device_);
  auto* pool = static_cast<char*>(pool_.get());
  // `rows` rows of `width` bytes, `pitch` apart, starting `offset` bytes into both pages.
  auto copy_rows = [&](int64_t page_bytes, int64_t offset, int64_t rows, int64_t pitch,
                       int64_t width) {
    check_cuda(cudaMemcpy2DAsync(pool + to * page_bytes + offset, static_cast<size_t>(pitch),
                                 pool + from * page_bytes + offset, static_cast<size_t>(pitch),
                                 static_cast<size_t>(width), static_cast<size_t>(rows),
                                 cudaMemcpyDeviceToDevice, stream_),
               "copying cache positions");
  };
  const int64_t heads = spec_.num_kv_heads;
  if (!is_quantized(spec_.type)) {
    // A page is [layer][keys, values][kv head][slot][dim]: every (layer, kind, head) row starts
    // with the slots to copy, one pitch apart.
    const auto esize = static_cast<int64_t>(kernels::elem_size(elem_));
    const int64_t pitch = spec_.page_size * spec_.head_dim * esize;
    copy_rows(spec_.num_layers * 2 * heads * pitch, 0, spec_.num_layers * 2 * heads, pitch,
              count * spec_.head_dim * esize);
    return;
  }
  // Quantized (engine/backend/kv_cache_quant.h): per layer, [kv head][slot] rows of key codes,
  // value codes, key scales and value scales; the codes of keys and values lie back to back, and
  // so do their scales.
  const KvQuantLayout q = KvQuantLayout::of(spec_);
  const int64_t page_bytes = spec_.num_layers * q.layer_page_bytes;
  const int64_t code_pitch = spec_.page_size * q.row_bytes;
  const int64_t scale_pitch = spec_.page_size * q.scales_per_row * 2;
  HEARTH_CHECK(q.v_codes == heads * code_pitch && q.v_scales - q.k_scales == heads * scale_pitch,
               "copy_positions: unexpected quantized cache layout");
  for (int64_t layer = 0; layer < spec_.num_layers; ++layer) {
    const int64_t base = layer * q.layer_page_bytes;
    copy_rows(page_bytes, base, 2 * heads, code_pitch, count * q.row_bytes);
    copy_rows(page_bytes, base + q.k_scales, 2 * heads, scale_pitch, count * q.scales_per_row * 2);
  }
  // Slot 0 is copied, so each layer's fp16 first keys are too (they matter where it is
  // position 0 of a sequence).
  copy_rows(page_bytes, q.first_keys, spec_.num_layers, q.layer_page_bytes,
            heads * spec_.head_dim * 2);
}

kernels::KvLayerView CudaKvCache::layer(int64_t index) const {
  kernels::KvLayerView v;
  v.page_size = static_cast<int32_t>(spec_.page_size);
  v.num_kv_heads = static_cast<int32_t>(spec_.num_kv_heads);
  v.head_dim = static_cast<int32_t>(spec_.head_dim);
  v.num_pages = static_cast<int32_t>(spec_.num_pages);
  if (is_quantized(spec_.type)) {  // byte offsets (engine/backend/kv_cache_quant.h)
    const KvQuantLayout q = KvQuantLayout::of(spec_);
    v.bits = q.bits;
    v.base = static_cast<char*>(pool_.get()) + index * q.layer_page_bytes;
    v.page_stride = spec_.num_layers * q.layer_page_bytes;
    v.v_offset = q.v_codes;
    v.k_scales = q.k_scales;
    v.v_scales = q.v_scales;
    v.first_keys = q.first_keys;
    v.key_offsets = key_offsets_.as<float>() + index * spec_.num_kv_heads * spec_.head_dim;
    return v;
  }
  const int64_t half = spec_.num_kv_heads * spec_.page_size * spec_.head_dim;
  v.base = static_cast<char*>(pool_.get()) +
           index * 2 * half * static_cast<int64_t>(kernels::elem_size(elem_));
  v.page_stride = spec_.num_layers * 2 * half;
  v.v_offset = half;
  return v;
}

std::unique_ptr<KvCacheStorage> CudaBackend::create_kv_cache(const KvCacheSpec& spec) {
  DeviceGuard guard(options_.device);
  if (spec.num_layers <= 0 || spec.num_kv_heads <= 0 || spec.head_dim <= 0 || spec.page_size <= 0 ||
      spec.num_pages <= 0 || spec.num_pages > (int64_t(1) << 30)) {
    fail(ErrorCode::kInvalidArgument, "invalid KV cache spec");
  }
  if (spec.head_dim % 8 != 0) {
    fail(ErrorCode::kUnsupported, "the CUDA backend needs a head_dim that is a multiple of 8");
  }
  // 16-bit in the activation dtype unless a quantized type is asked (the CPU backend likewise
  // keeps f32).
  KvCacheSpec s = spec;
  require_kv_quant_supported(s.type, s.head_dim);
  if (!is_quantized(s.type)) s.type = KvCacheType::kF16;
  DeviceBuffer pool(s.bytes(), MemoryCategory::kKvCache, counters_,
                    "a KV cache of " + std::to_string(s.num_pages) + " pages of " +
                        std::to_string(s.page_size) + " tokens");
  check_cuda(cudaMemsetAsync(pool.get(), 0, pool.size(), stream_), "clearing the KV cache");
  DeviceBuffer key_offsets;
  if (is_quantized(s.type)) {
    key_offsets = DeviceBuffer(
        static_cast<size_t>(s.num_layers * s.num_kv_heads * s.head_dim) * sizeof(float),
        MemoryCategory::kKvCache, counters_, "the KV cache's key offsets");
    check_cuda(cudaMemsetAsync(key_offsets.get(), 0, key_offsets.size(), stream_),
               "clearing the key offsets");
  }
  kv_page_size_ = s.page_size;
  return std::make_unique<CudaKvCache>(epoch_, s, std::move(pool), std::move(key_offsets),
                                       to_elem(options_.activation_dtype), options_.device,
                                       stream_);
}

MemoryUsage CudaBackend::memory_usage() const {
  MemoryUsage m;
  const MemoryCounters& c = *counters_;
  m.weights = c[MemoryCategory::kWeights];
  m.kv_cache = c[MemoryCategory::kKvCache];
  m.activations = c[MemoryCategory::kActivations];
  m.workspace = c[MemoryCategory::kWorkspace];
  DeviceGuard guard(options_.device);
  if (cudaMemGetInfo(&m.device_free, &m.device_total) != cudaSuccess) cudaGetLastError();
  return m;
}

// ---- one forward pass ----

PreparedBatch CudaBackend::prepare_batch(const BatchDesc& batch) {
  DeviceGuard guard(options_.device);
  flush_linears();
  if (batch.seqs.empty()) fail(ErrorCode::kInvalidArgument, "empty batch");
  PreparedLayout p;
  p.seqs = static_cast<int64_t>(batch.seqs.size());
  p.tokens = batch.total_tokens();
  p.logit_rows = batch.logit_rows();
  p.decode = batch.is_decode();
  if (p.tokens <= 0) fail(ErrorCode::kInvalidArgument, "a batch without tokens");
  for (const SequenceSlice& seq : batch.seqs) {
    for (size_t i = 0; i < seq.adapter_weights.size() && i < size_t{kMaxLoraSlots}; ++i) {
      if (seq.adapter_weights[i] != 0.0f) p.active_slots |= 1u << i;
    }
  }
  if (!p.decode && options_.check_slice_max_tokens > 0 && p.tokens <= kMaxCheckRows) {
    p.check = std::all_of(batch.seqs.begin(), batch.seqs.end(), [&](const SequenceSlice& s) {
      const auto n = static_cast<int64_t>(s.tokens.size());
      return n == 1 || (s.all_logits && n <= options_.check_slice_max_tokens);
    });
    if (p.check) {
      // One decode row per token: the layout below makes each token a sequence of its own.
      p.decode = true;
      p.one_sequence = batch.seqs.size() == 1;
      p.seqs = p.tokens;
    }
  }
  int64_t pages = 0;
  for (const auto& s : batch.seqs) {
    if (s.start_pos < 0) fail(ErrorCode::kInvalidArgument, "negative start position");
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    p.max_q_len = std::max(p.max_q_len, n);
    p.max_kv_len = std::max(p.max_kv_len, s.start_pos + n);
    if (kv_page_size_ > 0 &&
        static_cast<int64_t>(s.page_table.size()) * kv_page_size_ < s.start_pos + n) {
      fail(ErrorCode::kInvalidArgument, "page table of " + std::to_string(s.page_table.size()) +
                                            " pages does not cover " +
                                            std::to_string(s.start_pos + n) + " positions");
    }
    for (int32_t page : s.page_table) {
      if (page < 0) fail(ErrorCode::kInvalidArgument, "negative page id");
      p.max_page = std::max<int64_t>(p.max_page, page);
    }
    pages += static_cast<int64_t>(s.page_table.size());
  }
  if (p.max_kv_len >= (int64_t(1) << 31)) fail(ErrorCode::kInvalidArgument, "sequence too long");
  if (p.decode && options_.cuda_graphs && p.seqs <= 256) {
    p.padded_seqs = std::max(p.seqs, std::min(cuda_decode_bucket(p.seqs), min_activation_rows_));
    // Check batches record other launches (kv_store, rope) and block sizes: keys of their own;
    // so do steps with other adapter slots in use (a folded LoRA reads only their columns).
    p.graph_key = p.padded_seqs + (p.check ? (p.one_sequence ? 2 : 1) << 20 : 0) +
                  (static_cast<int64_t>(p.active_slots) << 24);
  } else {
    p.padded_seqs = p.seqs;
  }
  p.padded_tokens = p.decode ? p.padded_seqs : p.tokens;
  p.padded_logit_rows = p.decode ? p.padded_seqs : p.logit_rows;
  ensure_meta_capacity(p.padded_tokens, p.padded_seqs, p.padded_logit_rows, pages);

  // The slot's previous copy has normally long finished; wait in case the host ran ahead.
  meta_slot_ ^= 1;
  check_cuda(cudaEventSynchronize(meta_copied_[meta_slot_]), "waiting for a metadata copy");
  auto* h = meta_host_[meta_slot_].as<int32_t>();
  int32_t* tokens = h + meta_.tokens_at;
  int32_t* positions = h + meta_.positions_at;
  int32_t* token_seq = h + meta_.token_seq_at;
  int32_t* q_start = h + meta_.q_start_at;
  int32_t* kv_len = h + meta_.kv_len_at;
  int32_t* seq_pages = h + meta_.seq_pages_at;
  int32_t* logit_rows = h + meta_.logit_rows_at;
  int32_t* page_ids = h + meta_.pages_at;
  int32_t row = 0, page_at = 0, logit = 0;
  int32_t layout_seq = 0;  // in a check batch every token is a sequence of the layout
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceSlice& seq = batch.seqs[s];
    const auto n = static_cast<int32_t>(seq.tokens.size());
    for (int32_t i = 0; i < (p.check ? n : 1); ++i) {
      q_start[layout_seq + i] = row + i;
      kv_len[layout_seq + i] = seq.start_pos + (p.check ? i + 1 : n);
      seq_pages[layout_seq + i] = page_at;
    }
    std::memcpy(page_ids + page_at, seq.page_table.data(), seq.page_table.size() * 4);
    page_at += static_cast<int32_t>(seq.page_table.size());
    for (int32_t i = 0; i < n; ++i) {
      tokens[row + i] = seq.tokens[i];
      positions[row + i] = seq.start_pos + i;
      token_seq[row + i] = layout_seq + (p.check ? i : 0);
    }
    layout_seq += p.check ? n : 1;
    if (seq.all_logits) {
      for (int32_t i = 0; i < n; ++i) logit_rows[logit++] = row + i;
    } else if (n > 0) {
      logit_rows[logit++] = row + n - 1;
    }
    row += n;
  }
  for (int64_t r = row; r < p.padded_tokens; ++r) {
    tokens[r] = 0;
    positions[r] = -1;
    token_seq[r] = -1;
  }
  for (int64_t s = p.seqs; s < p.padded_seqs; ++s) {
    q_start[s] = row;
    kv_len[s] = 0;
    seq_pages[s] = 0;
  }
  q_start[p.padded_seqs] = row;
  for (int64_t l = logit; l < p.padded_logit_rows; ++l) logit_rows[l] = -1;

  const size_t bytes = (meta_.pages_at + static_cast<size_t>(pages)) * sizeof(int32_t);
  check_cuda(cudaMemcpyAsync(meta_device_.get(), h, bytes, cudaMemcpyHostToDevice, stream_),
             "sending the batch layout");
  p.adapters = batch.uses_adapters();
  if (p.adapters) {
    // Each row's weight for every adapter slot (padding rows weigh nothing).
    auto* w = adapter_rows_host_[meta_slot_].as<float>();
    std::fill(w, w + p.padded_tokens * kMaxLoraSlots, 0.0f);
    int64_t r = 0;
    for (const SequenceSlice& seq : batch.seqs) {
      HEARTH_CHECK(seq.adapter_weights.size() <= static_cast<size_t>(kMaxLoraSlots),
                   "prepare_batch: more adapter weights than slots");
      for (size_t i = 0; i < seq.tokens.size(); ++i, ++r) {
        std::copy(seq.adapter_weights.begin(), seq.adapter_weights.end(), w + r * kMaxLoraSlots);
      }
    }
    check_cuda(cudaMemcpyAsync(adapter_rows_device_.get(), w,
                               static_cast<size_t>(p.padded_tokens * kMaxLoraSlots) * sizeof(float),
                               cudaMemcpyHostToDevice, stream_),
               "sending the rows' adapter weights");
  }
  check_cuda(cudaEventRecord(meta_copied_[meta_slot_], stream_), "recording an event");
  prepared_ = p;

  PreparedBatch out;
  out.tokens = p.padded_tokens;
  out.logit_rows = p.padded_logit_rows;
  out.graph_key = p.graph_key;
  return out;
}

void CudaBackend::drop_stale_graphs() {
  if (graphs_epoch_ == epoch_->load()) return;
  check_cuda(cudaStreamSynchronize(stream_), "waiting for the GPU");
  for (auto& [key, graph] : graphs_) cudaGraphExecDestroy(graph.exec);
  graphs_.clear();
  warmed_keys_.clear();
  graphs_epoch_ = epoch_->load();
}

void CudaBackend::run(const std::function<void()>& record, std::optional<int64_t> graph_key) {
  DeviceGuard guard(options_.device);
  if (!graph_key || !options_.cuda_graphs) {
    record();
    flush_linears();
    return;
  }
  drop_stale_graphs();
  if (auto it = graphs_.find(*graph_key); it != graphs_.end()) {
    check_cuda(cudaGraphLaunch(it->second.exec, stream_), "launching a CUDA graph");
    return;
  }
  const GraphStepScope graph_step(*this);
  // The first step of a key runs directly: scratch buffers get their final sizes then (and
  // graphs of other keys are dropped if that moved anything they use).
  if (!warmed_keys_.count(*graph_key)) {
    record();
    flush_linears();
    drop_stale_graphs();
    warmed_keys_.insert(*graph_key);
    return;
  }
  check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
             "starting graph capture");
  try {
    record();
    flush_linears();
  } catch (const CaptureInvalidated&) {
    ++graph_stats_.abandoned;
    drop_pending();
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    record();  // runs directly and grows what it needs
    flush_linears();
    drop_stale_graphs();
    warmed_keys_.insert(*graph_key);
    return;
  } catch (...) {
    drop_pending();
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamEndCapture(stream_, &graph), "ending graph capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check_cuda(status, "instantiating a CUDA graph");
  graphs_[*graph_key] = Graph{exec};
  ++graph_stats_.captured;
  check_cuda(cudaGraphLaunch(exec, stream_), "launching a CUDA graph");
}

// ---- results ----

void CudaBackend::read_into(DeviceTensor t, int64_t rows, std::span<float> out) {
  DeviceGuard guard(options_.device);
  flush_linears();
  HEARTH_CHECK(t.data != nullptr && rows >= 0 && rows <= t.rows, "read: bad rows");
  const size_t count = static_cast<size_t>(rows * t.cols);
  HEARTH_CHECK(out.size() == count, "read: the buffer does not match the rows");
  const size_t bytes = count * sizeof(float);
  if (count == 0) return;
  // fp16/bf16 become f32 on the GPU: converting millions of values on the host one by one
  // costs far more than moving twice the bytes.
  const void* src = t.data;
  if (t.dtype != DType::kF32) {
    if (read_device_.size() < bytes) {
      read_device_ = DeviceBuffer(std::max(bytes, read_device_.size() * 2),
                                  MemoryCategory::kWorkspace, counters_, "a read buffer");
    }
    check_launch(kernels::convert(launch_plain(), to_elem(t.dtype), t.data, kernels::Elem::kF32,
                                  read_device_.get(), static_cast<int64_t>(count)),
                 "converting a tensor for reading");
    src = read_device_.get();
  }
  std::memcpy(out.data(), download(src, bytes), bytes);
}

const void* CudaBackend::download(const void* src, size_t bytes) {
  if (read_host_.size() < bytes) read_host_ = PinnedBuffer(std::max(bytes, read_host_.size() * 2));
  check_cuda(cudaMemcpyAsync(read_host_.get(), src, bytes, cudaMemcpyDeviceToHost, stream_),
             "reading from the GPU");
  check_cuda(cudaStreamSynchronize(stream_), "waiting for the GPU");
  return read_host_.get();
}

double CudaBackend::squared_distance(DeviceTensor a, DeviceTensor b, int64_t rows) {
  DeviceGuard guard(options_.device);
  flush_linears();
  HEARTH_CHECK(a.data != nullptr && b.data != nullptr && a.cols == b.cols && a.dtype == b.dtype &&
                   rows >= 0 && rows <= a.rows && rows <= b.rows,
               "squared_distance: shapes");
  const int64_t n = rows * a.cols;
  if (n == 0) return 0.0;
  // Enough blocks to fill the GPU a few times over; a fixed count for a given n.
  const int blocks = static_cast<int>(std::min<int64_t>(
      {kernels::kSquaredDistanceMaxBlocks, 4 * int64_t(info_.multiprocessors), (n + 255) / 256}));
  const size_t bytes = size_t(blocks) * sizeof(double);
  if (distance_partials_.size() < bytes) {
    distance_partials_ = DeviceBuffer(size_t(kernels::kSquaredDistanceMaxBlocks) * sizeof(double),
                                      MemoryCategory::kWorkspace, counters_, "distance partials");
  }
  check_launch(kernels::squared_distance(launch_plain(), to_elem(a.dtype), a.data, b.data, n,
                                         distance_partials_.as<double>(), blocks),
               "squared_distance");
  const auto* partial = static_cast<const double*>(download(distance_partials_.get(), bytes));
  double sum = 0.0;
  for (int i = 0; i < blocks; ++i) sum += partial[i];  // block order: deterministic
  return sum;
}

}  // namespace cuda
}  // namespace hearth
