// The CPU backend: the exact, simple reference every GPU kernel is tested against, and the
// fallback on machines without a GPU. fp32 activations and accumulation, fp32 KV cache.
#pragma once

#include <memory>

#include "engine/backend/backend.h"

namespace hearth {

// threads <= 0: one per hardware thread.
std::unique_ptr<Backend> create_cpu_backend(int threads = 0);

}  // namespace hearth
