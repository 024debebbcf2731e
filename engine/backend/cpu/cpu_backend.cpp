#include "engine/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "engine/backend/cpu/cpu_backend_impl.h"
#include "engine/backend/cpu/cpu_gemm.h"
#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/error.h"
#include "engine/sampling/speculative_sampling.h"

namespace hearth {

const char* cpu_linears_name(CpuLinears linears) {
  return linears == CpuLinears::kFast ? "fast" : "exact";
}

std::unique_ptr<Backend> create_cpu_backend(int threads, CpuLinears linears) {
  return std::make_unique<cpu::CpuBackend>(threads, linears);
}

namespace cpu {
namespace {

float* f32(DeviceTensor t) {
  return static_cast<float*>(t.data);
}

void check_f32(const DeviceTensor& t, const char* what) {
  HEARTH_CHECK(t.dtype == DType::kF32 && t.data != nullptr, what);
}

// MemAvailable / MemTotal from /proc/meminfo, in bytes (0 when unreadable).
void host_memory(size_t* available, size_t* total) {
  *available = *total = 0;
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") *total = kb * 1024;
    if (key == "MemAvailable:") *available = kb * 1024;
  }
}

}  // namespace

CpuTensorWeight::CpuTensorWeight(HostTensor t) : tensor(std::move(t)) {
  if (tensor.shape.size() == 1 && tensor.dtype != DType::kF32) floats = tensor.to_floats();
}

void CpuTensorWeight::row_as_float(int64_t r, float* out) const {
  const int64_t cols = tensor.shape.size() == 1 ? tensor.shape[0] : tensor.shape[1];
  const auto* base = static_cast<const std::byte*>(tensor.data) +
                     static_cast<size_t>(r * cols) * dtype_size(tensor.dtype);
  convert_to_float(tensor.dtype, base, out, static_cast<size_t>(cols));
}

size_t CpuLinearWeight::device_bytes() const {
  if (int8) return int8->bytes() + bias.size() * sizeof(float);
  if (quantized) {
    return static_cast<size_t>(quantized->bits_per_weight() * in_features * out_features / 8);
  }
  return weight.nbytes() + bias.size() * sizeof(float);
}

CpuKvCache::CpuKvCache(const KvCacheSpec& spec) : spec_(spec) {
  HEARTH_CHECK(spec.type == KvCacheType::kF32 || quantized(),
               "the CPU backend keeps its cache in F32 or quantized");
  const size_t n = static_cast<size_t>(spec.num_layers * spec.num_pages * spec.page_size *
                                       spec.num_kv_heads * spec.head_dim);
  try {
    if (quantized()) {
      layout_ = KvQuantLayout::of(spec);
      quant_.assign(spec.bytes(), uint8_t{0});
    } else {
      keys_.assign(n, 0.0f);
      values_.assign(n, 0.0f);
    }
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::kOutOfMemory,
         "not enough host memory for a KV cache of " + std::to_string(spec.bytes() >> 20) + " MiB");
  }
}

size_t CpuKvCache::offset(int64_t layer, int64_t page, int64_t slot, int64_t head) const {
  return static_cast<size_t>(
      (((layer * spec_.num_pages + page) * spec_.page_size + slot) * spec_.num_kv_heads + head) *
      spec_.head_dim);
}

float* CpuKvCache::key(int64_t layer, int64_t page, int64_t slot, int64_t head) {
  return keys_.data() + offset(layer, page, slot, head);
}

float* CpuKvCache::value(int64_t layer, int64_t page, int64_t slot, int64_t head) {
  return values_.data() + offset(layer, page, slot, head);
}

CpuKvCache::QuantRow CpuKvCache::quant_row(int64_t layer, int64_t page, int64_t slot, int64_t head,
                                           bool is_value) const {
  const int64_t block = (page * spec_.num_layers + layer) * layout_.layer_page_bytes;
  const int64_t row = head * spec_.page_size + slot;
  return {static_cast<size_t>(block + (is_value ? layout_.v_codes : 0) + row * layout_.row_bytes),
          static_cast<size_t>(block + (is_value ? layout_.v_scales : layout_.k_scales) +
                              row * layout_.scales_per_row * 2)};
}

size_t CpuKvCache::first_key_row(int64_t layer, int64_t page, int64_t head) const {
  const int64_t block = (page * spec_.num_layers + layer) * layout_.layer_page_bytes;
  return static_cast<size_t>(block + layout_.first_keys + head * spec_.head_dim * 2);
}

void CpuKvCache::copy_positions(int32_t from, int32_t to, int64_t count) {
  if (from < 0 || to < 0 || from >= spec_.num_pages || to >= spec_.num_pages || count < 0 ||
      count > spec_.page_size) {
    fail(ErrorCode::kInvalidArgument, "copy_positions: page or count out of range");
  }
  if (from == to || count == 0) return;
  for (int64_t layer = 0; layer < spec_.num_layers; ++layer) {
    if (!quantized()) {
      // A layer's page holds [slot][kv head][dim]: the first `count` slots are contiguous.
      const auto n = static_cast<size_t>(count * spec_.num_kv_heads * spec_.head_dim);
      std::copy_n(keys_.data() + offset(layer, from, 0, 0), n,
                  keys_.data() + offset(layer, to, 0, 0));
      std::copy_n(values_.data() + offset(layer, from, 0, 0), n,
                  values_.data() + offset(layer, to, 0, 0));
      continue;
    }
    // Quantized: [kv head][slot] rows of codes, then of scales, for keys and for values.
    for (int64_t head = 0; head < spec_.num_kv_heads; ++head) {
      for (const bool is_value : {false, true}) {
        const QuantRow src = quant_row(layer, from, 0, head, is_value);
        const QuantRow dst = quant_row(layer, to, 0, head, is_value);
        std::copy_n(quant_.data() + src.codes, static_cast<size_t>(count * layout_.row_bytes),
                    quant_.data() + dst.codes);
        std::copy_n(quant_.data() + src.scales,
                    static_cast<size_t>(count * layout_.scales_per_row * 2),
                    quant_.data() + dst.scales);
      }
    }
    // Slot 0 is copied, so its fp16 first keys are too (they matter where it is position 0).
    std::copy_n(quant_.data() + first_key_row(layer, from, 0),
                static_cast<size_t>(spec_.num_kv_heads * spec_.head_dim * 2),
                quant_.data() + first_key_row(layer, to, 0));
  }
}

void CpuKvCache::set_key_offsets(std::span<const float> offsets) {
  if (!quantized()) KvCacheStorage::set_key_offsets(offsets);  // throws: nothing to offset
  check_key_offsets(spec_, offsets);
  key_offsets_.assign(offsets.begin(), offsets.end());
}

std::vector<float> CpuKvCache::mean_keys(std::span<const int32_t> pages, int64_t begin,
                                         int64_t end) const {
  if (!quantized()) return KvCacheStorage::mean_keys(pages, begin, end);  // throws
  return mean_stored_keys(spec_, pages, begin, end, key_offsets_, [&](int32_t page) {
    return quant_.data() + static_cast<size_t>(page * spec_.num_layers * layout_.layer_page_bytes);
  });
}

void CpuKvCache::store_rotated(int64_t layer, int64_t page, int64_t slot, int64_t head,
                               bool is_value, const float* x, bool first_position) {
  float rotated[kMaxHeadDim];  // no allocation per row: this runs for every stored key and value
  std::copy_n(x, spec_.head_dim, rotated);
  hadamard_rotate(rotated, spec_.head_dim);
  if (!is_value && !key_offsets_.empty()) {
    const float* mu = key_offsets_.data() + (layer * spec_.num_kv_heads + head) * spec_.head_dim;
    for (int64_t j = 0; j < spec_.head_dim; ++j) rotated[j] -= mu[j];
  }
  if (first_position && !is_value) {
    uint16_t first_key[kMaxHeadDim];
    store_first_key(rotated, spec_.head_dim, first_key);
    std::memcpy(quant_.data() + first_key_row(layer, page, head), first_key,
                static_cast<size_t>(spec_.head_dim) * 2);
  }
  const QuantRow r = quant_row(layer, page, slot, head, is_value);
  uint16_t scales[kMaxHeadDim / kKvQuantGroup];
  quantize_kv_row(rotated, spec_.head_dim, layout_.bits, quant_.data() + r.codes, scales);
  std::memcpy(quant_.data() + r.scales, scales, static_cast<size_t>(layout_.scales_per_row) * 2);
}

void CpuKvCache::load_rotated(int64_t layer, int64_t page, int64_t slot, int64_t head,
                              bool is_value, float* out, bool first_position) const {
  if (first_position && !is_value) {
    uint16_t first_key[kMaxHeadDim];
    std::memcpy(first_key, quant_.data() + first_key_row(layer, page, head),
                static_cast<size_t>(spec_.head_dim) * 2);
    load_first_key(first_key, spec_.head_dim, out);
    return;
  }
  const QuantRow r = quant_row(layer, page, slot, head, is_value);
  uint16_t scales[kMaxHeadDim / kKvQuantGroup];
  std::memcpy(scales, quant_.data() + r.scales, static_cast<size_t>(layout_.scales_per_row) * 2);
  dequantize_kv_row(quant_.data() + r.codes, scales, spec_.head_dim, layout_.bits, out);
}

CpuBackend::CpuBackend(int threads, CpuLinears linears)
    : pool_(threads), linears_(linears), dot_kernel_(best_dot_kernel()) {}

std::string CpuBackend::name() const {
  std::string quantized = "exact quantized linears";
  if (linears_ == CpuLinears::kFast) {
    quantized = std::string("integer-dot quantized linears (") + dot_kernel_name(dot_kernel_) + ")";
    if (cpu_gemm_available()) quantized += ", prompts on BLAS";
  }
  return "cpu (" + std::to_string(pool_.size()) + " threads" + (using_avx2() ? ", avx2" : "") +
         ", " + quantized + ")";
}

std::unique_ptr<BackendWeight> CpuBackend::upload(const HostTensor& tensor) {
  if (tensor.dtype != DType::kF32 && tensor.dtype != DType::kF16 && tensor.dtype != DType::kBF16) {
    fail(ErrorCode::kUnsupported, "cpu backend: tensors must be F32, F16 or BF16, got " +
                                      std::string(dtype_name(tensor.dtype)));
  }
  auto w = std::make_unique<CpuTensorWeight>(tensor);
  weight_bytes_ += w->device_bytes();
  return w;
}

std::unique_ptr<BackendWeight> CpuBackend::upload_linear(const LinearSource& source) {
  auto w = std::make_unique<CpuLinearWeight>();
  if (source.quantized) {
    w->quantized = source.quantized;
    w->out_features = source.quantized->out_features();
    w->in_features = source.quantized->in_features();
    if (linears_ == CpuLinears::kFast && has_int8_weight(*source.quantized)) {
      w->int8 = std::make_unique<Int8Weight>(build_int8_weight(*source.quantized, pool_));
    }
  } else {
    const HostTensor& t = source.weight;
    if (t.shape.size() != 2) {
      fail(ErrorCode::kInvalidFile,
           source.name + ": a linear weight must be 2-D, got " + t.shape_string());
    }
    if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16) {
      fail(ErrorCode::kUnsupported,
           source.name + ": unsupported weight dtype " + std::string(dtype_name(t.dtype)));
    }
    w->weight = t;
    w->out_features = t.shape[0];
    w->in_features = t.shape[1];
  }
  if (source.bias) {
    if (source.bias->numel() != w->out_features) {
      fail(ErrorCode::kInvalidFile, source.name + ": bias has " +
                                        std::to_string(source.bias->numel()) + " values for " +
                                        std::to_string(w->out_features) + " outputs");
    }
    w->bias = source.bias->to_floats();
  }
  weight_bytes_ += w->device_bytes();
  return w;
}

DeviceTensor CpuBackend::alloc_activation(int64_t rows, int64_t cols) {
  const size_t n = static_cast<size_t>(rows * cols);
  std::unique_ptr<float[]> buffer;
  try {
    buffer.reset(new float[n]());
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::kOutOfMemory, "not enough host memory for activations");
  }
  DeviceTensor t{buffer.get(), DType::kF32, rows, cols};
  activations_.push_back(std::move(buffer));
  activation_bytes_ += n * sizeof(float);
  return t;
}

std::unique_ptr<KvCacheStorage> CpuBackend::create_kv_cache(const KvCacheSpec& spec) {
  KvCacheSpec s = spec;
  require_kv_quant_supported(s.type, s.head_dim);
  if (!is_quantized(s.type)) s.type = KvCacheType::kF32;
  auto cache = std::make_unique<CpuKvCache>(s);
  cache_bytes_ += s.bytes();
  return cache;
}

MemoryUsage CpuBackend::memory_usage() const {
  MemoryUsage m;
  m.weights = weight_bytes_ + *lora_bytes_;
  m.kv_cache = cache_bytes_;
  m.activations = activation_bytes_;
  host_memory(&m.device_free, &m.device_total);
  return m;
}

PreparedBatch CpuBackend::prepare_batch(const BatchDesc& batch) {
  CpuBatch& b = batch_;
  b = CpuBatch{};
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceSlice& seq = batch.seqs[s];
    b.seq_start_pos.push_back(seq.start_pos);
    b.page_tables.emplace_back(seq.page_table.begin(), seq.page_table.end());
    const auto first_row = static_cast<int64_t>(b.tokens.size());
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      b.tokens.push_back(seq.tokens[i]);
      b.positions.push_back(seq.start_pos + static_cast<int32_t>(i));
      b.token_seq.push_back(static_cast<int32_t>(s));
    }
    const auto n = static_cast<int64_t>(seq.tokens.size());
    if (seq.all_logits) {
      for (int64_t i = 0; i < n; ++i) b.logit_rows.push_back(first_row + i);
    } else if (n > 0) {
      b.logit_rows.push_back(first_row + n - 1);
    }
  }
  if (batch.uses_adapters()) {
    b.adapter_weights.assign(b.tokens.size() * kMaxLoraSlots, 0.0f);
    for (size_t r = 0; r < b.tokens.size(); ++r) {
      const SequenceSlice& seq = batch.seqs[static_cast<size_t>(b.token_seq[r])];
      HEARTH_CHECK(seq.adapter_weights.size() <= static_cast<size_t>(kMaxLoraSlots),
                   "prepare_batch: more adapter weights than slots");
      std::copy(seq.adapter_weights.begin(), seq.adapter_weights.end(),
                b.adapter_weights.begin() + static_cast<std::ptrdiff_t>(r * kMaxLoraSlots));
    }
  }
  PreparedBatch p;
  p.tokens = static_cast<int64_t>(b.tokens.size());
  p.logit_rows = static_cast<int64_t>(b.logit_rows.size());
  return p;
}

void CpuBackend::run(const std::function<void()>& record, std::optional<int64_t>) {
  record();
}

void CpuBackend::embed(const BackendWeight& table, DeviceTensor out) {
  check_f32(out, "embed output");
  const auto& t = static_cast<const CpuTensorWeight&>(table);
  const int64_t vocab = t.tensor.shape[0];
  HEARTH_CHECK(t.tensor.shape.size() == 2 && t.tensor.shape[1] == out.cols, "embed shape");
  pool_.parallel_for(out.rows, 8, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int32_t id = batch_.tokens[r];
      float* dst = f32(out) + r * out.cols;
      if (id < 0 || id >= vocab) {  // the generator validates ids; never read out of bounds
        std::memset(dst, 0, static_cast<size_t>(out.cols) * sizeof(float));
        continue;
      }
      t.row_as_float(id, dst);
    }
  });
}

namespace {

// out = x / sqrt(mean(x²) + eps) * w, as Hugging Face's LlamaRMSNorm does in fp32.
void rms_norm_row(const float* x, const float* w, float eps, int64_t n, float* out) {
  const float sum = dot(x, x, n);
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = w[i] * (x[i] * inv);
}

}  // namespace

void CpuBackend::rms_norm(DeviceTensor x, const BackendWeight& w, float eps, DeviceTensor out) {
  check_f32(x, "rms_norm input");
  const float* weight = static_cast<const CpuTensorWeight&>(w).f32();
  pool_.parallel_for(x.rows, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      rms_norm_row(f32(x) + r * x.cols, weight, eps, x.cols, f32(out) + r * out.cols);
    }
  });
}

void CpuBackend::add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w,
                              float eps, DeviceTensor out) {
  const float* weight = static_cast<const CpuTensorWeight&>(w).f32();
  pool_.parallel_for(residual.rows, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* res = f32(residual) + r * residual.cols;
      const float* d = f32(delta) + r * delta.cols;
      for (int64_t i = 0; i < residual.cols; ++i) res[i] += d[i];
      rms_norm_row(res, weight, eps, residual.cols, f32(out) + r * out.cols);
    }
  });
}

void CpuBackend::rope(DeviceTensor q, DeviceTensor k, const RopeParams& params) {
  const float* inv_freq = static_cast<const CpuTensorWeight*>(params.inv_freq)->f32();
  const int64_t half = params.rotary_dim / 2;
  const int64_t head_dim = params.head_dim;
  pool_.parallel_for(q.rows, 4, [&](int64_t b, int64_t e) {
    std::vector<float> cos_v(half), sin_v(half);
    for (int64_t r = b; r < e; ++r) {
      const auto pos = static_cast<float>(batch_.positions[r]);
      for (int64_t i = 0; i < half; ++i) {
        const float angle = pos * inv_freq[i];
        cos_v[i] = std::cos(angle) * params.attention_factor;
        sin_v[i] = std::sin(angle) * params.attention_factor;
      }
      for (DeviceTensor* t : {&q, &k}) {
        float* row = f32(*t) + r * t->cols;
        for (int64_t h = 0; h < t->cols / head_dim; ++h) {
          float* v = row + h * head_dim;
          for (int64_t i = 0; i < half; ++i) {
            const float x1 = v[i];
            const float x2 = v[i + half];
            const float a = x1 * cos_v[i];
            const float bb = x2 * sin_v[i];
            const float c = x2 * cos_v[i];
            const float d = x1 * sin_v[i];
            v[i] = a - bb;
            v[i + half] = c + d;
          }
        }
      }
    }
  });
}

void CpuBackend::silu_mul(DeviceTensor gate, DeviceTensor up, DeviceTensor out) {
  const int64_t n = gate.rows * gate.cols;
  pool_.parallel_for(n, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float g = f32(gate)[i];
      f32(out)[i] = (g / (1.0f + std::exp(-g))) * f32(up)[i];
    }
  });
}

void CpuBackend::gather_logit_rows(DeviceTensor x, DeviceTensor out) {
  for (size_t i = 0; i < batch_.logit_rows.size(); ++i) {
    std::memcpy(f32(out) + static_cast<int64_t>(i) * out.cols,
                f32(x) + batch_.logit_rows[i] * x.cols, static_cast<size_t>(x.cols) * 4);
  }
}

void CpuBackend::receive(Backend& from, DeviceTensor src, DeviceTensor dst, int64_t rows) {
  // Every CPU backend computes in host memory and is done when its ops return.
  if (!dynamic_cast<CpuBackend*>(&from)) {
    fail(ErrorCode::kInvalidArgument, "receive: a CPU backend receives from CPU backends only");
  }
  check_f32(src, "receive source");
  check_f32(dst, "receive destination");
  HEARTH_CHECK(src.cols == dst.cols && rows >= 0 && rows <= src.rows && rows <= dst.rows,
               "receive: shapes");
  if (rows > 0) std::memmove(dst.data, src.data, static_cast<size_t>(rows * src.cols) * 4);
}

void CpuBackend::read_into(DeviceTensor t, int64_t rows, std::span<float> out) {
  check_f32(t, "read");
  HEARTH_CHECK(rows >= 0 && rows <= t.rows && static_cast<int64_t>(out.size()) == rows * t.cols,
               "read: bad rows or buffer size");
  if (!out.empty()) std::memcpy(out.data(), f32(t), out.size() * sizeof(float));
}

double CpuBackend::squared_distance(DeviceTensor a, DeviceTensor b, int64_t rows) {
  check_f32(a, "squared_distance");
  check_f32(b, "squared_distance");
  HEARTH_CHECK(a.cols == b.cols && rows >= 0 && rows <= a.rows && rows <= b.rows,
               "squared_distance: shapes");
  const float* x = f32(a);
  const float* y = f32(b);
  double sum = 0;
  for (int64_t i = 0; i < rows * a.cols; ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    sum += d * d;
  }
  return sum;
}

std::vector<int32_t> CpuBackend::sample(DeviceTensor logits,
                                        std::span<const SampleRequest> requests) {
  std::vector<int32_t> ids(requests.size());
  std::vector<float> row(static_cast<size_t>(logits.cols));
  for (size_t i = 0; i < requests.size(); ++i) {
    std::memcpy(row.data(), f32(logits) + static_cast<int64_t>(i) * logits.cols,
                row.size() * sizeof(float));
    ids[i] = sample_or_verify(row, requests[i]);
  }
  return ids;
}

}  // namespace cpu
}  // namespace hearth
