// The reference sampler: picks the next token from one row of logits following
// SamplingParams (penalties, temperature, top-k, top-p, min-p, then one uniform draw).
#pragma once

#include <cstdint>
#include <span>

#include "engine/sampling/sampling_params.h"

namespace hearth {

// `logits` is modified (penalties and filtering are applied in place).
int32_t sample_token(std::span<float> logits, const SampleRequest& request);

// Applies the repetition / frequency / presence penalties of `request` to `logits` in place.
void apply_penalties(std::span<float> logits, const SampleRequest& request);

}  // namespace hearth
