// The forward-pass ops of the CUDA backend: checks on the host, then one or two kernel launches
// each (nothing here waits for the GPU, so a whole step can be captured as a graph).
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_quant_linear.h"
#include "engine/core/error.h"

namespace hearth::cuda {
namespace {

const CudaTensorWeight& tensor_weight(const BackendWeight& w, const char* op) {
  const auto* t = dynamic_cast<const CudaTensorWeight*>(&w);
  HEARTH_CHECK(t != nullptr, std::string(op) + ": weight is not a CUDA tensor");
  return *t;
}

cudaDataType_t cublas_type(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// Split-K partial sums above this size make the GEMV give way to cuBLAS.
constexpr size_t kMaxGemvScratchBytes = size_t(64) << 20;

}  // namespace

void CudaBackend::check_rows(const DeviceTensor& t, int64_t rows, const char* op) const {
  HEARTH_CHECK(t.data != nullptr, std::string(op) + ": null tensor");
  HEARTH_CHECK(t.dtype == options_.activation_dtype,
               std::string(op) + ": tensor dtype " + std::string(dtype_name(t.dtype)));
  HEARTH_CHECK(t.rows >= rows, std::string(op) + ": tensor has " + std::to_string(t.rows) +
                                   " rows, needs " + std::to_string(rows));
}

void CudaBackend::embed(const BackendWeight& table, DeviceTensor out) {
  flush_linears();
  if (embed_quantized(table, out)) return;
  const CudaTensorWeight& t = tensor_weight(table, "embed");
  HEARTH_CHECK(t.shape.size() == 2 && t.shape[1] == out.cols, "embed: table shape");
  HEARTH_CHECK(out.rows <= prepared_.padded_tokens, "embed: more rows than the batch");
  check_rows(out, out.rows, "embed");
  check_launch(kernels::embed(launch(), to_elem(t.dtype), t.buffer.get(), t.shape[0], t.shape[1],
                              batch_view(), out.rows, out.data),
               "embed");
}

void CudaBackend::rms_norm(DeviceTensor x, const BackendWeight& w, float eps, DeviceTensor out) {
  flush_linears();
  const CudaTensorWeight& t = tensor_weight(w, "rms_norm");
  HEARTH_CHECK(t.shape.size() == 1 && t.shape[0] == x.cols && out.cols == x.cols,
               "rms_norm: shapes");
  check_rows(x, x.rows, "rms_norm");
  check_rows(out, x.rows, "rms_norm");
  check_launch(kernels::rms_norm(launch(), to_elem(x.dtype), x.data, t.buffer.get(), eps, x.rows,
                                 x.cols, out.data),
               "rms_norm");
}

void CudaBackend::add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w,
                               float eps, DeviceTensor out) {
  const CudaTensorWeight& t = tensor_weight(w, "add_rms_norm");
  HEARTH_CHECK(t.shape.size() == 1 && t.shape[0] == residual.cols && delta.cols == residual.cols &&
                   out.cols == residual.cols,
               "add_rms_norm: shapes");
  check_rows(residual, residual.rows, "add_rms_norm");
  check_rows(delta, residual.rows, "add_rms_norm");
  check_rows(out, residual.rows, "add_rms_norm");
  if (fold_norm(residual, delta, t.buffer.as<float>(), eps, out)) return;
  flush_linears();
  check_launch(kernels::add_rms_norm(launch(), to_elem(residual.dtype), residual.data, delta.data,
                                     t.buffer.get(), eps, residual.rows, residual.cols, out.data),
               "add_rms_norm");
}

void CudaBackend::all_reduce_peers(DeviceTensor t, const kernels::AllReducePeers& peers) {
  flush_linears();
  check_launch(
      kernels::all_reduce_peers(launch(), to_elem(t.dtype), t.data, t.rows * t.cols, peers),
      "an all-reduce across the GPUs");
}

bool CudaBackend::all_reduce_add_rms_norm(DeviceTensor residual, DeviceTensor delta,
                                          const BackendWeight& w, float eps, DeviceTensor out,
                                          const kernels::AllReducePeers& peers) {
  const kernels::Elem t = to_elem(residual.dtype);
  if (!kernels::all_reduce_add_rms_norm_fits(t, residual.rows, residual.cols, peers)) return false;
  const CudaTensorWeight& norm = tensor_weight(w, "add_rms_norm");
  HEARTH_CHECK(norm.shape.size() == 1 && norm.shape[0] == residual.cols &&
                   delta.cols == residual.cols && out.cols == residual.cols,
               "add_rms_norm: shapes");
  check_rows(delta, residual.rows, "add_rms_norm");
  check_rows(out, residual.rows, "add_rms_norm");
  flush_linears();
  check_launch(kernels::all_reduce_add_rms_norm_peers(launch(), t, delta.data, residual.data,
                                                      norm.buffer.as<float>(), eps, residual.rows,
                                                      residual.cols, out.data, peers),
               "all-reduce with add_rms_norm");
  return true;
}

bool rows_overlap(const DeviceTensor& a, const DeviceTensor& b, int64_t rows) {
  const auto* a0 = static_cast<const char*>(a.data);
  const auto* b0 = static_cast<const char*>(b.data);
  const auto bytes = [rows](const DeviceTensor& t) {
    return static_cast<size_t>(rows * t.cols) * dtype_size(t.dtype);
  };
  return a0 < b0 + bytes(b) && b0 < a0 + bytes(a);
}

void CudaBackend::linear(const BackendWeight& weight, DeviceTensor x, DeviceTensor out) {
  flush_rope();
  if (is_quantized_linear(weight)) {  // EXL2 / GPTQ (engine/backend/cuda/cuda_quant_linear.cpp)
    linear_quantized(weight, x, out);
    return;
  }
  flush_quant_linears();  // quantized linears queued before this one run first
  flush_norm();           // and a norm this one may read
  const auto* w = dynamic_cast<const CudaLinearWeight*>(&weight);
  HEARTH_CHECK(w != nullptr, "linear: weight is not a CUDA linear weight");
  const int64_t rows = x.rows;
  HEARTH_CHECK(x.cols == w->in_features && out.cols == w->out_features,
               "linear " + w->name + ": x has " + std::to_string(x.cols) + " columns, out " +
                   std::to_string(out.cols) + ", weight is [" + std::to_string(w->out_features) +
                   ", " + std::to_string(w->in_features) + "]");
  check_rows(x, rows, "linear");
  HEARTH_CHECK(out.data != nullptr && out.rows >= rows, "linear: output rows");
  HEARTH_CHECK(out.dtype == options_.activation_dtype || out.dtype == DType::kF32,
               "linear: output dtype");
  if (rows <= 0) return;
  const int64_t n = w->out_features;
  const int64_t k = w->in_features;
  HEARTH_CHECK(!rows_overlap(x, out, rows), "linear " + w->name + ": output overlaps the input");
  // One row, or the rows of one sequence's speculative check (exact_check_rows): the CUDA-core row
  // GEMV, which gives every row the bits of a one-row step. A few rows (up to gemv_max_rows, off by
  // default), or up to dense_invariant_max_rows rows one included: the tensor-core GEMV.
  // Otherwise cuBLAS.
  const bool aligned = (reinterpret_cast<uintptr_t>(x.data) & 15u) == 0;
  auto tensor_core_gemv = [&] {
    return kernels::gemv_supported(n, k, rows) &&
           kernels::gemv_partial_floats(n, k, rows, info_.multiprocessors) * sizeof(float) <=
               kMaxGemvScratchBytes;
  };
  // (In the invariant mode a row the tensor-core GEMV cannot take goes to cuBLAS, not the row
  // GEMV, so that every queued one-row linear is the tensor-core GEMV's.)
  const bool check_rows = options_.exact_check_rows && prepared_.check && prepared_.one_sequence &&
                          rows <= kernels::kGemvRowsMaxRows;
  const bool row_kernel =
      options_.dense_invariant_max_rows < 1 && (rows == 1 || check_rows) && k % 8 == 0 && aligned;
  const bool gemv =
      row_kernel || (rows <= std::max(options_.dense_invariant_max_rows, options_.gemv_max_rows) &&
                     tensor_core_gemv());
  if (!gemv) {
    flush_linears();
    linear_cublas(*w, x, out);
    return;
  }
  if (!pending_.empty()) {
    bool joins = pending_x_.data == x.data && pending_x_.rows == rows &&
                 pending_x_.cols == x.cols && pending_x_.dtype == x.dtype &&
                 pending_row_kernel_ == row_kernel &&
                 pending_.size() < static_cast<size_t>(kernels::kGemvMaxMatrices);
    for (const PendingLinear& p : pending_) joins = joins && !rows_overlap(p.out, out, rows);
    if (!joins) flush_linears();
  }
  pending_x_ = x;
  pending_row_kernel_ = row_kernel;
  pending_.push_back({w, out.first_rows(rows)});
}

void CudaBackend::flush_linears() {
  flush_rope();
  flush_quant_linears();
  flush_norm();
  flush_dense_linears();
}

void CudaBackend::drop_pending() {
  pending_.clear();
  pending_quant_.clear();
  pending_rope_.reset();
  pending_norm_.reset();
  pending_quant_norm_.reset();
}

bool CudaBackend::fold_norm(const DeviceTensor& residual, const DeviceTensor& delta,
                            const float* weight, float eps, const DeviceTensor& out) {
  // The queued linear must be the only one, write exactly `delta`, in fp16, for every row.
  if (residual.rows > std::min<int64_t>(options_.fold_norm_max_rows, kernels::kQuantGemmMaxRows) ||
      pending_quant_.size() != 1 || pending_norm_ || pending_quant_norm_ || pending_rope_ ||
      !pending_.empty()) {
    return false;
  }
  PendingQuantLinear& producer = pending_quant_.front();
  const int64_t rows = residual.rows;
  const bool fits = producer.out.data == delta.data && producer.out.rows == rows &&
                    delta.rows == rows && out.rows == rows && residual.dtype == DType::kF16 &&
                    delta.dtype == DType::kF16 && out.dtype == DType::kF16 &&
                    producer.out.dtype == DType::kF16 && !rows_overlap(residual, delta, rows) &&
                    !rows_overlap(residual, out, rows) && !rows_overlap(delta, out, rows) &&
                    !rows_overlap(pending_quant_x_, residual, rows);
  if (!fits) return false;
  producer.residual = residual;
  producer.norm_eps = eps;
  pending_norm_ = PendingNorm{residual, out, weight, eps};
  return true;
}

void CudaBackend::flush_norm() {
  if (!pending_norm_) return;
  flush_quant_linears();  // the linear that adds into the residual
  const PendingNorm n = *pending_norm_;
  pending_norm_.reset();
  check_launch(kernels::rms_norm(launch(), to_elem(n.residual.dtype), n.residual.data, n.weight,
                                 n.eps, n.residual.rows, n.residual.cols, n.out.data),
               "rms_norm");
}

void CudaBackend::flush_dense_linears() {
  if (pending_.empty()) return;
  std::vector<kernels::GemvOutput> outputs;
  const int64_t rows = pending_x_.rows;
  const int64_t k = pending_x_.cols;
  for (const PendingLinear& p : pending_) {
    kernels::GemvOutput o;
    o.w = p.weight->weight.get();
    o.bias = p.weight->bias ? p.weight->bias.as<float>() : nullptr;
    o.out = p.out.data;
    o.out_type = to_elem(p.out.dtype);
    o.n = p.weight->out_features;
    outputs.push_back(o);
  }
  const kernels::Elem t = to_elem(pending_.front().weight->dtype);
  const void* x = pending_x_.data;
  const int count = static_cast<int>(outputs.size());
  pending_.clear();
  if (pending_row_kernel_) {
    check_launch(kernels::gemv_row(launch(), t, outputs.data(), count, x, rows, k,
                                   options_.row_gemv_variant),
                 "gemv_row");
    return;
  }
  // The tensor-core GEMV's split-K scratch (the row GEMV needs none).
  size_t partials = 0, counters = 0;
  for (const kernels::GemvOutput& o : outputs) {
    partials += kernels::gemv_partial_floats(o.n, k, rows, info_.multiprocessors);
    counters += kernels::gemv_counters(o.n);
  }
  ensure_gemv_scratch(partials, counters);
  const kernels::GemvScratch scratch{gemv_partials_.as<float>(), gemv_counters_.as<int32_t>()};
  check_launch(kernels::gemv_group(launch(), t, outputs.data(), count, x, rows, k, scratch),
               "gemv");
}

void CudaBackend::linear_cublas(const CudaLinearWeight& w, const DeviceTensor& x,
                                const DeviceTensor& out) {
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const int n = static_cast<int>(w.out_features);
  const int k = static_cast<int>(w.in_features);
  const int rows = static_cast<int>(x.rows);
  // Column-major view: out^T [N, R] = W [N, K] (stored as K×N, transposed) · x^T [K, R].
  check_cublas(cuda::cublas().GemmEx(
                   cublas_, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &alpha, w.weight.get(),
                   cublas_type(w.dtype), k, x.data, cublas_type(x.dtype), k, &beta, out.data,
                   cublas_type(out.dtype), n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               ("matrix product of " + w.name).c_str());
  if (w.bias) {
    check_launch(
        kernels::add_bias(launch(), to_elem(out.dtype), out.data, w.bias.as<float>(), rows, n),
        "add_bias");
  }
}

void CudaBackend::rope(DeviceTensor q, DeviceTensor k, const RopeParams& params) {
  flush_linears();
  HEARTH_CHECK(params.inv_freq != nullptr, "rope: no frequency table");
  const CudaTensorWeight& inv = tensor_weight(*params.inv_freq, "rope");
  HEARTH_CHECK(params.head_dim > 0 && params.rotary_dim <= params.head_dim &&
                   params.rotary_dim % 2 == 0 && inv.shape.size() == 1 &&
                   inv.shape[0] * 2 >= params.rotary_dim,
               "rope: parameters");
  HEARTH_CHECK(q.cols % params.head_dim == 0 && k.cols % params.head_dim == 0, "rope: shapes");
  HEARTH_CHECK(q.rows == k.rows && q.rows <= prepared_.padded_tokens, "rope: rows");
  check_rows(q, q.rows, "rope");
  check_rows(k, k.rows, "rope");
  const PendingRope r{q,
                      k,
                      inv.buffer.as<float>(),
                      params.attention_factor,
                      static_cast<int>(params.head_dim),
                      static_cast<int>(params.rotary_dim)};
  // In a decode step the attention that follows can rotate q and k as it reads them: one pass
  // less per layer. Any other op launches the rotation first (flush_rope).
  if (options_.fuse_decode_rope && prepared_.decode && !prepared_.check &&
      kernels::attention_decode_rope_supported(r.head_dim, r.rotary_dim)) {
    pending_rope_ = r;
    return;
  }
  launch_rope(r);
}

void CudaBackend::launch_rope(const PendingRope& r) {
  check_launch(kernels::rope(launch(), to_elem(r.q.dtype), r.q.data, r.q.cols, r.k.data, r.k.cols,
                             r.q.rows, batch_view().positions, r.inv_freq, r.attention_factor,
                             r.head_dim, r.rotary_dim),
               "rope");
}

void CudaBackend::flush_rope() {
  if (!pending_rope_) return;
  const PendingRope r = *pending_rope_;
  pending_rope_.reset();
  launch_rope(r);
}

void CudaBackend::attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& storage,
                            const AttentionParams& p, DeviceTensor out) {
  std::optional<PendingRope> rope = std::exchange(pending_rope_, std::nullopt);
  flush_linears();
  auto* cache = dynamic_cast<CudaKvCache*>(&storage);
  HEARTH_CHECK(cache != nullptr, "attention: cache is not a CUDA cache");
  const KvCacheSpec& spec = cache->spec();
  HEARTH_CHECK(p.head_dim == spec.head_dim && p.num_kv_heads == spec.num_kv_heads &&
                   p.num_heads > 0 && p.num_heads % p.num_kv_heads == 0,
               "attention: heads do not match the cache");
  HEARTH_CHECK(p.layer >= 0 && p.layer < spec.num_layers, "attention: layer out of range");
  HEARTH_CHECK(q.cols == p.num_heads * p.head_dim && k.cols == p.num_kv_heads * p.head_dim &&
                   v.cols == k.cols && out.cols == q.cols,
               "attention: shapes");
  const int64_t rows = prepared_.padded_tokens;
  check_rows(q, rows, "attention");
  check_rows(k, rows, "attention");
  check_rows(v, rows, "attention");
  check_rows(out, rows, "attention");
  if (prepared_.max_page >= spec.num_pages) {
    fail(ErrorCode::kInvalidArgument, "page " + std::to_string(prepared_.max_page) +
                                          " is beyond the cache's " +
                                          std::to_string(spec.num_pages) + " pages");
  }
  if (kv_page_size_ != spec.page_size) {
    // Page tables were not checked against this cache's page size in prepare_batch.
    HEARTH_CHECK(!capturing(), "attention: cache changed during capture");
  }
  const kernels::KvLayerView view = cache->layer(p.layer);
  const kernels::BatchView batch = batch_view();
  const kernels::Elem elem = to_elem(q.dtype);
  const int heads = static_cast<int>(p.num_heads);
  const bool fast = kernels::attention_fast_supported(static_cast<int>(p.head_dim), heads,
                                                      static_cast<int>(p.num_kv_heads));
  const bool decode = prepared_.decode && fast;
  const bool quantized = view.bits != 16;
  if (quantized && !fast) {
    fail(ErrorCode::kUnsupported,
         "a quantized KV cache needs heads of 64 or 128 dims and at most 8 query heads per kv "
         "head");
  }
  kernels::DecodeRope fused;
  if (decode && rope && rope->q.data == q.data && rope->k.data == k.data &&
      rope->q.rows == q.rows && rope->head_dim == p.head_dim) {
    fused = {rope->inv_freq, rope->attention_factor, rope->rotary_dim};
    rope.reset();
  }
  if (rope) launch_rope(*rope);  // not for this attention's kernel: run it as recorded
  if (decode) {
    ensure_decode_scratch(
        kernels::decode_partial_floats(batch.num_seqs, heads, static_cast<int>(p.head_dim)),
        static_cast<size_t>(batch.num_seqs) * static_cast<size_t>(p.num_kv_heads));
    const kernels::DecodeScratch scratch{decode_partials_.as<float>(),
                                         decode_counters_.as<int32_t>()};
    // A check batch's rows read the keys of the rows before them: all are stored first (the
    // kernel's own store of each row's key then writes the same bytes again).
    if (prepared_.check) {
      check_launch(kernels::kv_store(launch(), elem, k.data, v.data, batch, view), "kv_store");
    }
    kernels::DecodeShape shape;
    shape.one_sequence = prepared_.check ? prepared_.one_sequence : batch.num_seqs == 1;
    shape.keys_stored_this_step = prepared_.check;
    shape.blocks_per_sm = options_.decode_attention_blocks_per_sm;
    shape.tensor_cores = options_.decode_attention_tensor_cores;
    check_launch(kernels::attention_decode(launch(), elem, q.data, k.data, v.data, batch, view,
                                           heads, p.scale, out.data, scratch, shape, fused),
                 "attention_decode");
    return;
  }
  check_launch(kernels::kv_store(launch(), elem, k.data, v.data, batch, view), "kv_store");
  if (quantized) {  // the kernel works in the rotated space of the cache (H = H⁻¹)
    check_launch(
        kernels::hadamard_heads(launch(), elem, q.data, rows, q.cols, static_cast<int>(p.head_dim)),
        "hadamard_heads");
  }
  if (fast) {
    // Whether blocks of `rows` rows would fill over half the GPU (else blocks of half as many
    // rows finish sooner).
    const auto fill = [&](int rows) {
      const int64_t blocks = kernels::attention_prefill_row_blocks(
                                 {rows / 16, 1}, static_cast<int>(prepared_.max_q_len),
                                 heads / static_cast<int>(p.num_kv_heads)) *
                             p.num_kv_heads * batch.num_seqs;
      return 2 * blocks > info_.multiprocessors;
    };
    kernels::PrefillBlock block{options_.attention_warps, options_.attention_warp_tiles};
    if (options_.attention_warpgroup_mma && !quantized) {
      block.warpgroup_mma = true;
      if (block.warp_tiles == 0) block.warps = fill(128) ? 8 : 4;  // 2 or 1 warpgroups
      block.warp_tiles = 1;
    } else if (block.warp_tiles == 0) {
      block.warp_tiles = fill(16 * 2 * block.warps) ? 2 : 1;
    }
    check_launch(kernels::attention_prefill(launch(), elem, q.data, batch, view, heads, p.scale,
                                            static_cast<int>(prepared_.max_q_len), out.data, block),
                 "attention_prefill");
    if (quantized) {
      check_launch(kernels::hadamard_heads(launch(), elem, out.data, rows, out.cols,
                                           static_cast<int>(p.head_dim)),
                   "hadamard_heads");
    }
  } else {
    check_launch(
        kernels::attention_generic(launch(), elem, q.data, batch, view, heads, p.scale, out.data),
        "attention_generic");
  }
}

void CudaBackend::silu_mul(DeviceTensor gate, DeviceTensor up, DeviceTensor out) {
  flush_linears();
  HEARTH_CHECK(gate.cols == up.cols && gate.cols == out.cols, "silu_mul: shapes");
  check_rows(gate, gate.rows, "silu_mul");
  check_rows(up, gate.rows, "silu_mul");
  check_rows(out, gate.rows, "silu_mul");
  check_launch(kernels::silu_mul(launch(), to_elem(gate.dtype), gate.data, up.data, out.data,
                                 gate.rows * gate.cols),
               "silu_mul");
}

void CudaBackend::gather_logit_rows(DeviceTensor x, DeviceTensor out) {
  flush_linears();
  HEARTH_CHECK(x.cols == out.cols && x.dtype == out.dtype, "gather_logit_rows: shapes");
  HEARTH_CHECK(out.rows <= prepared_.padded_logit_rows, "gather_logit_rows: too many rows");
  check_rows(x, prepared_.padded_tokens, "gather_logit_rows");
  check_rows(out, out.rows, "gather_logit_rows");
  check_launch(kernels::gather_rows(launch(), to_elem(x.dtype), x.data, x.cols,
                                    batch_view().logit_rows, out.rows, out.data),
               "gather_logit_rows");
}

}  // namespace hearth::cuda
