// open_gguf_source(): a GGUF model as a TensorSource under Hugging Face names. Declared in
// tensor_source.h next to the interface; this header exists so that users of the GGUF source
// can name what they use.
#pragma once

#include "engine/io/gguf_file.h"
#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"
