// open_safetensors_source(): a safetensors model (file, indexed shards or folder) as a
// TensorSource. Declared in tensor_source.h next to the interface; this header exists so that
// users of the safetensors source can name what they use.
#pragma once

#include "engine/io/safetensors.h"
#include "engine/io/tensor_source.h"
