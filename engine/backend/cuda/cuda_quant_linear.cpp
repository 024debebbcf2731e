#include "engine/backend/cuda/cuda_quant_linear.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/error.h"
#include "engine/formats/quant_tile_layout.h"
#include "kernels/quant_kernels.h"

namespace hearth::cuda {
namespace {

class CudaQuantLinearWeight final : public BackendWeight {
 public:
  explicit CudaQuantLinearWeight(GraphEpoch epoch) : on_destroy(std::move(epoch)) {}
  size_t device_bytes() const override { return storage.size() + bias.size(); }
  EpochOnDestroy on_destroy;
  std::string name;
  DeviceBuffer storage;  // every array of the tile layout, each 256-byte aligned
  DeviceBuffer bias;     // f32 [N], or empty
  kernels::QuantMatrix matrix;
  bool rows_in_order = false;    // stored row s is input feature s: x needs no gather
  std::vector<int32_t> row_src;  // matrix.row_src on the host (act-order matrices only)
};

// fp16 weights dequantized per cuBLAS call on the large-batch path.
constexpr size_t kDequantBytes = size_t(64) << 20;

kernels::QuantKind kind_of(QuantTileLayout::Kind k) {
  switch (k) {
    case QuantTileLayout::Kind::kExl2:
      return kernels::QuantKind::kExl2;
    case QuantTileLayout::Kind::kGptqSym:
      return kernels::QuantKind::kGptqSym;
    case QuantTileLayout::Kind::kGguf:
      return kernels::QuantKind::kGguf;
    default:
      return kernels::QuantKind::kGptqAsym;
  }
}

int max_bits(uint32_t mask) {
  int b = 0;
  for (int i = 0; i < 8; ++i) {
    if (mask & (1u << i)) b = i + 1;
  }
  return b;
}

// The most rows the fused kernels take (fewer for a matrix whose partials would be too large).
int64_t fused_max_rows(const CudaBackendOptions& o) {
  return std::min<int64_t>(o.quant_fused_max_rows, kernels::kQuantGemmMaxLaunchRows);
}

}  // namespace

size_t quant_large_batch_workspace_bytes(int64_t rows, int64_t max_in_features) {
  // Stored rows: each group padded to a multiple of 32 rows, at most twice K for groups of 16 or
  // more rows (the layouts that occur); an estimate for the load plan, the buffers grow as needed.
  // The slices: one buffer for graph capture and quant_mma_gemm's partials, two that a side
  // stream fills in turn (CudaBackendOptions::dequant_overlap).
  const int64_t stored = 2 * ((max_in_features + 31) / 32 * 32);
  return (1 + DequantSlots::kSlots) * kDequantBytes +
         static_cast<size_t>(std::max<int64_t>(rows, 0) * stored) * 2;
}

bool is_quantized_linear(const BackendWeight& w) {
  return dynamic_cast<const CudaQuantLinearWeight*>(&w) != nullptr;
}

const kernels::QuantMatrix& quantized_matrix(const BackendWeight& w) {
  const auto* q = dynamic_cast<const CudaQuantLinearWeight*>(&w);
  HEARTH_CHECK(q != nullptr, "quantized_matrix: not a quantized linear");
  return q->matrix;
}

bool CudaBackend::embeds_packed(const QuantizedWeight& table) const {
  return options_.activation_dtype == DType::kF16 && runs_packed_on_gpu(table);
}

bool CudaBackend::embed_quantized(const BackendWeight& table, DeviceTensor out) {
  const auto* w = dynamic_cast<const CudaQuantLinearWeight*>(&table);
  if (!w) return false;
  HEARTH_CHECK(out.cols == w->matrix.in_features && out.dtype == DType::kF16,
               "embed: a packed table needs fp16 rows of its width");
  HEARTH_CHECK(out.rows <= prepared_.padded_tokens, "embed: more rows than the batch");
  check_rows(out, out.rows, "embed");
  check_launch(kernels::quant_embed(launch(), w->matrix, batch_view().tokens, out.rows, out.data),
               "quant_embed");
  return true;
}

std::unique_ptr<BackendWeight> CudaBackend::upload_quantized_linear(const LinearSource& source) {
  DeviceGuard guard(options_.device);
  HEARTH_CHECK(source.quantized != nullptr, "upload_quantized_linear: not a quantized layer");
  const QuantTileLayout L = build_quant_tile_layout(*source.quantized);
  auto w = std::make_unique<CudaQuantLinearWeight>(epoch_);
  w->name = source.name;

  struct Part {
    const void* data;
    size_t bytes;
    size_t offset = 0;
  };
  Part parts[] = {
      {L.qweight.data(), L.qweight.size() * 4},
      {L.chunk_line.data(), L.chunk_line.size() * 4},
      {L.chunk_info.data(), L.chunk_info.size() * 4},
      {L.row_src.data(), L.row_src.size() * 4},
      {L.scale_codes.data(), L.scale_codes.size() * 2},
      {L.scale_max.data(), L.scale_max.size() * 2},
      {L.scales.data(), L.scales.size() * 2},
      {L.zeros.data(), L.zeros.size() * 2},
      {L.super_records.data(), L.super_records.size() * 4},
      {L.sub_records.data(), L.sub_records.size() * 2},
  };
  size_t total = 0;
  for (Part& p : parts) {
    p.offset = total;
    total += (p.bytes + 255) / 256 * 256;
  }
  w->storage = DeviceBuffer(total, MemoryCategory::kWeights, counters_, source.name);
  auto* base = static_cast<std::byte*>(w->storage.get());
  for (const Part& p : parts) {
    if (p.bytes) {
      stream_to_device(p.data, DType::kU8, static_cast<int64_t>(p.bytes), base + p.offset,
                       DType::kU8, source.name);
    }
  }
  auto at = [&](int i) -> const void* { return parts[i].bytes ? base + parts[i].offset : nullptr; };
  kernels::QuantMatrix& m = w->matrix;
  m.kind = kind_of(L.kind);
  m.qweight = static_cast<const uint32_t*>(at(0));
  m.chunk_line = static_cast<const int32_t*>(at(1));
  m.chunk_info = static_cast<const uint32_t*>(at(2));
  m.row_src = static_cast<const int32_t*>(at(3));
  m.scale_codes = static_cast<const uint16_t*>(at(4));
  m.scale_max = static_cast<const uint16_t*>(at(5));
  m.scales = static_cast<const uint16_t*>(at(6));
  m.zeros = static_cast<const uint16_t*>(at(7));
  m.super_records = static_cast<const uint32_t*>(at(8));
  m.sub_records = static_cast<const uint16_t*>(at(9));
  m.supers = L.supers;
  m.super_shift = L.super_shift;
  m.gguf_mode = static_cast<uint32_t>(L.sub_scales) | static_cast<uint32_t>(L.gguf_zero) << 8;
  if (L.gguf_half_exact) m.kind = kernels::QuantKind::kGgufHalf;
  if (L.has_iq4_codebook()) m.kind = kernels::QuantKind::kGgufCodebook;
  m.in_features = L.in_features;
  m.out_features = L.out_features;
  m.blocks = L.blocks;
  m.chunks = L.chunks;
  m.groups = L.groups;
  m.lines = L.lines;
  m.max_bits = max_bits(L.bits_mask);
  w->rows_in_order = L.rows_in_order;
  if (!L.rows_in_order) w->row_src = L.row_src;

  if (source.bias) {
    const HostTensor& b = *source.bias;
    if (b.numel() != L.out_features) {
      fail(ErrorCode::kInvalidFile, source.name + ": bias has " + std::to_string(b.numel()) +
                                        " values for " + std::to_string(L.out_features) +
                                        " outputs");
    }
    w->bias = DeviceBuffer(static_cast<size_t>(b.numel()) * sizeof(float), MemoryCategory::kWeights,
                           counters_, source.name + " bias");
    stream_to_device(b.data, b.dtype, b.numel(), w->bias.get(), DType::kF32, source.name + " bias");
  }
  return w;
}

void CudaBackend::flush_quant_linears() {
  if (pending_quant_.empty()) return;
  // One launch for all the queued matrices (up to 32 rows of x; the kernel computes each row
  // apart from the others, so its result does not depend on the batch).
  const int64_t rows = pending_quant_x_.rows;
  std::vector<kernels::QuantGemmTarget> targets;
  size_t partials = 0, counters = 0, staged_x = 0, lora_t = 0;
  // fold_norm_scratch_: the rows' inverse RMS, then the producer's sums of squares.
  constexpr int64_t kInvRmsFloats = kernels::kQuantGemmMaxRows;
  int64_t norm_floats = 0;
  for (const PendingQuantLinear& p : pending_quant_) {
    const auto& w = static_cast<const CudaQuantLinearWeight&>(*p.weight);
    kernels::QuantGemmTarget t;
    t.m = &w.matrix;
    t.bias = w.bias ? w.bias.as<float>() : nullptr;
    t.out = p.out.data;
    t.out_t = to_elem(p.out.dtype);
    t.residual = p.residual.data;
    t.norm_eps = p.norm_eps;
    t.lora = p.lora;
    if (t.residual) {
      norm_floats = kInvRmsFloats + rows * kernels::quant_norm_slots(w.matrix.out_features);
    }
    targets.push_back(t);
    partials += kernels::quant_gemm_partial_floats(w.matrix, rows, p.lora.cols);
    counters += kernels::quant_gemm_counters(w.matrix);
    staged_x += kernels::quant_gemm_staged_x_halves(w.matrix, rows);
    if (p.lora.cols > 0) lora_t += kernels::quant_gemm_lora_floats(w.matrix, rows, p.lora.cols);
  }
  const std::optional<PendingNorm> norm = std::exchange(pending_quant_norm_, std::nullopt);
  if (norm) norm_floats = std::max(norm_floats, kInvRmsFloats);
  // x is the residual when the linears normalize it themselves.
  const void* x = norm ? norm->residual.data : pending_quant_x_.data;
  pending_quant_.clear();
  ensure_gemv_scratch(partials, counters);
  grow_workspace(fold_norm_scratch_, static_cast<size_t>(norm_floats) * sizeof(float),
                 "RMS of the rows between quantized linears");
  float* inv_rms = fold_norm_scratch_.as<float>();
  for (kernels::QuantGemmTarget& t : targets) {
    if (t.residual) {
      t.inv_rms = inv_rms;
      t.norm_sums = inv_rms + kInvRmsFloats;
    }
  }
  kernels::QuantInputNorm input_norm;
  if (norm) input_norm = {inv_rms, norm->weight, norm->out.data};
  kernels::QuantGemmScratch scratch{gemv_partials_.as<float>(), gemv_counters_.as<int32_t>(),
                                    options_.slice_sum_kernel_min_rows};
  scratch.lora_delta_max_rows = options_.lora_delta_max_rows;
  if (rows >= options_.staged_x_min_rows && !norm) {
    grow_workspace(quant_staged_x_, staged_x * 2, "activations of quantized linears, staged");
    scratch.staged_x = quant_staged_x_.get();
  }
  if (lora_t > 0) {
    grow_workspace(quant_lora_t_, lora_t * sizeof(float), "LoRA projections of quantized linears");
    scratch.lora_t = quant_lora_t_.as<float>();
  }
  check_launch(kernels::quant_gemm_group(launch(), targets.data(), static_cast<int>(targets.size()),
                                         x, rows, scratch, norm ? &input_norm : nullptr),
               "quant_gemm_group");
}

void CudaBackend::linears(std::span<const BackendWeight* const> weights, DeviceTensor x,
                          std::span<const DeviceTensor> outs) {
  HEARTH_CHECK(weights.size() == outs.size(), "linears: one output per weight");
  // Only linear() runs in between, and it writes none of x after its first queued ops have run:
  // a gather stays valid for the next matrix.
  struct Sharing {  // for this call only, also when a linear throws
    CudaBackend& b;
    explicit Sharing(CudaBackend& backend) : b(backend) { b.share_x_gathers_ = true; }
    ~Sharing() {
      b.share_x_gathers_ = false;
      b.gathered_x_ = {};
    }
  } sharing(*this);
  gathered_x_ = {};
  for (size_t i = 0; i < weights.size(); ++i) linear(*weights[i], x, outs[i]);
}

bool CudaBackend::quant_rows_fused(const kernels::QuantMatrix& m, int64_t rows) const {
  return rows <= kernels::kQuantGemmMaxRows ||
         (rows <= fused_max_rows(options_) &&
          kernels::quant_gemm_partial_floats(m, rows) * sizeof(float) <=
              kQuantPartialBytesPerMatrix);
}

bool CudaBackend::quant_rows_on_product(int64_t rows) const {
  if (options_.quant_mma_min_rows <= 0 || rows > options_.quant_mma_max_rows) return false;
  // Below its range only matrices the fused kernel refused for their partials' size get here:
  // for an 8B head at 64 rows cuBLAS would first write out 1 GB of fp16 weights.
  return rows >= options_.quant_mma_min_rows || rows <= fused_max_rows(options_);
}

bool CudaBackend::linear_gathers_x(const BackendWeight& weight, int64_t rows) const {
  const auto* w = dynamic_cast<const CudaQuantLinearWeight*>(&weight);
  return w != nullptr && !w->rows_in_order && rows > 0 && !quant_rows_fused(w->matrix, rows);
}

void CudaBackend::silu_mul_linear(DeviceTensor gate, DeviceTensor up, const BackendWeight& w,
                                  DeviceTensor out, bool keep_activation) {
  if (keep_activation || !linear_gathers_x(w, gate.rows)) {
    Backend::silu_mul_linear(gate, up, w, out, keep_activation);
    return;
  }
  flush_linears();  // what produced gate and up is issued first, as silu_mul() does
  HEARTH_CHECK(gate.cols == up.cols && gate.dtype == up.dtype, "silu_mul_linear: shapes");
  check_rows(up, gate.rows, "silu_mul_linear");
  linear_quantized(w, gate, out, &up);
}

void CudaBackend::linear_quantized(const BackendWeight& weight, const DeviceTensor& x,
                                   const DeviceTensor& out, const DeviceTensor* up) {
  flush_dense_linears();  // dense linears queued before this one run first
  const auto& w = static_cast<const CudaQuantLinearWeight&>(weight);
  const kernels::QuantMatrix& m = w.matrix;
  const int64_t rows = x.rows;
  HEARTH_CHECK(x.cols == m.in_features && out.cols == m.out_features,
               "linear " + w.name + ": x has " + std::to_string(x.cols) + " columns, out " +
                   std::to_string(out.cols) + ", weight is [" + std::to_string(m.out_features) +
                   ", " + std::to_string(m.in_features) + "]");
  HEARTH_CHECK(x.dtype == DType::kF16, "quantized linear: activations must be fp16");
  HEARTH_CHECK(out.data != nullptr && out.rows >= rows, "linear: output rows");
  HEARTH_CHECK(out.dtype == DType::kF16 || out.dtype == DType::kF32, "linear: output dtype");
  if (rows <= 0) return;
  HEARTH_CHECK(!rows_overlap(x, out, rows), "linear " + w.name + ": output overlaps the input");
  // A norm folded into the linear before (fold_norm) is applied by the linears reading its output.
  const bool normalizes = pending_norm_ && pending_norm_->out.data == x.data &&
                          pending_norm_->out.rows == rows && rows <= kernels::kQuantGemmMaxRows;
  if (pending_norm_ && !normalizes) flush_norm();
  // Decode-sized batches wait for the next linears of the same x, to share their launches.
  const bool fused = quant_rows_fused(m, rows);
  HEARTH_CHECK(up == nullptr || (!fused && !w.rows_in_order),
               "linear " + w.name + ": the activation is computed only where x is gathered");
  if (up) HEARTH_CHECK(!rows_overlap(*up, out, rows), "linear " + w.name + ": output overlaps up");
  if (fused) {
    if (normalizes) {
      flush_quant_linears();  // the linear that adds into the residual
      pending_quant_norm_ = std::exchange(pending_norm_, std::nullopt);
    }
    if (!pending_quant_.empty()) {
      const auto& first = static_cast<const CudaQuantLinearWeight&>(*pending_quant_.front().weight);
      bool joins = pending_quant_x_.data == x.data && pending_quant_x_.rows == rows &&
                   pending_quant_x_.cols == x.cols && first.matrix.kind == m.kind &&
                   pending_quant_.size() < static_cast<size_t>(kernels::kQuantGemmMaxGroup);
      for (const PendingQuantLinear& p : pending_quant_) {
        joins = joins && !rows_overlap(p.out, out, rows);
      }
      if (!joins) flush_quant_linears();
    }
    pending_quant_x_ = x;
    PendingQuantLinear queued;
    queued.weight = &weight;
    queued.out = out.first_rows(rows);
    pending_quant_.push_back(queued);
    return;
  }
  flush_quant_linears();
  const float* bias = w.bias ? w.bias.as<float>() : nullptr;
  const kernels::Elem out_t = to_elem(out.dtype);
  const int64_t N = m.out_features, stored_rows = m.chunks * 32;
  // x in the weights' stored row order, gathered unless it already is: inside linears(), the
  // previous matrix may have left this x in the same order.
  auto x_in_stored_order = [&]() -> const void* {
    const GatheredX& g = gathered_x_;
    if (!up && share_x_gathers_ && g.x == x.data && g.rows == rows && g.order &&
        static_cast<const CudaQuantLinearWeight*>(g.order)->row_src == w.row_src) {
      return quant_x_.get();
    }
    grow_workspace(quant_x_, static_cast<size_t>(rows * stored_rows) * 2,
                   "activations of large batches in stored row order");
    check_launch(kernels::quant_gather_x(launch_plain(), m, x.data, rows, quant_x_.get(),
                                         up ? up->data : nullptr),
                 "quant_gather_x");
    // The activation is not x: no later linear of x may take it.
    gathered_x_ = share_x_gathers_ && !up ? GatheredX{x.data, rows, &weight} : GatheredX{};
    return quant_x_.get();
  };
  if (quant_rows_on_product(rows)) {
    const bool direct = w.rows_in_order && m.in_features % 8 == 0;
    const void* xs = direct ? x.data : x_in_stored_order();
    const int64_t k = direct ? m.in_features : stored_rows;
    using kernels::QuantMmaBlock;
    const QuantMmaBlock shape = options_.quant_mma_wgmma         ? QuantMmaBlock::kWgmma
                                : options_.quant_mma_wide_blocks ? QuantMmaBlock::kWide
                                                                 : QuantMmaBlock::kTall;
    const int splits = options_.quant_mma_split_k
                           ? kernels::quant_mma_k_splits(m, rows, shape, info_.multiprocessors)
                           : 1;
    float* partials = nullptr;
    if (splits > 1) {
      // At most kQuantMmaPartialBytes, in the dequantized slice's buffer (kDequantBytes in the
      // plan), which this path does not otherwise use.
      static_assert(kernels::kQuantMmaPartialBytes <= kDequantBytes);
      grow_workspace(quant_dequant_,
                     kernels::quant_mma_partial_floats(m, rows, splits) * sizeof(float),
                     "fp16 weights or partial sums of large-batch quantized linears");
      partials = quant_dequant_.as<float>();
    }
    check_launch(kernels::quant_mma_gemm(launch_plain(), m, xs, k, k, rows, bias, out.data, out_t,
                                         shape, splits, partials),
                 "quant_mma_gemm");
    return;
  }
  // Otherwise fp16 weights slice by slice (output rows, multiples of 32), then cuBLAS, in the
  // weights' stored row order.
  const void* x_gemm = x.data;
  int64_t k_gemm = m.in_features, ld_x = m.in_features;
  if (!w.rows_in_order) {
    x_gemm = x_in_stored_order();
    k_gemm = ld_x = stored_rows;
  }
  const size_t slice_bytes = options_.dequant_slice_bytes > 0
                                 ? std::min(options_.dequant_slice_bytes, kDequantBytes)
                                 : kDequantBytes;
  int64_t slice =
      std::max<int64_t>(32, static_cast<int64_t>(slice_bytes / (stored_rows * 2)) / 32 * 32);
  slice = std::min(slice, (N + 31) / 32 * 32);
  const size_t slice_buffer_bytes = static_cast<size_t>(slice * stored_rows) * 2;
  // Outside graph steps the slices may alternate between two buffers written on a side stream
  // (DequantSlots): slice i + 1, or the next matrix's first, is then written while cuBLAS reads
  // slice i. A graph step takes the one buffer in its warm-up run too, which grows it before the
  // capture (else every capture of a step with such a linear would be abandoned and re-run).
  const bool overlap = options_.dequant_overlap && !graph_step_;
  if (overlap) {
    dequant_slots_.start();
  } else {
    grow_workspace(quant_dequant_, slice_buffer_bytes,
                   "fp16 weights or partial sums of large-batch quantized linears");
  }
  const float alpha = 1.0f, beta = 0.0f;
  const size_t out_elem = dtype_size(out.dtype);
  const cudaDataType_t out_type = out.dtype == DType::kF32 ? CUDA_R_32F : CUDA_R_16F;
  for (int64_t n0 = 0; n0 < N; n0 += slice) {
    const int64_t count = std::min(slice, N - n0);
    void* weights = quant_dequant_.get();
    int slot = -1;
    if (overlap) {
      slot = dequant_slots_.next();
      DeviceBuffer& buffer = dequant_slot_buffers_[slot];
      if (buffer.size() < slice_buffer_bytes) {
        dequant_slots_.synchronize();  // its previous slice may still be in flight
        grow_workspace(buffer, slice_buffer_bytes, "fp16 weights of large-batch quantized linears");
      }
      weights = buffer.get();
      dequant_slots_.begin_fill(slot);
      check_launch(kernels::quant_dequantize({dequant_slots_.side(), false, info_.multiprocessors},
                                             m, n0, count, weights),
                   "quant_dequantize");
      dequant_slots_.end_fill(slot);
      dequant_slots_.begin_read(slot, stream_);
    } else {
      check_launch(kernels::quant_dequantize(launch_plain(), m, n0, count, weights),
                   "quant_dequantize");
    }
    // Column-major view: out^T[count, R] (ld N) = W_slice[count, K'] (stored K'-major) · x^T.
    check_cublas(cuda::cublas().GemmEx(
                     cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(count),
                     static_cast<int>(rows), static_cast<int>(k_gemm), &alpha, weights, CUDA_R_16F,
                     static_cast<int>(stored_rows), x_gemm, CUDA_R_16F, static_cast<int>(ld_x),
                     &beta, static_cast<std::byte*>(out.data) + n0 * out_elem, out_type,
                     static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 ("matrix product of " + w.name).c_str());
    if (overlap) dequant_slots_.end_read(slot, stream_);
  }
  if (bias) {
    check_launch(kernels::add_bias(launch(), out_t, out.data, bias, rows, N), "add_bias");
  }
}

}  // namespace hearth::cuda
