// Writing a quantized KV cache, and the rotation of query/output heads around the attention
// kernels that read it (prefill: q is rotated before, the output after).
//
// A lane group of D/8 threads handles one row of one head: 8 dims a lane, loaded as one 16-byte
// word, rotated with the lane group's shuffles, quantized by scale groups of 4 lanes.
#include "kernels/kv_quant.cuh"

namespace hearth::kernels {
namespace {

constexpr int kThreads = 128;

template <class T, int BITS, int D>
__global__ void __launch_bounds__(kThreads)
    kv_store_quant_kernel(const T* k, const T* v, BatchView batch, KvLayerView kv, float norm) {
  constexpr int kLanes = D / 8;
  constexpr int kItemsPerBlock = kThreads / kLanes;
  pdl_launch_dependents();
  pdl_wait();
  const int gl = threadIdx.x % kLanes;
  // Items: (row, kv head, key or value); a lane group's lanes share one, so a warp's shuffles
  // stay within items and every lane reaches them.
  const int64_t items = int64_t(batch.num_tokens) * kv.num_kv_heads * 2;
  const int64_t item = int64_t(blockIdx.x) * kItemsPerBlock + threadIdx.x / kLanes;
  const bool live = item < items;
  const int64_t it = live ? item : 0;
  const bool is_value = (it & 1) != 0;
  const int head = static_cast<int>((it >> 1) % kv.num_kv_heads);
  const int64_t row = (it >> 1) / kv.num_kv_heads;
  const int pos = batch.positions[row];
  const T* src = (is_value ? v : k) + row * int64_t(kv.num_kv_heads) * D + head * D + gl * 8;
  float x[8];
  unpack8<T>(load16(src), x);
  hadamard8<kLanes>(x, gl, norm);
  if (!is_value) subtract_key_offset<D>(x, kv.key_offsets, head, gl);
  const Codes8 codes = quantize8<BITS>(x);  // every lane: the shuffles need the whole warp
  if (!live || pos < 0) return;
  const int seq = batch.token_seq[row];
  const int64_t page = batch.pages[batch.seq_pages[seq] + pos / kv.page_size];
  const KvQuantRow dst = kv_quant_row<BITS, D>(kv, page, head, pos % kv.page_size, is_value);
  store_codes<BITS, D>(codes, gl, dst.codes, dst.scales);
  if (pos == 0 && !is_value) {
    *reinterpret_cast<uint4*>(first_key_row<D>(kv, page, head) + gl * 8) = pack8<__half>(x);
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kThreads)
    hadamard_heads_kernel(T* x, int64_t rows, int64_t heads, float norm) {
  constexpr int kLanes = D / 8;
  pdl_launch_dependents();
  pdl_wait();
  const int gl = threadIdx.x % kLanes;
  const int64_t item = int64_t(blockIdx.x) * (kThreads / kLanes) + threadIdx.x / kLanes;
  const bool live = item < rows * heads;
  T* p = x + (live ? item : 0) * D + gl * 8;
  float v[8];
  unpack8<T>(load16(p), v);
  hadamard8<kLanes>(v, gl, norm);
  if (live) *reinterpret_cast<uint4*>(p) = pack8<T>(v);
}

}  // namespace

cudaError_t kv_store_quantized(const Launch& l, Elem t, const void* k, const void* v,
                               const BatchView& batch, const KvLayerView& kv) {
  if (batch.num_tokens <= 0) return cudaSuccess;
  const float norm = hadamard_norm(kv.head_dim);
  const int64_t items = int64_t(batch.num_tokens) * kv.num_kv_heads * 2;
  HEARTH_DISPATCH_16(t, T, {
    HEARTH_DISPATCH_KV_QUANT(kv, BITS, D, {
      const int64_t blocks = ceil_div(items, kThreads / (D / 8));
      return launch_kernel(l, kv_store_quant_kernel<T, BITS, D>, static_cast<int>(blocks), kThreads,
                           0, static_cast<const T*>(k), static_cast<const T*>(v), batch, kv, norm);
    });
  });
}

cudaError_t hadamard_heads(const Launch& l, Elem t, void* x, int64_t rows, int64_t cols,
                           int head_dim) {
  if (rows <= 0) return cudaSuccess;
  if ((head_dim != 64 && head_dim != 128) || cols % head_dim != 0) return cudaErrorInvalidValue;
  const float norm = hadamard_norm(head_dim);
  const int64_t heads = cols / head_dim;
  const int64_t blocks = ceil_div(rows * heads, kThreads / (head_dim / 8));
  HEARTH_DISPATCH_16(t, T, {
    if (head_dim == 64) {
      return launch_kernel(l, hadamard_heads_kernel<T, 64>, static_cast<int>(blocks), kThreads, 0,
                           static_cast<T*>(x), rows, heads, norm);
    }
    return launch_kernel(l, hadamard_heads_kernel<T, 128>, static_cast<int>(blocks), kThreads, 0,
                         static_cast<T*>(x), rows, heads, norm);
  });
}

}  // namespace hearth::kernels
