// A model split by layers over several backends (one per GPU): which consecutive layers each
// backend runs, and the KV cache divided the same way (each backend keeps its layers' keys and
// values for every page, so page ids mean the same on all of them).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"

namespace hearth {

// backends[s] runs `layers[s]` consecutive layers, in order. The first also embeds the tokens,
// the last also runs the final norm and the head and holds the logits. One backend: no split.
struct LayerPlacement {
  std::vector<Backend*> backends;
  std::vector<int64_t> layers;

  static LayerPlacement single(Backend& backend, int64_t num_layers) {
    return {{&backend}, {num_layers}};
  }
  // Throws Error(kInvalidArgument) unless there is one positive layer count per backend (null
  // backends refused) and the counts add up to `num_layers`.
  void validate(int64_t num_layers) const;
};

// The KV cache of a split model: one part per backend, part s holding the layers of stage s.
// spec() describes the whole model's cache.
class SplitKvCache final : public KvCacheStorage {
 public:
  // spec.num_layers must equal the sum of the parts' layers; every part has spec's pages.
  SplitKvCache(const KvCacheSpec& spec, std::vector<std::unique_ptr<KvCacheStorage>> parts);
  const KvCacheSpec& spec() const override { return spec_; }
  // Key offsets go to the parts by layer.
  bool offsets_keys() const override;
  void set_key_offsets(std::span<const float> offsets) override;
  std::vector<float> mean_keys(std::span<const int32_t> pages, int64_t begin,
                               int64_t end) const override;
  size_t parts() const { return parts_.size(); }
  KvCacheStorage& part(size_t stage) { return *parts_.at(stage); }

 private:
  KvCacheSpec spec_;
  std::vector<std::unique_ptr<KvCacheStorage>> parts_;
};

}  // namespace hearth
