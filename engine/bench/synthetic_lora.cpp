#include "engine/bench/synthetic_lora.h"

#include <string>

namespace hearth {

namespace {

HostTensor uniform(std::vector<int64_t> shape, uint64_t& state, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float u = static_cast<float>(state >> 40) * (1.0f / 16777216.0f);
    x = (2.0f * u - 1.0f) * scale;
  }
  return HostTensor::from_floats(std::move(v), std::move(shape));
}

}  // namespace

std::shared_ptr<const LoraAdapter> synthetic_lora_adapter(
    const ModelConfig& c, int64_t rank, uint64_t seed,
    const std::vector<LoraProjection>& projections, float scale) {
  std::vector<LoraProjection> targets = projections;
  if (targets.empty()) {
    for (int p = 0; p < kLoraProjections; ++p) targets.push_back(static_cast<LoraProjection>(p));
  }
  auto adapter = std::make_shared<LoraAdapter>();
  adapter->name = "synthetic rank " + std::to_string(rank) + " #" + std::to_string(seed);
  adapter->format = "synthetic";
  adapter->alpha = static_cast<double>(rank);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    for (LoraProjection p : targets) {
      const auto [out, in] = lora_projection_shape(p, c);
      LoraLinear l;
      l.layer = layer;
      l.projection = p;
      l.a = uniform({rank, in}, state, scale);
      l.b = uniform({out, rank}, state, scale);
      adapter->linears.push_back(std::move(l));
    }
  }
  return adapter;
}

}  // namespace hearth
