#include "engine/model/layer_split.h"

#include <algorithm>
#include <string>

#include "engine/backend/kv_cache_quant.h"
#include "engine/core/error.h"

namespace hearth {

void LayerPlacement::validate(int64_t num_layers) const {
  if (backends.empty() || backends.size() != layers.size()) {
    fail(ErrorCode::kInvalidArgument, "a layer split needs one layer count per backend");
  }
  int64_t total = 0;
  for (size_t s = 0; s < backends.size(); ++s) {
    if (!backends[s]) fail(ErrorCode::kInvalidArgument, "a layer split names no backend");
    if (layers[s] < 1) {
      fail(ErrorCode::kInvalidArgument,
           "every device of a layer split runs at least one layer (device " + std::to_string(s) +
               " has " + std::to_string(layers[s]) + ")");
    }
    total += layers[s];
  }
  if (total != num_layers) {
    fail(ErrorCode::kInvalidArgument, "the layer split places " + std::to_string(total) +
                                          " layers, the model has " + std::to_string(num_layers));
  }
}

SplitKvCache::SplitKvCache(const KvCacheSpec& spec,
                           std::vector<std::unique_ptr<KvCacheStorage>> parts)
    : spec_(spec), parts_(std::move(parts)) {
  int64_t layers = 0;
  for (const auto& p : parts_) {
    HEARTH_CHECK(p && p->spec().num_pages == spec.num_pages &&
                     p->spec().page_size == spec.page_size && p->spec().type == spec.type,
                 "SplitKvCache: parts differ from the spec");
    layers += p->spec().num_layers;
  }
  HEARTH_CHECK(layers == spec.num_layers, "SplitKvCache: parts do not cover every layer");
}

bool SplitKvCache::offsets_keys() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& p) { return p->offsets_keys(); });
}

void SplitKvCache::set_key_offsets(std::span<const float> offsets) {
  if (!offsets_keys()) KvCacheStorage::set_key_offsets(offsets);  // throws
  check_key_offsets(spec_, offsets);
  size_t at = 0;
  for (const auto& p : parts_) {
    const auto n = static_cast<size_t>(p->spec().num_layers * spec_.num_kv_heads * spec_.head_dim);
    p->set_key_offsets(offsets.subspan(at, n));
    at += n;
  }
}

std::vector<float> SplitKvCache::mean_keys(std::span<const int32_t> pages, int64_t begin,
                                           int64_t end) const {
  if (!offsets_keys()) return KvCacheStorage::mean_keys(pages, begin, end);  // throws
  std::vector<float> all;
  for (const auto& p : parts_) {
    const std::vector<float> part = p->mean_keys(pages, begin, end);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

}  // namespace hearth
