// LoRA adapters with random A and B of a model's shapes, made in memory (benchmarks and tests
// that need adapters of any rank without files).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/io/model_config.h"
#include "engine/model/lora_adapter.h"

namespace hearth {

// Rank `rank` on `projections` (every one when empty) of every layer; A and B uniform in
// ±`scale`, each linear's scale 1.
std::shared_ptr<const LoraAdapter> synthetic_lora_adapter(
    const ModelConfig& config, int64_t rank, uint64_t seed,
    const std::vector<LoraProjection>& projections = {}, float scale = 0.02f);

}  // namespace hearth
