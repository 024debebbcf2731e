// The pieces of attention that are not tiled: storing new keys and values into the paged cache,
// and a plain attention kernel for head dims the tiled kernels do not cover.
#include "kernels/common.cuh"
#include "kernels/kv_quant.cuh"

namespace hearth::kernels {

cudaError_t prepare_attention_prefill();  // attention_prefill.cu

namespace {

// One thread per (row, kv head, VEC elements) of k and of v.
template <class T, int VEC>
__global__ void kv_store_kernel(const T* k, const T* v, BatchView batch, KvLayerView kv) {
  pdl_launch_dependents();
  pdl_wait();
  const int D = kv.head_dim;
  const int64_t per_row = int64_t(kv.num_kv_heads) * D / VEC;
  const int64_t total = int64_t(batch.num_tokens) * per_row * 2;
  T* cache = static_cast<T*>(kv.base);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const bool is_v = i >= total / 2;
    const int64_t j = is_v ? i - total / 2 : i;
    const int64_t row = j / per_row;
    const int64_t e = (j % per_row) * VEC;  // element within the row
    const int pos = batch.positions[row];
    if (pos < 0) continue;
    const int seq = batch.token_seq[row];
    const int64_t head = e / D;
    const int64_t d = e % D;
    const int64_t page = batch.pages[batch.seq_pages[seq] + pos / kv.page_size];
    const int slot = pos % kv.page_size;
    const int64_t dst =
        page * kv.page_stride + (is_v ? kv.v_offset : 0) + (head * kv.page_size + slot) * D + d;
    const T* src = (is_v ? v : k) + row * int64_t(kv.num_kv_heads) * D + e;
    if constexpr (VEC == 8) {
      *reinterpret_cast<uint4*>(cache + dst) = load16(src);
    } else {
      cache[dst] = *src;
    }
  }
}

// One warp per (row, head); dims spread over the lanes (up to 8 each), fp32 online softmax.
template <class T>
__global__ void attention_generic_kernel(const T* q, BatchView batch, KvLayerView kv, int num_heads,
                                         int group, float scale, T* out) {
  pdl_launch_dependents();
  pdl_wait();
  const int64_t item = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (item >= int64_t(batch.num_tokens) * num_heads) return;
  const int64_t row = item / num_heads;
  const int head = static_cast<int>(item % num_heads);
  const int kv_head = head / group;
  const int D = kv.head_dim;
  const int64_t q_cols = int64_t(num_heads) * D;
  T* o = out + row * q_cols + int64_t(head) * D;
  const int pos = batch.positions[row];
  if (pos < 0) {
    for (int d = lane; d < D; d += 32) o[d] = from_f<T>(0.0f);
    return;
  }
  const int seq = batch.token_seq[row];
  const int32_t* page_table = batch.pages + batch.seq_pages[seq];
  const T* cache = static_cast<const T*>(kv.base);

  float qd[8], acc[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int d = lane + 32 * i;
    qd[i] = d < D ? to_f(q[row * q_cols + int64_t(head) * D + d]) * scale : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int p = 0; p <= pos; ++p) {
    const int64_t page = page_table[p / kv.page_size];
    const int64_t offset =
        page * kv.page_stride + (int64_t(kv_head) * kv.page_size + p % kv.page_size) * D;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int d = lane + 32 * i;
      if (d < D) s = fmaf(qd[i], to_f(cache[offset + d]), s);
    }
    s = warp_sum(s);
    const float mx = fmaxf(m, s);
    const float corr = expf(m - mx);
    const float pr = expf(s - mx);
    m = mx;
    l = l * corr + pr;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int d = lane + 32 * i;
      if (d < D) acc[i] = acc[i] * corr + pr * to_f(cache[offset + kv.v_offset + d]);
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int d = lane + 32 * i;
    if (d < D) o[d] = from_f<T>(acc[i] / l);
  }
}

}  // namespace

cudaError_t prepare_device() {
  return prepare_attention_prefill();
}

bool attention_fast_supported(int head_dim, int num_heads, int num_kv_heads) {
  return (head_dim == 64 || head_dim == 128) && num_kv_heads > 0 && num_heads % num_kv_heads == 0 &&
         num_heads / num_kv_heads <= 8;
}

cudaError_t kv_store(const Launch& l, Elem t, const void* k, const void* v, const BatchView& batch,
                     const KvLayerView& kv) {
  if (batch.num_tokens <= 0) return cudaSuccess;
  if (kv.bits != 16) return kv_store_quantized(l, t, k, v, batch, kv);
  const bool vec = kv.head_dim % 8 == 0;
  const int64_t total =
      int64_t(batch.num_tokens) * kv.num_kv_heads * kv.head_dim * 2 / (vec ? 8 : 1);
  const int64_t blocks = ceil_div(total, 256);
  const int grid = static_cast<int>(blocks < 65536 ? blocks : 65536);
  HEARTH_DISPATCH_16(t, T, {
    if (vec) {
      return launch_kernel(l, kv_store_kernel<T, 8>, grid, 256, 0, static_cast<const T*>(k),
                           static_cast<const T*>(v), batch, kv);
    }
    return launch_kernel(l, kv_store_kernel<T, 1>, grid, 256, 0, static_cast<const T*>(k),
                         static_cast<const T*>(v), batch, kv);
  });
}

cudaError_t attention_generic(const Launch& l, Elem t, const void* q, const BatchView& batch,
                              const KvLayerView& kv, int num_heads, float scale, void* out) {
  if (batch.num_tokens <= 0) return cudaSuccess;
  if (kv.head_dim > 256 || num_heads % kv.num_kv_heads != 0) return cudaErrorInvalidValue;
  const int64_t warps = int64_t(batch.num_tokens) * num_heads;
  const int grid = static_cast<int>(ceil_div(warps * 32, 256));
  HEARTH_DISPATCH_16(t, T, {
    return launch_kernel(l, attention_generic_kernel<T>, grid, 256, 0, static_cast<const T*>(q),
                         batch, kv, num_heads, num_heads / kv.num_kv_heads, scale,
                         static_cast<T*>(out));
  });
}

}  // namespace hearth::kernels
