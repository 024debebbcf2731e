#include "engine/backend/cuda/cuda_tensor_parallel.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/nccl_api.h"
#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"
#include "engine/core/quantized_weight.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quant_tile_shard.h"

namespace hearth {
namespace {

using cuda::CudaBackend;

bool is_row_parallel(LinearShard shard) {
  return shard == LinearShard::kFromHeads || shard == LinearShard::kFromMlp;
}

// One weight per device: a copy (replicated) or the device's shard.
class ShardedWeight final : public BackendWeight {
 public:
  size_t device_bytes() const override {
    size_t n = 0;
    for (const auto& p : parts) n += p->device_bytes();
    return n;
  }
  std::vector<std::unique_ptr<BackendWeight>> parts;
  LinearShard shard = LinearShard::kWhole;
};

const ShardedWeight& sharded(const BackendWeight& w) {
  const auto* s = dynamic_cast<const ShardedWeight*>(&w);
  HEARTH_CHECK(s != nullptr, "tensor parallel: a weight from another backend");
  return *s;
}

class ShardedKvCache final : public KvCacheStorage {
 public:
  ShardedKvCache(const KvCacheSpec& spec, std::vector<std::unique_ptr<KvCacheStorage>> parts)
      : spec_(spec), parts_(std::move(parts)) {}
  const KvCacheSpec& spec() const override { return spec_; }
  KvCacheStorage& part(int d) { return *parts_[static_cast<size_t>(d)]; }
  // Key offsets go to the parts by kv head, every layer's alike.
  bool offsets_keys() const override {
    return std::all_of(parts_.begin(), parts_.end(),
                       [](const auto& p) { return p->offsets_keys(); });
  }
  void set_key_offsets(std::span<const float> offsets) override {
    if (!offsets_keys()) KvCacheStorage::set_key_offsets(offsets);  // throws
    check_key_offsets(spec_, offsets);
    const int64_t D = spec_.head_dim, heads = spec_.num_kv_heads;
    int64_t first = 0;
    for (const auto& p : parts_) {
      const int64_t mine = p->spec().num_kv_heads;
      std::vector<float> part;
      for (int64_t layer = 0; layer < spec_.num_layers; ++layer) {
        const auto* at = offsets.data() + (layer * heads + first) * D;
        part.insert(part.end(), at, at + mine * D);
      }
      p->set_key_offsets(part);
      first += mine;
    }
  }
  std::vector<float> mean_keys(std::span<const int32_t> pages, int64_t begin,
                               int64_t end) const override {
    if (!offsets_keys()) return KvCacheStorage::mean_keys(pages, begin, end);  // throws
    const int64_t D = spec_.head_dim, heads = spec_.num_kv_heads;
    std::vector<float> all(static_cast<size_t>(spec_.num_layers * heads * D));
    int64_t first = 0;
    for (const auto& p : parts_) {
      const int64_t mine = p->spec().num_kv_heads;
      const std::vector<float> part = p->mean_keys(pages, begin, end);
      for (int64_t layer = 0; layer < spec_.num_layers; ++layer) {
        std::copy_n(part.begin() + layer * mine * D, mine * D,
                    all.begin() + (layer * heads + first) * D);
      }
      first += mine;
    }
    return all;
  }

 private:
  KvCacheSpec spec_;
  std::vector<std::unique_ptr<KvCacheStorage>> parts_;
};

// Columns `cols` (in that order) of every row of a 2-D host tensor, as a tensor of its own. Runs
// of consecutive columns (a whole range, in the usual case) are copied as one.
HostTensor gather_columns(const HostTensor& t, std::span<const int64_t> cols) {
  const int64_t rows = t.shape[0], width = static_cast<int64_t>(cols.size());
  HostTensor out = HostTensor::allocate(t.dtype, {rows, width});
  const size_t elem = dtype_size(t.dtype);
  const auto* src = static_cast<const std::byte*>(t.data);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (int64_t i = 0; i < width;) {
    int64_t run = 1;
    while (i + run < width &&
           cols[static_cast<size_t>(i + run)] == cols[static_cast<size_t>(i)] + run) {
      ++run;
    }
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dst + static_cast<size_t>(r * width + i) * elem,
                  src + static_cast<size_t>(r * t.shape[1] + cols[static_cast<size_t>(i)]) * elem,
                  static_cast<size_t>(run) * elem);
    }
    i += run;
  }
  return out;
}

// Rows [n_begin, n_end) of a 2-D or 1-D host tensor: a view sharing its storage.
HostTensor row_slice(const HostTensor& t, int64_t n_begin, int64_t n_end) {
  const int64_t row_elems = t.shape.size() == 2 ? t.shape[1] : 1;
  HostTensor out = t;
  out.shape[0] = n_end - n_begin;
  out.data = static_cast<const std::byte*>(t.data) +
             static_cast<size_t>(n_begin * row_elems) * dtype_size(t.dtype);
  return out;
}

// Rows `rows` (in that order) of a 2-D or 1-D host tensor, as a tensor of its own.
HostTensor gather_rows(const HostTensor& t, std::span<const int64_t> rows) {
  const int64_t row_elems = t.shape.size() == 2 ? t.shape[1] : 1;
  std::vector<int64_t> shape = t.shape;
  shape[0] = static_cast<int64_t>(rows.size());
  HostTensor out = HostTensor::allocate(t.dtype, shape);
  const size_t bytes = static_cast<size_t>(row_elems) * dtype_size(t.dtype);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(static_cast<std::byte*>(out.mutable_data()) + i * bytes,
                static_cast<const std::byte*>(t.data) + static_cast<size_t>(rows[i]) * bytes,
                bytes);
  }
  return out;
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF32:
      return ncclFloat32;
    default:
      fail(ErrorCode::kUnsupported, "tensor parallel: no all-reduce for this activation type");
  }
}

class TensorParallelBackend final : public Backend {
 public:
  TensorParallelBackend(const std::vector<int>& devices, const TensorParallelShape& shape,
                        const CudaBackendOptions& options)
      : split_(tensor_parallel_split(shape, static_cast<int>(devices.size()))), shape_(shape) {
    std::set<int> seen(devices.begin(), devices.end());
    if (seen.size() != devices.size()) {
      fail(ErrorCode::kInvalidArgument, "tensor parallel: a GPU is named twice");
    }
    for (int device : devices) {
      CudaBackendOptions o = options;
      o.device = device;
      auto backend = create_cuda_backend(o);
      ranks_.push_back(static_cast<CudaBackend*>(backend.get()));
      owned_.push_back(std::move(backend));
    }
    devices_ = devices;
    cuda_graphs_ = options.cuda_graphs;
    all_reduce_ = options.tensor_parallel_all_reduce;
    // NVLink multicast (NVLS) can take a shared host's GPUs out of service; the all-reduces here
    // are small, where it gains nothing.
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    comms_.resize(devices.size());
    cuda::check_nccl(
        cuda::nccl().CommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()),
        "starting NCCL over the GPUs");
    setup_peer_all_reduce();
    name_ = "tensor parallel over";
    for (size_t d = 0; d < ranks_.size(); ++d) name_ += (d ? ", " : " ") + ranks_[d]->name();
    epochs_.assign(ranks_.size(), 0);
  }

  ~TensorParallelBackend() override {
    for (CudaBackend* r : ranks_) cudaStreamSynchronize(r->stream());
    destroy_graphs();
    for (ncclComm_t c : comms_) {
      if (c) cuda::nccl().CommDestroy(c);
    }
  }

  std::string name() const override { return name_; }
  DType activation_dtype() const override { return ranks_[0]->activation_dtype(); }
  bool reads_host_weights() const override { return false; }

  std::unique_ptr<BackendWeight> upload(const HostTensor& tensor) override {
    auto w = std::make_unique<ShardedWeight>();
    for (CudaBackend* r : ranks_) w->parts.push_back(r->upload(tensor));
    return w;
  }

  std::unique_ptr<BackendWeight> upload_linear(const LinearSource& source) override {
    auto w = std::make_unique<ShardedWeight>();
    w->shard = source.shard;
    if (source.shard == LinearShard::kWhole) {
      for (CudaBackend* r : ranks_) w->parts.push_back(r->upload_linear(source));
      return w;
    }
    const bool row = is_row_parallel(source.shard);
    MlpOrder* mlp = source.mlp_down && (source.shard == LinearShard::kMlpColumns ||
                                        source.shard == LinearShard::kFromMlp)
                        ? &mlp_order(source.mlp_down)
                        : nullptr;
    // The quantized kernels' layout is built once and cut per device.
    std::optional<QuantTileLayout> layout;
    if (source.quantized && runs_packed_on_gpu(*source.quantized) &&
        activation_dtype() == DType::kF16) {
      if (mlp && mlp->down_layout && source.quantized == source.mlp_down) {
        layout = std::move(mlp->down_layout);
        mlp->down_layout.reset();
      } else {
        layout = build_quant_tile_layout(*source.quantized);
      }
    }
    // Packed weights without those kernels are expanded on the host, as the CUDA backend does.
    HostTensor dense = source.weight;
    if (source.quantized && !layout) {
      const QuantizedWeight& q = *source.quantized;
      dense = HostTensor::allocate(DType::kF32, {q.out_features(), q.in_features()});
      q.dequantize_rows(0, q.out_features(), static_cast<float*>(dense.mutable_data()));
    }
    for (int d = 0; d < devices(); ++d) {
      // The features device d holds: its range, or its part of the MLP's feature order.
      const auto [begin, end] = range(source.shard, d);
      std::vector<int64_t> features;
      if (mlp && !mlp->order.empty()) {
        features.assign(mlp->order.begin() + begin, mlp->order.begin() + end);
      } else {
        for (int64_t f = begin; f < end; ++f) features.push_back(f);
      }
      const bool in_order = !mlp || mlp->order.empty();
      LinearSource part;
      part.name = source.name + " (GPU " + std::to_string(devices_[static_cast<size_t>(d)]) + ")";
      if (layout) {
        QuantTileLayout shard = row        ? slice_tile_rows(*layout, features)
                                : in_order ? slice_tile_columns(*layout, begin, end)
                                           : gather_tile_columns(*layout, features);
        part.quantized = std::make_shared<TileLayoutWeight>(std::move(shard),
                                                            source.quantized->bits_per_weight());
      } else if (row) {
        part.weight = gather_columns(dense, features);
      } else {
        part.weight = in_order ? row_slice(dense, begin, end) : gather_rows(dense, features);
      }
      // A row-parallel layer's bias joins the sum once.
      if (source.bias && !row) {
        part.bias =
            in_order ? row_slice(*source.bias, begin, end) : gather_rows(*source.bias, features);
      }
      if (source.bias && row && d == 0) part.bias = source.bias;
      w->parts.push_back(ranks_[static_cast<size_t>(d)]->upload_linear(part));
    }
    // The MLP's three linears share one order; it goes with the last of them.
    if (mlp && ++mlp->uses == 3) mlp_orders_.erase(source.mlp_down.get());
    return w;
  }

  std::unique_ptr<BackendWeight> upload_lora(const LoraSource& source) override {
    fail(ErrorCode::kUnsupported, source.name +
                                      ": LoRA adapters do not run with tensor parallelism yet; "
                                      "split the model by layers to use them");
  }

  DeviceTensor alloc_activation(int64_t rows, int64_t cols) override {
    std::vector<DeviceTensor> parts;
    for (CudaBackend* r : ranks_) parts.push_back(r->alloc_activation(rows, cols));
    const auto key = reinterpret_cast<uintptr_t>(parts[0].data);
    activations_[key] = parts;
    return parts[0];
  }

  std::unique_ptr<KvCacheStorage> create_kv_cache(const KvCacheSpec& spec) override {
    if (spec.num_kv_heads != shape_.num_kv_heads || spec.head_dim != shape_.head_dim) {
      fail(ErrorCode::kInvalidArgument,
           "tensor parallel: the cache's heads are not those the backend was divided for");
    }
    std::vector<std::unique_ptr<KvCacheStorage>> parts;
    for (int d = 0; d < devices(); ++d) {
      KvCacheSpec part = spec;
      part.num_kv_heads = split_.kv_heads[d + 1] - split_.kv_heads[d];
      parts.push_back(ranks_[static_cast<size_t>(d)]->create_kv_cache(part));
    }
    return std::make_unique<ShardedKvCache>(spec, std::move(parts));
  }

  MemoryUsage memory_usage() const override {
    MemoryUsage total;
    for (const CudaBackend* r : ranks_) total += r->memory_usage();
    return total;
  }

  PreparedBatch prepare_batch(const BatchDesc& batch) override {
    PreparedBatch first;
    for (size_t d = 0; d < ranks_.size(); ++d) {
      const PreparedBatch p = ranks_[d]->prepare_batch(batch);
      if (d == 0) {
        first = p;
      } else {
        HEARTH_CHECK(p.tokens == first.tokens && p.logit_rows == first.logit_rows &&
                         p.graph_key == first.graph_key,
                     "tensor parallel: the devices prepared the batch differently");
      }
    }
    return first;
  }

  GraphStats graph_stats() const override { return graph_stats_; }

  void run(const std::function<void()>& record, std::optional<int64_t> graph_key) override {
    if (!graph_key || !cuda_graphs_) {
      record_all(record);
      return;
    }
    drop_stale_graphs();
    if (auto it = graphs_.find(*graph_key); it != graphs_.end()) {
      for (size_t d = 0; d < ranks_.size(); ++d) {
        cuda::DeviceGuard guard(devices_[d]);
        cuda::check_cuda(cudaGraphLaunch(it->second[d], ranks_[d]->stream()),
                         "launching a CUDA graph");
      }
      return;
    }
    // Each rank takes the paths its capture will take, in the direct runs too.
    std::vector<std::unique_ptr<CudaBackend::GraphStepScope>> graph_steps;
    for (CudaBackend* r : ranks_)
      graph_steps.push_back(std::make_unique<CudaBackend::GraphStepScope>(*r));
    // The first step of a key runs directly, so that scratch buffers reach their sizes.
    if (!warmed_keys_.count(*graph_key)) {
      record_all(record);
      drop_stale_graphs();
      warmed_keys_.insert(*graph_key);
      return;
    }
    // Every device's stream is captured at once: the NCCL calls of one all-reduce are issued
    // together for all devices and land in each device's graph.
    for (size_t d = 0; d < ranks_.size(); ++d) {
      cuda::DeviceGuard guard(devices_[d]);
      cuda::check_cuda(cudaStreamBeginCapture(ranks_[d]->stream(), cudaStreamCaptureModeRelaxed),
                       "starting graph capture");
    }
    std::vector<cudaGraph_t> captured(ranks_.size(), nullptr);
    auto end_captures = [&] {
      for (size_t d = 0; d < ranks_.size(); ++d) {
        cuda::DeviceGuard guard(devices_[d]);
        cudaStreamEndCapture(ranks_[d]->stream(), &captured[d]);
      }
    };
    auto discard = [&] {
      unreduced_.reset();
      for (CudaBackend* r : ranks_) r->abandon_queued();
      end_captures();
      for (cudaGraph_t& g : captured) {
        if (g) cudaGraphDestroy(g);
        g = nullptr;
      }
      cudaGetLastError();
    };
    try {
      record_all(record);
    } catch (const cuda::CaptureInvalidated&) {
      ++graph_stats_.abandoned;
      discard();
      record_all(record);  // runs directly and grows what it needs
      drop_stale_graphs();
      return;
    } catch (...) {
      discard();
      throw;
    }
    for (size_t d = 0; d < ranks_.size(); ++d) {
      cuda::DeviceGuard guard(devices_[d]);
      cuda::check_cuda(cudaStreamEndCapture(ranks_[d]->stream(), &captured[d]),
                       "ending graph capture");
    }
    std::vector<cudaGraphExec_t> execs(ranks_.size(), nullptr);
    cudaError_t status = cudaSuccess;
    for (size_t d = 0; d < ranks_.size(); ++d) {
      cuda::DeviceGuard guard(devices_[d]);
      if (status == cudaSuccess) status = cudaGraphInstantiate(&execs[d], captured[d], 0);
      cudaGraphDestroy(captured[d]);
    }
    if (status != cudaSuccess) {
      for (cudaGraphExec_t e : execs) {
        if (e) cudaGraphExecDestroy(e);
      }
      cuda::check_cuda(status, "instantiating a CUDA graph");
    }
    graphs_[*graph_key] = execs;
    ++graph_stats_.captured;
    for (size_t d = 0; d < ranks_.size(); ++d) {
      cuda::DeviceGuard guard(devices_[d]);
      cuda::check_cuda(cudaGraphLaunch(execs[d], ranks_[d]->stream()), "launching a CUDA graph");
    }
  }

  void embed(const BackendWeight& table, DeviceTensor out) override {
    settle();
    const ShardedWeight& t = sharded(table);
    for_each([&](int d) { rank(d).embed(*t.parts[d], local(out, d)); });
  }
  void rms_norm(DeviceTensor x, const BackendWeight& w, float eps, DeviceTensor out) override {
    settle();
    const ShardedWeight& s = sharded(w);
    for_each([&](int d) { rank(d).rms_norm(local(x, d), *s.parts[d], eps, local(out, d)); });
  }
  void add_rms_norm(DeviceTensor residual, DeviceTensor delta, const BackendWeight& w, float eps,
                    DeviceTensor out) override {
    const ShardedWeight& s = sharded(w);
    if (unreduced_ && unreduced_->data == delta.data && unreduced_->rows == residual.rows &&
        all_reduce_ == CudaBackendOptions::AllReduce::kFused && !peers_.empty() &&
        kernels::all_reduce_add_rms_norm_fits(cuda::to_elem(delta.dtype), residual.rows,
                                              residual.cols, peers_[0])) {
      unreduced_.reset();
      for_each([&](int d) {
        const bool done =
            rank(d).all_reduce_add_rms_norm(local(residual, d), local(delta, d), *s.parts[d], eps,
                                            local(out, d), peers_[static_cast<size_t>(d)]);
        HEARTH_CHECK(done, "tensor parallel: the fused all-reduce refused a shape it takes");
      });
      return;
    }
    settle();
    for_each([&](int d) {
      rank(d).add_rms_norm(local(residual, d), local(delta, d), *s.parts[d], eps, local(out, d));
    });
  }

  void linear(const BackendWeight& weight, DeviceTensor x, DeviceTensor out) override {
    settle();
    const ShardedWeight& w = sharded(weight);
    const bool row = is_row_parallel(w.shard);
    for_each([&](int d) {
      const int64_t width = w.shard == LinearShard::kWhole ? 0 : range_width(w.shard, d);
      const DeviceTensor xd = row ? local(x, d, width) : local(x, d);
      const DeviceTensor od =
          row || w.shard == LinearShard::kWhole ? local(out, d) : local(out, d, width);
      rank(d).linear(*w.parts[d], xd, od);
    });
    // Summed by the next op: an add and norm takes the sum into its own kernel.
    if (row) unreduced_ = out;
  }

  void rope(DeviceTensor q, DeviceTensor k, const RopeParams& params) override {
    settle();
    const ShardedWeight& inv_freq = sharded(*params.inv_freq);
    for_each([&](int d) {
      RopeParams p = params;
      p.inv_freq = inv_freq.parts[d].get();
      rank(d).rope(local(q, d, split_.q_width(d)), local(k, d, split_.kv_width(d)), p);
    });
  }

  void attention(DeviceTensor q, DeviceTensor k, DeviceTensor v, KvCacheStorage& cache,
                 const AttentionParams& params, DeviceTensor out) override {
    settle();
    auto* parts = dynamic_cast<ShardedKvCache*>(&cache);
    HEARTH_CHECK(parts != nullptr, "tensor parallel: a cache from another backend");
    for_each([&](int d) {
      AttentionParams p = params;
      p.num_kv_heads = split_.kv_heads[d + 1] - split_.kv_heads[d];
      p.num_heads = p.num_kv_heads * split_.heads_per_kv;
      const int64_t qw = split_.q_width(d), kw = split_.kv_width(d);
      rank(d).attention(local(q, d, qw), local(k, d, kw), local(v, d, kw), parts->part(d), p,
                        local(out, d, qw));
    });
  }

  // One all-reduce of rows × cols activations, timed on the host around the devices' work.
  double time_all_reduce(int64_t rows, int64_t cols, int reps, bool nccl) {
    force_nccl_ = nccl;
    const DeviceTensor t = alloc_activation(rows, cols);
    for (int i = 0; i < 5; ++i) all_reduce(t);
    for (CudaBackend* r : ranks_) r->synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) all_reduce(t);
    for (CudaBackend* r : ranks_) r->synchronize();
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    force_nccl_ = false;
    return elapsed.count() / reps;
  }

  void lora(const BackendWeight&, DeviceTensor, std::span<const DeviceTensor>) override {
    fail(ErrorCode::kUnsupported, "LoRA adapters do not run with tensor parallelism yet");
  }

  void silu_mul(DeviceTensor gate, DeviceTensor up, DeviceTensor out) override {
    settle();
    for_each([&](int d) {
      const int64_t w = split_.mlp_width(d);
      rank(d).silu_mul(local(gate, d, w), local(up, d, w), local(out, d, w));
    });
  }

  void gather_logit_rows(DeviceTensor x, DeviceTensor out) override {
    settle();
    for_each([&](int d) { rank(d).gather_logit_rows(local(x, d), local(out, d)); });
  }

  void receive(Backend&, DeviceTensor, DeviceTensor, int64_t) override {
    fail(ErrorCode::kUnsupported, "a tensor-parallel model cannot also be split by layers");
  }

  void read_into(DeviceTensor t, int64_t rows, std::span<float> out) override {
    settle();
    cuda::DeviceGuard guard(devices_[0]);
    rank(0).read_into(local(t, 0), rows, out);
  }
  double squared_distance(DeviceTensor a, DeviceTensor b, int64_t rows) override {
    settle();
    cuda::DeviceGuard guard(devices_[0]);
    return rank(0).squared_distance(local(a, 0), local(b, 0), rows);
  }
  std::vector<int32_t> sample(DeviceTensor logits,
                              std::span<const SampleRequest> requests) override {
    settle();
    cuda::DeviceGuard guard(devices_[0]);
    return rank(0).sample(local(logits, 0), requests);
  }

 private:
  int devices() const { return static_cast<int>(ranks_.size()); }
  CudaBackend& rank(int d) { return *ranks_[static_cast<size_t>(d)]; }

  // The CUDA backend's ops expect their device to be current (its run() makes it so).
  template <class Fn>
  void for_each(Fn&& fn) {
    for (int d = 0; d < devices(); ++d) {
      cuda::DeviceGuard guard(devices_[static_cast<size_t>(d)]);
      fn(d);
    }
  }

  // Issues `record` on every device and launches what each has queued.
  void record_all(const std::function<void()>& record) {
    record();
    settle();
    for (CudaBackend* r : ranks_) r->flush_queued();
  }

  // The MLP features of one layer in the order this backend numbers them before dividing them
  // (empty: their own order), from its down projection: the order down stores its rows in, so
  // that each device's share of an act-order down is whole chunks rather than nearly all of
  // them. Down's layout is kept for its own upload.
  struct MlpOrder {
    std::shared_ptr<const QuantizedWeight> down;  // keeps the key's address in use
    std::vector<int64_t> order;
    std::optional<QuantTileLayout> down_layout;
    int uses = 0;
  };
  MlpOrder& mlp_order(const std::shared_ptr<const QuantizedWeight>& down) {
    auto [it, added] = mlp_orders_.try_emplace(down.get());
    MlpOrder& o = it->second;
    if (!added) return o;
    o.down = down;
    if (runs_packed_on_gpu(*down) && activation_dtype() == DType::kF16) {
      o.down_layout = build_quant_tile_layout(*down);
      o.order = stored_feature_order(*o.down_layout);
      bool natural = true;
      for (size_t f = 0; f < o.order.size(); ++f) natural = natural && o.order[f] == int64_t(f);
      if (natural) o.order.clear();
    }
    return o;
  }

  // The features of a sharded linear that device d holds: outputs of a column-parallel one,
  // inputs of a row-parallel one.
  std::pair<int64_t, int64_t> range(LinearShard shard, int d) const {
    switch (shard) {
      case LinearShard::kQHeads:
      case LinearShard::kFromHeads:
        return {split_.q_begin(d), split_.q_begin(d) + split_.q_width(d)};
      case LinearShard::kKvHeads:
        return {split_.kv_begin(d), split_.kv_begin(d) + split_.kv_width(d)};
      case LinearShard::kMlpColumns:
      case LinearShard::kFromMlp:
        return {split_.mlp[d], split_.mlp[d + 1]};
      case LinearShard::kWhole:
        break;
    }
    fail(ErrorCode::kInternal, "tensor parallel: a whole linear has no shard");
  }
  int64_t range_width(LinearShard shard, int d) const {
    const auto [begin, end] = range(shard, d);
    return end - begin;
  }

  // Device d's copy of an activation (same shape), or with `cols` its shard of one: the first
  // cols columns of each row, packed (only whole activations are sharded).
  DeviceTensor local(const DeviceTensor& t, int d, int64_t cols = -1) const {
    const auto at = reinterpret_cast<uintptr_t>(t.data);
    auto it = activations_.upper_bound(at);
    HEARTH_CHECK(it != activations_.begin(), "tensor parallel: an activation of another backend");
    --it;
    const DeviceTensor& base = it->second[0];
    const size_t offset = at - it->first;
    HEARTH_CHECK(offset < base.nbytes(), "tensor parallel: an activation of another backend");
    const DeviceTensor& mine = it->second[static_cast<size_t>(d)];
    if (cols < 0 || cols == t.cols) {
      return {static_cast<char*>(mine.data) + offset, t.dtype, t.rows, t.cols};
    }
    HEARTH_CHECK(offset == 0 && cols <= t.cols,
                 "tensor parallel: a shard of part of an activation");
    return {mine.data, t.dtype, t.rows, cols};
  }

  // Peer access between every pair of devices and each device's staging buffer, flags and
  // counters for the small all-reduces; left off (NCCL does every all-reduce) where a pair has
  // no peer access.
  void setup_peer_all_reduce() {
    if (devices() > kernels::kAllReduceMaxRanks) return;
    for (int a = 0; a < devices(); ++a) {
      for (int b = 0; b < devices(); ++b) {
        int can = 0;
        if (a != b &&
            (cudaDeviceCanAccessPeer(&can, devices_[a], devices_[b]) != cudaSuccess || !can)) {
          cudaGetLastError();
          return;
        }
      }
    }
    for (int a = 0; a < devices(); ++a) {
      cuda::DeviceGuard guard(devices_[a]);
      for (int b = 0; b < devices(); ++b) {
        if (a == b) continue;
        const cudaError_t e = cudaDeviceEnablePeerAccess(devices_[b], 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();
        } else {
          cuda::check_cuda(e, "enabling peer access between the GPUs");
        }
      }
    }
    const size_t flag_bytes =
        sizeof(uint32_t) * kernels::kAllReduceMaxBlocks * kernels::kAllReduceMaxRanks;
    const size_t epoch_bytes = sizeof(uint32_t) * kernels::kAllReduceMaxBlocks;
    for (int d = 0; d < devices(); ++d) {
      cuda::DeviceGuard guard(devices_[d]);
      CudaBackend& r = rank(d);
      staging_.push_back(
          r.alloc_workspace(kPeerAllReduceMaxBytes * 2 * ranks_.size(), "all-reduce staging"));
      flags_.push_back(r.alloc_workspace(flag_bytes, "all-reduce flags"));
      epochs_buffers_.push_back(r.alloc_workspace(epoch_bytes, "all-reduce counters"));
      cuda::check_cuda(cudaMemset(flags_.back().get(), 0, flag_bytes), "clearing all-reduce flags");
      cuda::check_cuda(cudaMemset(epochs_buffers_.back().get(), 0, epoch_bytes),
                       "clearing all-reduce counters");
      cuda::check_cuda(cudaDeviceSynchronize(), "clearing all-reduce flags");
    }
    peers_.resize(ranks_.size());
    for (int d = 0; d < devices(); ++d) {
      kernels::AllReducePeers& p = peers_[static_cast<size_t>(d)];
      for (int r = 0; r < devices(); ++r) {
        p.staging[r] = staging_[static_cast<size_t>(r)].get();
        p.flags[r] = static_cast<uint32_t*>(flags_[static_cast<size_t>(r)].get());
      }
      p.slot_bytes = static_cast<int64_t>(kPeerAllReduceMaxBytes);
      p.epochs = static_cast<uint32_t*>(epochs_buffers_[static_cast<size_t>(d)].get());
      p.rank = d;
      p.ranks = devices();
    }
  }

  // Sums the row-parallel output that waits for its all-reduce, if any.
  void settle() {
    if (!unreduced_) return;
    const DeviceTensor t = *unreduced_;
    unreduced_.reset();
    all_reduce(t);
  }

  // Sums every device's `t` in place (row-parallel outputs), after the ops that produce it:
  // small ones (decode steps) by the peer kernel, larger ones by NCCL.
  void all_reduce(const DeviceTensor& t) {
    for (CudaBackend* r : ranks_) r->flush_queued();
    if (!peers_.empty() && !force_nccl_ && all_reduce_ != CudaBackendOptions::AllReduce::kNccl &&
        t.nbytes() <= kPeerAllReduceMaxBytes && t.nbytes() % 16 == 0) {
      for_each(
          [&](int d) { rank(d).all_reduce_peers(local(t, d), peers_[static_cast<size_t>(d)]); });
      return;
    }
    const cuda::NcclApi& nccl = cuda::nccl();
    const auto count = static_cast<size_t>(t.rows * t.cols);
    cuda::check_nccl(nccl.GroupStart(), "starting an all-reduce");
    ncclResult_t result = ncclSuccess;
    for (int d = 0; d < devices(); ++d) {
      void* data = local(t, d).data;
      const ncclResult_t r = nccl.AllReduce(data, data, count, nccl_type(t.dtype), ncclSum,
                                            comms_[static_cast<size_t>(d)], rank(d).stream());
      if (result == ncclSuccess) result = r;
    }
    const ncclResult_t ended = nccl.GroupEnd();
    cuda::check_nccl(result != ncclSuccess ? result : ended, "an all-reduce across the GPUs");
  }

  void destroy_graphs() {
    for (auto& [key, execs] : graphs_) {
      for (cudaGraphExec_t e : execs) cudaGraphExecDestroy(e);
    }
    graphs_.clear();
  }

  // Graphs hold raw pointers: any device's freed or moved memory drops them all.
  void drop_stale_graphs() {
    bool stale = false;
    for (size_t d = 0; d < ranks_.size(); ++d) stale |= epochs_[d] != ranks_[d]->graph_epoch();
    if (!stale) return;
    for (CudaBackend* r : ranks_) r->synchronize();
    destroy_graphs();
    warmed_keys_.clear();
    for (size_t d = 0; d < ranks_.size(); ++d) epochs_[d] = ranks_[d]->graph_epoch();
  }

  // Messages up to this size (a decode step's rows, up to 64 rows of an 8,192-wide model) take
  // the peer kernel; NCCL's ring is faster for more.
  static constexpr size_t kPeerAllReduceMaxBytes = size_t{1} << 20;

  TensorParallelSplit split_;
  TensorParallelShape shape_;
  std::vector<std::unique_ptr<Backend>> owned_;
  std::vector<CudaBackend*> ranks_;
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::string name_;
  bool cuda_graphs_ = true;
  std::map<uintptr_t, std::vector<DeviceTensor>> activations_;
  std::map<const QuantizedWeight*, MlpOrder> mlp_orders_;
  std::map<int64_t, std::vector<cudaGraphExec_t>> graphs_;
  std::set<int64_t> warmed_keys_;
  GraphStats graph_stats_;
  std::vector<uint64_t> epochs_;
  std::vector<cuda::DeviceBuffer> staging_, flags_, epochs_buffers_;
  std::vector<kernels::AllReducePeers> peers_;  // empty: NCCL only
  bool force_nccl_ = false;
  CudaBackendOptions::AllReduce all_reduce_ = CudaBackendOptions::AllReduce::kFused;
  // A row-parallel linear's output not yet summed over the devices (see linear()).
  std::optional<DeviceTensor> unreduced_;
};

}  // namespace

double tensor_parallel_all_reduce_us(Backend& backend, int64_t rows, int64_t cols, int reps,
                                     bool nccl) {
  auto* tp = dynamic_cast<TensorParallelBackend*>(&backend);
  if (!tp) fail(ErrorCode::kInvalidArgument, "not a tensor-parallel backend");
  return tp->time_all_reduce(rows, cols, std::max(1, reps), nccl);
}

std::unique_ptr<Backend> create_tensor_parallel_backend(const std::vector<int>& devices,
                                                        const TensorParallelShape& shape,
                                                        const CudaBackendOptions& options) {
  return std::make_unique<TensorParallelBackend>(devices, shape, options);
}

}  // namespace hearth
