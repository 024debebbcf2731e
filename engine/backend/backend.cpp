#include "engine/backend/backend.h"

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

bool BatchDesc::uses_adapters() const {
  for (const auto& s : seqs) {
    for (float w : s.adapter_weights) {
      if (w != 0.0f) return true;
    }
  }
  return false;
}

size_t KvCacheSpec::bytes() const {
  const size_t element = type == KvCacheType::kF32 ? 4 : 2;
  return static_cast<size_t>(num_layers) * 2 * static_cast<size_t>(num_pages) *
         static_cast<size_t>(page_size) * static_cast<size_t>(num_kv_heads) *
         static_cast<size_t>(head_dim) * element;
}

}  // namespace hearth
