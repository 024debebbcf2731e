// Whether every value is finite, checked in parallel (weights and Hessians are up to a few
// hundred million floats).
#pragma once

#include <vector>

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

bool all_finite(const std::vector<float>& values, ThreadPool& pool);

}  // namespace hearth::quantizer
