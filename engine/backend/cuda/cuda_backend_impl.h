// Internal declaration of the CUDA backend; its parts are implemented across cuda_*.cpp.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/dequant_slots.h"
#include "engine/backend/cuda/device_memory.h"
#include "kernels/kernels.h"
#include "kernels/quant_kernels.h"

namespace hearth::cuda {

class CudaBackend;

kernels::Elem to_elem(DType dtype);  // F16 / BF16 / F32, else throws kUnsupported

// Captured graphs hold raw device pointers. Whatever frees memory a graph may use (a weight, a
// cache, grown scratch) advances this counter, and the backend drops its graphs when it moved.
using GraphEpoch = std::shared_ptr<std::atomic<uint64_t>>;

class EpochOnDestroy {
 public:
  explicit EpochOnDestroy(GraphEpoch epoch) : epoch_(std::move(epoch)) {}
  ~EpochOnDestroy() {
    if (epoch_) ++*epoch_;
  }
  EpochOnDestroy(const EpochOnDestroy&) = delete;
  EpochOnDestroy& operator=(const EpochOnDestroy&) = delete;

 private:
  GraphEpoch epoch_;
};

// Norm weights and rope tables (1-D) are kept in f32; embedding tables (2-D) in the activation
// dtype.
class CudaTensorWeight final : public BackendWeight {
 public:
  explicit CudaTensorWeight(GraphEpoch epoch) : on_destroy(std::move(epoch)) {}
  size_t device_bytes() const override { return buffer.size(); }
  EpochOnDestroy on_destroy;
  DeviceBuffer buffer;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

// A linear layer [out_features, in_features]. Dense fp16/bf16 today; quantized formats (EXL2,
// GPTQ) will keep their packed tensors in further members and pick their kernel in linear().
class CudaLinearWeight final : public BackendWeight {
 public:
  explicit CudaLinearWeight(GraphEpoch epoch) : on_destroy(std::move(epoch)) {}
  size_t device_bytes() const override { return weight.size() + bias.size(); }
  EpochOnDestroy on_destroy;
  std::string name;
  DeviceBuffer weight;  // [N, K] in the activation dtype
  DeviceBuffer bias;    // [N] f32, or empty
  int64_t out_features = 0;
  int64_t in_features = 0;
  DType dtype = DType::kF16;
};

// The paged KV pool. Page-major: page p holds, layer after layer, [keys | values], each
// [num_kv_heads][page_size][head_dim] (see kernels::KvLayerView). A page of every layer is one
// contiguous block, so copying or evicting a page is one memcpy; quantized caches will add
// their scales inside the same per-layer block.
class CudaKvCache final : public KvCacheStorage {
 public:
  // Copies run on `stream` (the backend's), so they are ordered with its forward passes.
  // `key_offsets`: quantized caches, layers × kv heads × head_dim floats, cleared.
  CudaKvCache(GraphEpoch epoch, const KvCacheSpec& spec, DeviceBuffer pool,
              DeviceBuffer key_offsets, kernels::Elem elem, int device, cudaStream_t stream);
  const KvCacheSpec& spec() const override { return spec_; }
  kernels::KvLayerView layer(int64_t index) const;
  kernels::Elem elem() const { return elem_; }
  bool copies_positions() const override { return true; }
  void copy_positions(int32_t from, int32_t to, int64_t count) override;
  bool offsets_keys() const override { return is_quantized(spec_.type); }
  void set_key_offsets(std::span<const float> offsets) override;
  std::vector<float> mean_keys(std::span<const int32_t> pages, int64_t begin,
                               int64_t end) const override;

 private:
  EpochOnDestroy on_destroy_;
  KvCacheSpec spec_;
  DeviceBuffer pool_;
  // Read by the kernels that store keys (captured graphs keep the address: it never moves);
  // zeros until set_key_offsets(), which subtracting leaves the keys' bits as they were.
  DeviceBuffer key_offsets_;
  std::vector<float> host_offsets_;  // what key_offsets_ holds; empty while zeros
  kernels::Elem elem_;
  int device_;
  cudaStream_t stream_;
};

// The batch as prepared, on the host side (sizes the ops need when they are issued).
struct PreparedLayout {
  int64_t tokens = 0;         // real
  int64_t seqs = 0;           // real
  int64_t logit_rows = 0;     // real
  int64_t padded_tokens = 0;  // T the ops run over
  int64_t padded_seqs = 0;
  int64_t padded_logit_rows = 0;
  int64_t max_q_len = 0;
  int64_t max_kv_len = 0;
  bool decode = false;
  // A check batch (CudaBackendOptions::check_slice_max_tokens): decode rows, one per token,
  // whose keys and values are stored before the attention (rows of a sequence read each other's).
  bool check = false;
  bool one_sequence = false;  // every row belongs to one sequence
  bool adapters = false;      // some row weighs an adapter (adapter_rows_device_ is filled)
  uint32_t active_slots = 0;  // bit s: some row weighs adapter slot s (part of the graph key)
  int64_t max_page = -1;      // largest page id used (validated against the cache in attention)
  std::optional<int64_t> graph_key;
};

// Thrown by scratch growth while a graph is being captured; run() then runs the step directly.
struct CaptureInvalidated : std::exception {
  const char* what() const noexcept override { return "scratch grew during graph capture"; }
};

// Whether the first `rows` rows of a and b share any byte (a linear's output must not overlap its
// input, nor another output of the same grouped launch).
bool rows_overlap(const DeviceTensor& a, const DeviceTensor& b, int64_t rows);

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& options);
  ~CudaBackend() override;

  std::string name() const override { return name_; }
  DType activation_dtype() const override { return options_.activation_dtype; }

  std::unique_ptr<BackendWeight> upload(const HostTensor& tensor) override;
  std::unique_ptr<BackendWeight> upload_linear(const LinearSource& source) override;
  std::unique_ptr<BackendWeight> upload_lora(const LoraSource& source) override;
  DeviceTensor alloc_activation(int64_t rows, int64_t cols) override;
  std::unique_ptr<KvCacheStorage> create_kv_cache(const KvCacheSpec& spec) override;
  MemoryUsage memory_usage() const override;

  PreparedBatch prepare_batch(const BatchDesc& batch) override;
  void run(const std::function<void()>& record, std::optional<int64_t> graph_key) override;

  bool embeds_packed(const QuantizedWeight& table) const override;
  void embed(const BackendWeight& table, DeviceTensor out) override;
  void rms_norm(DeviceTensor x, const BackendWeight& w, float eps, DeviceTensor out) override;
  void add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w, float eps,
                    DeviceTensor out) override;
  void linear(const BackendWeight& w, DeviceTensor x, DeviceTensor out) override;
  void linears(std::span<const BackendWeight* const> weights, DeviceTensor x,
               std::span<const DeviceTensor> outs) override;
  void rope(DeviceTensor q, DeviceTensor k, const RopeParams& params) override;
  void attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& cache,
                 const AttentionParams& params, DeviceTensor out) override;
  void lora(const BackendWeight& lora, DeviceTensor x, std::span<const DeviceTensor> outs) override;
  void silu_mul(DeviceTensor gate, DeviceTensor up, DeviceTensor out) override;
  void silu_mul_linear(DeviceTensor gate, DeviceTensor up, const BackendWeight& w, DeviceTensor out,
                       bool keep_activation) override;
  void gather_logit_rows(DeviceTensor x, DeviceTensor out) override;
  void receive(Backend& from, DeviceTensor src, DeviceTensor dst, int64_t rows) override;

  bool reads_host_weights() const override { return false; }
  void read_into(DeviceTensor t, int64_t rows, std::span<float> out) override;
  double squared_distance(DeviceTensor a, DeviceTensor b, int64_t rows) override;
  std::vector<int32_t> sample(DeviceTensor logits,
                              std::span<const SampleRequest> requests) override;

  // --- beyond the interface (benchmarks, tests) ---
  const CudaDeviceInfo& device_info() const { return info_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  int device() const { return options_.device; }
  void set_pdl(bool on);
  bool pdl() const { return launch_.pdl; }
  void set_cuda_graphs(bool on);
  void set_gemv_max_rows(int64_t rows) { options_.gemv_max_rows = rows; }
  void set_lora_kernel_max_rows(int64_t rows) {
    options_.lora_kernel_max_rows = rows;
    invalidate_graphs();
  }
  void set_lora_fold_max_rows(int64_t rows) {
    options_.lora_fold_max_rows = rows;
    invalidate_graphs();
  }
  void set_dequant_slice_bytes(size_t bytes) { options_.dequant_slice_bytes = bytes; }
  void set_dequant_overlap(bool on) { options_.dequant_overlap = on; }
  bool dequant_overlap() const { return options_.dequant_overlap; }
  // How many lora() calls were folded into quantized linears' launches (tests, benchmarks).
  int64_t folded_loras() const { return folded_loras_; }
  GraphStats graph_stats() const override { return graph_stats_; }
  // While one lives, steps recorded here take the paths a graph capture takes, so that a graph
  // key's direct warm-up step grows the buffers its capture will use. run() holds one for its
  // graph keys; the tensor-parallel backend, which captures its ranks' streams itself, one per
  // rank.
  class GraphStepScope {
   public:
    explicit GraphStepScope(CudaBackend& b) : b_(b) { b_.graph_step_ = true; }
    ~GraphStepScope() { b_.graph_step_ = false; }
    GraphStepScope(const GraphStepScope&) = delete;
    GraphStepScope& operator=(const GraphStepScope&) = delete;

   private:
    CudaBackend& b_;
  };
  void set_attention_block(int warps, int warp_tiles) {
    options_.attention_warps = warps == 8 ? 8 : 4;
    options_.attention_warp_tiles = warp_tiles == 1 || warp_tiles == 2 ? warp_tiles : 0;
  }
  int attention_warps() const { return options_.attention_warps; }
  int attention_warp_tiles() const { return options_.attention_warp_tiles; }
  // On only where the device runs sm_90a code; returns whether it is on.
  bool set_attention_warpgroup_mma(bool on) {
    options_.attention_warpgroup_mma = on && kernels::wgmma_supported();
    return options_.attention_warpgroup_mma;
  }
  bool attention_warpgroup_mma() const { return options_.attention_warpgroup_mma; }
  void set_row_gemv_variant(int v) {
    options_.row_gemv_variant = v == 1 ? 1 : 0;
    invalidate_graphs();
  }
  int row_gemv_variant() const { return options_.row_gemv_variant; }
  void set_dense_invariant_max_rows(int64_t rows) {
    options_.dense_invariant_max_rows = rows;
    invalidate_graphs();
  }
  int64_t dense_invariant_max_rows() const { return options_.dense_invariant_max_rows; }
  // Drops every captured graph (buffers they point to changed or went away).
  void invalidate_graphs();
  // --- for a tensor-parallel backend driving several of these (cuda_tensor_parallel.cpp) ---
  // Launches the ops queued for fusion (an all-reduce is about to read their outputs).
  void flush_queued();
  // Forgets the queued ops (a capture that failed).
  void abandon_queued();
  // Sums every device's `t` in place by the peer kernel (kernels::all_reduce_peers), after the
  // queued ops that produce it.
  void all_reduce_peers(DeviceTensor t, const kernels::AllReducePeers& peers);
  // add_rms_norm() of the sum over the devices of `delta` (this device's partial result), in one
  // kernel with the all-reduce (kernels::all_reduce_add_rms_norm_peers); false, and nothing
  // done, where that kernel does not take the shape.
  bool all_reduce_add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w,
                               float eps, DeviceTensor out, const kernels::AllReducePeers& peers);
  // Advances whenever memory a captured graph may use is freed or moved.
  uint64_t graph_epoch() const { return epoch_->load(); }
  void synchronize();
  // Allocates a device buffer counted as workspace (benchmarks).
  DeviceBuffer alloc_workspace(size_t bytes, const std::string& what);

 private:
  kernels::Launch launch() const { return launch_; }
  kernels::Launch launch_plain() const { return {stream_, false, info_.multiprocessors}; }
  kernels::BatchView batch_view() const;
  void check_rows(const DeviceTensor& t, int64_t rows, const char* op) const;
  void ensure_gemv_scratch(size_t partial_floats, size_t counters);
  void ensure_decode_scratch(size_t partial_floats, size_t counters);
  void ensure_meta_capacity(int64_t tokens, int64_t seqs, int64_t logit_rows, int64_t pages);
  bool capturing() const;
  void grow_guard() const;  // throws CaptureInvalidated while capturing: scratch must not move
  // Reallocates `buffer` (contents not kept) when it holds fewer than `bytes`.
  void grow_workspace(DeviceBuffer& buffer, size_t bytes, const char* what);
  void release() noexcept;
  void drop_stale_graphs();

  // Weight streaming (cuda_upload.cpp).
  void stream_to_device(const void* src, DType src_dtype, int64_t count, void* dst, DType dst_dtype,
                        const std::string& what);
  void stream_quantized(const QuantizedWeight& q, void* dst, const std::string& what);

  void linear_cublas(const CudaLinearWeight& w, const DeviceTensor& x, const DeviceTensor& out);
  // Consecutive GEMV-sized linears that read the same x are launched together (q, k, v;
  // gate, up): linear() queues them, and every other op launches the queue first.
  void flush_linears();  // every queued op: the rope, quantized linears, the norm, dense linears
  void drop_pending();   // forgets every queued op (a failed capture)
  void flush_dense_linears();  // the queued dense ones

  // A decode step's rope waits for the attention after it, which applies it (flush_rope launches it
  // otherwise).
  struct PendingRope {
    DeviceTensor q, k;
    const float* inv_freq;
    float attention_factor;
    int head_dim, rotary_dim;
  };
  std::optional<PendingRope> pending_rope_;
  void launch_rope(const PendingRope& r);
  void flush_rope();

  // EXL2 / GPTQ linear layers (defined in engine/backend/cuda/cuda_quant_linear.cpp).
  std::unique_ptr<BackendWeight> upload_quantized_linear(const LinearSource& source);
  // With `up`, x is the MLP's gate and the input multiplied is silu(x) · up, computed while it is
  // gathered into the weights' row order (only where linear_gathers_x says the path gathers).
  void linear_quantized(const BackendWeight& w, const DeviceTensor& x, const DeviceTensor& out,
                        const DeviceTensor* up = nullptr);
  // Whether `rows` rows of x take the fused kernels (kernels::quant_gemm_group) for m.
  bool quant_rows_fused(const kernels::QuantMatrix& m, int64_t rows) const;
  // Whether `rows` rows that the fused kernels do not take run the packed-tile product
  // (kernels::quant_mma_gemm) rather than fp16 weights and cuBLAS.
  bool quant_rows_on_product(int64_t rows) const;
  // Whether linear_quantized gathers x into w's stored row order for `rows` rows.
  bool linear_gathers_x(const BackendWeight& w, int64_t rows) const;
  // Quantized linears of a few rows wait here while the next ones read the same x (q/k/v,
  // gate/up): one launch serves them all (kernels::quant_gemm_group).
  void flush_quant_linears();
  // lora() on the outputs of the queued quantized linears, from their x: folded into their
  // launch when it fits (kernels::QuantGemmLora); false otherwise.
  bool fuse_lora(const BackendWeight& lora, const DeviceTensor& x,
                 std::span<const DeviceTensor> outs);
  // embed() from a quantized linear's table; false when `table` is not one.
  bool embed_quantized(const BackendWeight& table, DeviceTensor out);
  // add_rms_norm after a queued quantized linear of its delta: that linear adds into the residual
  // (flush_quant_linears), and the norm waits for the quantized linears reading `out`, which
  // normalize as they stage x. Any other op runs the norm as a pass first (flush_norm).
  struct PendingNorm {
    DeviceTensor residual, out;
    const float* weight;
    float eps;
  };
  std::optional<PendingNorm> pending_norm_;        // not yet taken by a linear
  std::optional<PendingNorm> pending_quant_norm_;  // normalizes the queued linears' x
  bool fold_norm(const DeviceTensor& residual, const DeviceTensor& delta, const float* weight,
                 float eps, const DeviceTensor& out);
  void flush_norm();
  // The rows' inverse RMS (and the producer's sums of squares) between the folded linears.
  DeviceBuffer fold_norm_scratch_;
  DeviceBuffer quant_dequant_;  // the large-batch path's fp16 weights, or quant_mma_gemm's partials
  // The same weights when CudaBackendOptions::dequant_overlap writes them on a side stream.
  DequantSlots dequant_slots_;
  std::array<DeviceBuffer, DequantSlots::kSlots> dequant_slot_buffers_;
  DeviceBuffer quant_x_;  // its x in the weights' stored row order
  // Inside linears(): which x quant_x_ holds, in which matrix's row order, so that the next
  // matrix of the same order (q, k and v of a reference quantizer's file share one) reuses it.
  struct GatheredX {
    const void* x = nullptr;
    int64_t rows = 0;
    const BackendWeight* order = nullptr;
  };
  bool share_x_gathers_ = false;
  GatheredX gathered_x_;
  DeviceBuffer quant_staged_x_;  // x of the fused quantized linears in their staging order
  DeviceBuffer quant_lora_t_;    // their folded LoRAs' slice projections (fp32)

  CudaBackendOptions options_;
  CudaDeviceInfo info_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  kernels::Launch launch_;
  std::shared_ptr<MemoryCounters> counters_ = std::make_shared<MemoryCounters>();
  GraphEpoch epoch_ = std::make_shared<std::atomic<uint64_t>>(0);

  DeviceBuffer cublas_workspace_;
  DeviceBuffer gemv_partials_;
  DeviceBuffer gemv_counters_;
  DeviceBuffer decode_partials_;
  DeviceBuffer decode_counters_;
  std::vector<DeviceBuffer> activations_;

  // Batch metadata: one int32 block with regions at offsets fixed by the capacities (so graphs
  // keep pointing at the right places), filled in a pinned slot and copied in one transfer.
  struct MetaLayout {
    int64_t tokens = 0, seqs = 0, logit_rows = 0, pages = 0;  // capacities
    size_t tokens_at = 0, positions_at = 0, token_seq_at = 0, q_start_at = 0, kv_len_at = 0,
           seq_pages_at = 0, logit_rows_at = 0, pages_at = 0, total = 0;  // int32 offsets
  };
  MetaLayout meta_;
  DeviceBuffer meta_device_;
  std::array<PinnedBuffer, 2> meta_host_;
  // [tokens][kMaxLoraSlots] floats, sent with the layout when the batch uses adapters.
  DeviceBuffer adapter_rows_device_;
  std::array<PinnedBuffer, 2> adapter_rows_host_;
  int64_t folded_loras_ = 0;
  DeviceBuffer lora_t_;      // the projections onto A, in the activation dtype
  DeviceBuffer lora_t_f32_;  // the same before weighting (cuBLAS path)
  std::array<cudaEvent_t, 2> meta_copied_{};
  int meta_slot_ = 0;
  PreparedLayout prepared_;

  // Upload staging: two pinned slots and two device slots (for conversions), with events.
  std::array<PinnedBuffer, 2> upload_host_;
  std::array<DeviceBuffer, 2> upload_device_;
  std::array<cudaEvent_t, 2> upload_done_{};

  // Layer split (cuda_handoff.cpp): recorded on this stream when another backend receives from
  // this one, and after a copy this one receives (the sender waits on it before reusing its rows).
  cudaEvent_t handoff_event_ = nullptr;
  std::set<int> peers_enabled_;  // devices whose memory this one's copies read directly
  void enable_peer_access(int peer);

  // Reads and sampling.
  PinnedBuffer read_host_;
  // Copies `bytes` from the device to read_host_ (grown as needed) and waits: the pinned buffer's
  // contents, valid until the next download.
  const void* download(const void* src, size_t bytes);
  DeviceBuffer read_device_;  // f32 copy of an fp16/bf16 tensor being read (converted on the GPU)
  DeviceBuffer distance_partials_;  // squared_distance's per-block sums
  DeviceBuffer sample_logits_;      // f32 [rows, vocab]
  DeviceBuffer sample_sorted_;      // f32 [rows, vocab]
  DeviceBuffer sample_ids_in_;
  DeviceBuffer sample_ids_out_;
  DeviceBuffer sample_offsets_;
  DeviceBuffer sample_scratch_;
  DeviceBuffer sample_small_;  // params, penalties, chosen ids
  PinnedBuffer sample_host_;
  DeviceBuffer sample_draft_;  // draft models' probabilities of the proposals a sample checks
  PinnedBuffer sample_draft_host_;

  struct PendingLinear {
    const CudaLinearWeight* weight;
    DeviceTensor out;
  };
  std::vector<PendingLinear> pending_;
  DeviceTensor pending_x_;
  bool pending_row_kernel_ = false;  // the queued linears run the row GEMV (else tensor-core)
  struct PendingQuantLinear {
    const BackendWeight* weight;
    DeviceTensor out;
    DeviceTensor residual = {};   // data set: out is also added into it (fold_norm)
    float norm_eps = 0.0f;        // and the rows' inverse RMS left for the next linears
    kernels::QuantGemmLora lora;  // cols set: a LoRA folded in (fuse_lora)
  };
  std::vector<PendingQuantLinear> pending_quant_;
  DeviceTensor pending_quant_x_;

  // CUDA graphs per key.
  struct Graph {
    cudaGraphExec_t exec = nullptr;
  };
  std::map<int64_t, Graph> graphs_;
  std::set<int64_t> warmed_keys_;
  uint64_t graphs_epoch_ = 0;  // the epoch the graphs were captured in
  bool graph_step_ = false;    // a GraphStepScope lives
  GraphStats graph_stats_;
  int64_t kv_page_size_ = 0;  // of the newest cache (for validating page tables)
  // Fewest rows of any activation buffer: decode batches are never padded beyond it, so the
  // padded rows always fit the caller's buffers (the logits buffer is usually the smallest).
  int64_t min_activation_rows_ = INT64_MAX;
};

}  // namespace hearth::cuda
