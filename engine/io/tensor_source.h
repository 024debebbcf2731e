// A model's weight tensors by their Hugging Face names ("model.layers.0.self_attn.q_proj.weight"),
// whatever file format holds them. Loaders read through this interface only.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/host_tensor.h"

namespace hearth {

class QuantizedWeight;

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;   // the dtype `get` returns
  std::vector<int64_t> shape;  // in Hugging Face order ([out_features, in_features] for linears)
  std::string stored_type;     // the type in the file ("F16", "Q4_1", ...)
  std::string file;            // the file that holds it (for messages)
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual std::vector<std::string> tensor_names() const = 0;
  virtual bool has(std::string_view name) const = 0;
  // Throws Error(kInvalidFile) when the tensor does not exist.
  virtual TensorInfo info(std::string_view name) const = 0;
  // The tensor's contents. safetensors tensors are views into the mapped file (no copy);
  // block-quantized GGUF tensors are dequantized to F32 on each call.
  virtual HostTensor get(std::string_view name) const = 0;
  // Bytes the weights occupy in their files (for "size on disk" and memory estimates).
  virtual uint64_t file_bytes() const = 0;
  // The 2-D tensor `name` kept in its packed, block-quantized form (GGUF Q4_0, Q8_0, ...), with
  // the same values get() returns; null when the tensor is stored plainly. Backends that can
  // multiply packed blocks keep weights small this way.
  virtual std::shared_ptr<const QuantizedWeight> packed(std::string_view name) const {
    return nullptr;
  }
};

}  // namespace hearth

// --- implementations -----------------------------------------------------------------------

namespace hearth {

class GgufFile;
struct ModelConfig;

// A safetensors model: one file, a folder with model.safetensors.index.json, or a folder of
// *.safetensors without an index (as EXL2 writes). Tensors are zero-copy views into the
// mappings. Error(kUnsupported) for pickle checkpoints (never opened) and for dtypes Hearth
// does not load; Error(kInvalidFile) for malformed files, indexes that point outside the folder
// or name missing shards, and tensors present in two shards.
std::unique_ptr<TensorSource> open_safetensors_source(const std::filesystem::path& file_or_dir);

// A GGUF model (general.architecture "llama") under Hugging Face names, shapes in Hugging Face
// order, dequantized to F32 on each get(). q_proj/k_proj rows are un-permuted back to the
// rotate-half layout (llama.cpp's converter interleaves them; see gguf_names.h). `config`
// supplies the head counts for that.
std::unique_ptr<TensorSource> open_gguf_source(std::shared_ptr<const GgufFile> gguf,
                                               const ModelConfig& config);

}  // namespace hearth
