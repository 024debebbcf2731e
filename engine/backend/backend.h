// The interface the model's forward pass is written against. A backend owns device memory and
// runs ops asynchronously; only read() and sample() wait for results.
//
// Batches are packed: a forward pass covers several sequences, each contributing a slice of new
// tokens at its own cache position, all flattened into T rows ("tokens") of 2-D activations.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/sampling/sampling_params.h"

namespace hearth {

class QuantizedWeight;

// A 2-D tensor in a backend's memory: rows × cols, row-major, contiguous. A cheap view; the
// backend owns the storage.
struct DeviceTensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;

  DeviceTensor first_rows(int64_t n) const { return {data, dtype, n, cols}; }
  DeviceTensor row(int64_t i) const {
    return {static_cast<char*>(data) + static_cast<size_t>(i * cols) * dtype_size(dtype), dtype, 1,
            cols};
  }
  size_t nbytes() const { return static_cast<size_t>(rows * cols) * dtype_size(dtype); }
};

// Weights that live on a backend; opaque to the model.
class BackendWeight {
 public:
  virtual ~BackendWeight() = default;
  virtual size_t device_bytes() const = 0;
};

// How a tensor-parallel backend divides a linear over its devices (others ignore it): column
// parallel (each device computes some outputs) or row parallel (each device multiplies some
// inputs, and the devices' results are summed).
enum class LinearShard {
  kWhole,       // every device holds all of it (the head)
  kQHeads,      // column parallel by attention heads: q
  kKvHeads,     // column parallel by key/value heads: k, v
  kFromHeads,   // row parallel over the heads' outputs: o
  kMlpColumns,  // column parallel over the MLP's intermediate features: gate, up
  kFromMlp,     // row parallel over those features: down
};

// What a linear layer is made of, as read from the files.
struct LinearSource {
  std::string name;                                  // e.g. "model.layers.0.mlp.up_proj"
  HostTensor weight;                                 // dense [out, in], unless quantized
  std::optional<HostTensor> bias;                    // [out]
  std::shared_ptr<const QuantizedWeight> quantized;  // EXL2 / GPTQ weights, when quantized
  LinearShard shard = LinearShard::kWhole;
  // For the MLP's linears (kMlpColumns, kFromMlp): the layer's down projection when it is
  // quantized. A tensor-parallel backend numbers the MLP features in the order down stores its
  // rows, so that an act-order down divides into whole chunks.
  std::shared_ptr<const QuantizedWeight> mlp_down;
};

// One sequence's part of a forward pass.
struct SequenceSlice {
  std::span<const int32_t> tokens;      // new tokens, at positions start_pos, start_pos + 1, ...
  int32_t start_pos = 0;                // tokens already in this sequence's KV cache
  std::span<const int32_t> page_table;  // its cache pages in order, covering all positions
  bool all_logits = false;              // logits for every new token, not only the last
  // The weight this sequence gives each LoRA adapter slot (LoraPart::slot), at most
  // kMaxLoraSlots values; empty or all zero: the base model alone.
  std::span<const float> adapter_weights;
};

struct BatchDesc {
  std::vector<SequenceSlice> seqs;
  int64_t total_tokens() const;
  int64_t logit_rows() const;  // sum over sequences of (all_logits ? tokens : 1)
  bool is_decode() const;      // every sequence has exactly one new token
  bool uses_adapters() const;  // some sequence gives an adapter slot a weight other than 0
};

// Adapters active at once in a batch (each sequence weighs them on its own).
inline constexpr int kMaxLoraSlots = 8;

// One adapter's low-rank update of one linear: Δy = scale · B(A·x).
struct LoraPart {
  int target = 0;  // which of the op's outputs it adds to
  int slot = 0;    // the adapter slot (0..kMaxLoraSlots-1) whose per-sequence weight applies
  HostTensor a;    // F32 [rank, in_features]
  HostTensor b;    // F32 [out_features of the target, rank]
  float scale = 1.0f;
};

// The adapters of the linears that read one input (q, k and v; gate and up; o; down), so that
// one product projects the input for every adapter and target at once.
struct LoraSource {
  std::string name;  // for messages, e.g. "model.layers.3 q/k/v"
  int64_t in_features = 0;
  std::vector<int64_t> out_features;  // per target
  std::vector<LoraPart> parts;
};

// Sizes the backend chose for a batch: padded row counts that the ops run over (the first
// batch.total_tokens() / logit_rows() rows are real), and a graph key when the step may be
// captured and replayed.
struct PreparedBatch {
  int64_t tokens = 0;
  int64_t logit_rows = 0;
  std::optional<int64_t> graph_key;
};

// kF16/kF32: the backend's own element type (the CPU backend keeps f32, CUDA the activation
// dtype). kQ8/kQ6/kQ4: rotated and quantized rows (engine/backend/kv_cache_quant.h).
enum class KvCacheType { kF16, kF32, kQ8, kQ6, kQ4 };
int kv_cache_bits(KvCacheType type);  // 16, 32, 8, 6, 4
// "fp16", "fp32", "q8", "q6", "q4"; the parser takes fp16, q8, q6 and q4 (the choices users have).
const char* kv_cache_type_name(KvCacheType type);
std::optional<KvCacheType> parse_kv_cache_type(std::string_view name);
inline bool is_quantized(KvCacheType type) {
  return type != KvCacheType::kF16 && type != KvCacheType::kF32;
}

// The KV cache pool: for every layer, `num_pages` pages of `page_size` positions, each position
// holding num_kv_heads × head_dim keys and as many values.
struct KvCacheSpec {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t page_size = 256;
  int64_t num_pages = 0;
  KvCacheType type = KvCacheType::kF16;
  size_t bytes() const;  // total storage for keys and values of all layers
  // Keys and values of one token over all layers (codes and scales for quantized types, and
  // a page's share of the fp16 first keys of engine/backend/kv_cache_quant.h, rounded up).
  size_t bytes_per_token() const;
  size_t page_bytes() const;  // one page of every layer
};

class KvCacheStorage {
 public:
  virtual ~KvCacheStorage() = default;
  virtual const KvCacheSpec& spec() const = 0;
  // Whether copy_positions() works here (prefix reuse then copies the matching start of a
  // partly shared page instead of computing it again).
  virtual bool copies_positions() const { return false; }
  // Copies positions [0, count) of page `from` into page `to`: every layer's keys and values, as
  // stored (codes and scales for quantized caches). Throws Error(kUnsupported) where
  // copies_positions() is false, Error(kInvalidArgument) for pages or a count out of range.
  virtual void copy_positions(int32_t from, int32_t to, int64_t count);

  // Quantized caches may store every key less a fixed vector μ per (layer, kv head): attention
  // does not change, since each score of a query drops by the same q·μ and softmax ignores a
  // common shift, but keys whose large common part is taken out lose less to quantization.
  // Whether set_key_offsets() and mean_keys() work here.
  virtual bool offsets_keys() const { return false; }
  // μ for every layer and kv head, [layers][kv heads][head_dim] in the rotated space of
  // engine/backend/kv_cache_quant.h, for keys stored from now on (keys already stored keep
  // theirs: set it before any job runs). Throws Error(kUnsupported) where offsets_keys() is
  // false, Error(kInvalidArgument) for the wrong size or a value that is not finite.
  virtual void set_key_offsets(std::span<const float> offsets);
  // The mean stored key over positions [begin, end) of the sequence whose pages are `pages`,
  // rotated, as read back with its offset added: [layers][kv heads][head_dim].
  virtual std::vector<float> mean_keys(std::span<const int32_t> pages, int64_t begin,
                                       int64_t end) const;
};

// Rotary embedding of every position: angle = position × inv_freq[i], cos/sin scaled by
// attention_factor, rotate-half (NEOX) layout over the first rotary_dim dims of each head.
struct RopeParams {
  const BackendWeight* inv_freq = nullptr;  // F32 [rotary_dim / 2]
  float attention_factor = 1.0f;
  int64_t head_dim = 0;
  int64_t rotary_dim = 0;
};

struct AttentionParams {
  int64_t layer = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // softmax scale, usually head_dim^-0.5
};

struct MemoryUsage {
  size_t weights = 0;
  size_t kv_cache = 0;
  size_t activations = 0;
  size_t workspace = 0;
  size_t device_free = 0;   // whole device, now
  size_t device_total = 0;  // whole device

  // Adds another device's usage (several GPUs together).
  MemoryUsage& operator+=(const MemoryUsage& other) {
    weights += other.weights;
    kv_cache += other.kv_cache;
    activations += other.activations;
    workspace += other.workspace;
    device_free += other.device_free;
    device_total += other.device_total;
    return *this;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu (2 threads)", "cuda:0 NVIDIA H100 80GB HBM3"
  virtual DType activation_dtype() const = 0;

  // --- memory (all may throw Error(kOutOfMemory)) ---
  // Small tensors: norm weights, embedding tables, rope tables.
  virtual std::unique_ptr<BackendWeight> upload(const HostTensor& tensor) = 0;
  virtual std::unique_ptr<BackendWeight> upload_linear(const LinearSource& source) = 0;
  virtual std::unique_ptr<BackendWeight> upload_lora(const LoraSource& source) = 0;
  // Whether embed() can look rows up in this packed table as upload_linear() keeps it (rows
  // decoded as they are read): then one upload serves the embedding and a tied head.
  virtual bool embeds_packed(const QuantizedWeight& table) const {
    (void)table;
    return false;
  }
  // Whether weights uploaded from host tensors go on reading those tensors' bytes (the CPU
  // backend computes from them; keep_alive or the caller keeps them) or hold their own copy.
  virtual bool reads_host_weights() const { return true; }
  // An activation buffer that lives as long as the backend.
  virtual DeviceTensor alloc_activation(int64_t rows, int64_t cols) = 0;
  virtual std::unique_ptr<KvCacheStorage> create_kv_cache(const KvCacheSpec& spec) = 0;
  virtual MemoryUsage memory_usage() const = 0;

  // --- one forward pass ---
  // Sends the batch layout (ids, positions, offsets, page tables, logit rows) to the device.
  virtual PreparedBatch prepare_batch(const BatchDesc& batch) = 0;
  // Runs `record`, which issues the ops below for the prepared batch: directly, or, with a
  // graph key, captured once and replayed on later calls with the same key.
  virtual void run(const std::function<void()>& record, std::optional<int64_t> graph_key) = 0;
  // Graph keys captured so far, and captures abandoned because scratch had to grow (that step
  // then ran directly): a key whose captures keep being abandoned never replays (tests, benches).
  struct GraphStats {
    int64_t captured = 0, abandoned = 0;
  };
  virtual GraphStats graph_stats() const { return {}; }

  // --- ops over the prepared batch; T = prepared tokens, L = prepared logit rows ---
  // out[T, H] = table[token ids]; `table` from upload(), or from upload_linear() where
  // embeds_packed() said so.
  virtual void embed(const BackendWeight& table, DeviceTensor out) = 0;
  // out = x / rms(x) * w, per row
  virtual void rms_norm(DeviceTensor x, const BackendWeight& w, float eps, DeviceTensor out) = 0;
  // residual += delta; out = rms_norm(residual) * w
  virtual void add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w,
                            float eps, DeviceTensor out) = 0;
  // out[R, N] = x[R, K] · Wᵀ (+ bias), R = x.rows
  virtual void linear(const BackendWeight& w, DeviceTensor x, DeviceTensor out) = 0;
  // out_i = x · W_iᵀ for linears that read the same x (q, k and v; gate and up), in order. The
  // default calls linear() for each; a backend may share work on x between them (the CUDA
  // backend gathers x into an act-order matrix's row order once for matrices of the same order).
  virtual void linears(std::span<const BackendWeight* const> weights, DeviceTensor x,
                       std::span<const DeviceTensor> outs);
  // In place on q[T, heads × head_dim] and k[T, kv_heads × head_dim] at the batch positions.
  // A backend may leave the rotation to an attention() on the same q and k that follows at once
  // (the CUDA backend does in decode steps): the attention and the cache then see rotated values
  // while q's and k's own buffers keep the unrotated ones. Any op in between gets them rotated.
  virtual void rope(DeviceTensor q, DeviceTensor k, const RopeParams& params) = 0;
  // Stores k, v [T, kv_heads × head_dim] into the cache at the batch positions, then
  // out[T, heads × head_dim] = causal softmax(q·kᵀ·scale)·v over each sequence's cache.
  virtual void attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& cache,
                         const AttentionParams& params, DeviceTensor out) = 0;
  // outs[t] += Σ over the parts on target t of w · scale · (x·Aᵀ)·Bᵀ, row by row, w being the
  // weight the row's sequence gives the part's slot (SequenceSlice::adapter_weights).
  virtual void lora(const BackendWeight& lora, DeviceTensor x,
                    std::span<const DeviceTensor> outs) = 0;
  // out = silu(gate) * up
  virtual void silu_mul(DeviceTensor gate, DeviceTensor up, DeviceTensor out) = 0;
  // out = (silu(gate) * up) · Wᵀ: silu_mul() into gate, then linear() (the default). Without
  // keep_activation, nothing reads gate before it is written again, so a backend may put the
  // activation straight into the linear's input order and leave gate as it is (the CUDA backend
  // does for act-order quantized weights of many rows: the activation is then written once).
  virtual void silu_mul_linear(DeviceTensor gate, DeviceTensor up, const BackendWeight& w,
                               DeviceTensor out, bool keep_activation);
  // out[L, H] = x[logit rows]
  virtual void gather_logit_rows(DeviceTensor x, DeviceTensor out) = 0;

  // --- several backends (a model split by layers, one backend per GPU) ---
  // dst's first `rows` rows = src's, src being an activation of `from`, another backend of the
  // same kind (usually on another device). Ordered after everything `from` has issued and before
  // what this backend issues next; `from` leaves src alone until the copy is done. Called between
  // run()s, never inside one.
  virtual void receive(Backend& from, DeviceTensor src, DeviceTensor dst, int64_t rows) = 0;

  // --- results (these wait for the device) ---
  // The first `rows` rows of t, as float, into `out` (rows · t.cols floats): callers that read
  // the same shapes over and over keep one buffer instead of faulting in a new one each time.
  virtual void read_into(DeviceTensor t, int64_t rows, std::span<float> out) = 0;
  // Σ (a − b)² over the first `rows` rows of two tensors of one shape and dtype, summed in double
  // in a fixed order (the same value every time). The quantizer's measurement compares each
  // candidate's module output with the reference this way, without reading either back.
  virtual double squared_distance(DeviceTensor a, DeviceTensor b, int64_t rows) = 0;
  std::vector<float> read(DeviceTensor t, int64_t rows) {
    std::vector<float> out(static_cast<size_t>(rows * t.cols));
    read_into(t, rows, out);
    return out;
  }
  // One token per request, request i sampling from logits row i (a request with a proposal gets
  // the verdict of checking it, as sample_or_verify in engine/sampling/speculative_sampling.h).
  virtual std::vector<int32_t> sample(DeviceTensor logits,
                                      std::span<const SampleRequest> requests) = 0;
};

}  // namespace hearth
