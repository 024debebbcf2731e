#include "engine/backend/backend.h"

#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"

namespace hearth {

int64_t BatchDesc::total_tokens() const {
  int64_t n = 0;
  for (const auto& s : seqs) n += static_cast<int64_t>(s.tokens.size());
  return n;
}

int64_t BatchDesc::logit_rows() const {
  int64_t n = 0;
  for (const auto& s : seqs) n += s.all_logits ? static_cast<int64_t>(s.tokens.size()) : 1;
  return n;
}

bool BatchDesc::is_decode() const {
  for (const auto& s : seqs) {
    if (s.tokens.size() != 1) return false;
  }
  return !seqs.empty();
}

void Backend::linears(std::span<const BackendWeight* const> weights, DeviceTensor x,
                      std::span<const DeviceTensor> outs) {
  HEARTH_CHECK(weights.size() == outs.size(), "linears: one output per weight");
  for (size_t i = 0; i < weights.size(); ++i) linear(*weights[i], x, outs[i]);
}

void Backend::silu_mul_linear(DeviceTensor gate, DeviceTensor up, const BackendWeight& w,
                              DeviceTensor out, bool keep_activation) {
  (void)keep_activation;
  silu_mul(gate, up, gate);
  linear(w, gate, out);
}

bool BatchDesc::uses_adapters() const {
  for (const auto& s : seqs) {
    for (float w : s.adapter_weights) {
      if (w != 0.0f) return true;
    }
  }
  return false;
}

int kv_cache_bits(KvCacheType type) {
  switch (type) {
    case KvCacheType::kF16:
      return 16;
    case KvCacheType::kF32:
      return 32;
    case KvCacheType::kQ8:
      return 8;
    case KvCacheType::kQ6:
      return 6;
    case KvCacheType::kQ4:
      return 4;
  }
  return 16;
}

const char* kv_cache_type_name(KvCacheType type) {
  switch (type) {
    case KvCacheType::kF16:
      return "fp16";
    case KvCacheType::kF32:
      return "fp32";
    case KvCacheType::kQ8:
      return "q8";
    case KvCacheType::kQ6:
      return "q6";
    case KvCacheType::kQ4:
      return "q4";
  }
  return "?";
}

std::optional<KvCacheType> parse_kv_cache_type(std::string_view name) {
  for (KvCacheType t : {KvCacheType::kF16, KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    if (name == kv_cache_type_name(t)) return t;
  }
  return std::nullopt;
}

void KvCacheStorage::copy_positions(int32_t, int32_t, int64_t) {
  fail(ErrorCode::kUnsupported, "this KV cache cannot copy positions between pages");
}

void KvCacheStorage::set_key_offsets(std::span<const float>) {
  fail(ErrorCode::kUnsupported, "this KV cache does not offset its keys");
}

std::vector<float> KvCacheStorage::mean_keys(std::span<const int32_t>, int64_t, int64_t) const {
  fail(ErrorCode::kUnsupported, "this KV cache does not read its keys back");
}

size_t KvCacheSpec::page_bytes() const {
  if (is_quantized(type)) {
    return static_cast<size_t>(num_layers * KvQuantLayout::of(*this).layer_page_bytes);
  }
  // Per kv head and layer: keys and values, each head_dim values of `bits` bits.
  const auto row = static_cast<size_t>(head_dim * kv_cache_bits(type) / 8);
  return static_cast<size_t>(num_layers * num_kv_heads * page_size) * 2 * row;
}

size_t KvCacheSpec::bytes_per_token() const {
  if (page_size <= 0) return 0;
  const auto page = static_cast<size_t>(page_size);
  return (page_bytes() + page - 1) / page;
}

size_t KvCacheSpec::bytes() const {
  return page_bytes() * static_cast<size_t>(num_pages);
}

}  // namespace hearth
