// TensorSource over a llama-architecture GGUF file: Hugging Face names and layouts, F32 data.
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/io/gguf_dequant.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_names.h"
#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"

namespace hearth {

namespace {

class GgufSource final : public TensorSource {
 public:
  GgufSource(std::shared_ptr<const GgufFile> gguf, const ModelConfig& config)
      : gguf_(std::move(gguf)), num_heads_(config.num_heads), num_kv_heads_(config.num_kv_heads) {
    for (const auto& t : gguf_->tensors()) {
      // The llama3 frequency factors live in ModelConfig::rope_scaling (see gguf_config.cpp).
      if (t.name == "rope_freqs.weight") continue;
      // Tensors without a Hugging Face counterpart keep their GGUF name.
      std::string name = gguf_to_hf_name(t.name).value_or(t.name);
      if (by_name_.count(name)) {
        fail(ErrorCode::kInvalidFile,
             gguf_->display_name() + ": two tensors map to \"" + name + "\"");
      }
      by_name_.emplace(name, &t);
      names_.push_back(std::move(name));
      file_bytes_ += t.nbytes;
    }
  }

  std::vector<std::string> tensor_names() const override { return names_; }
  bool has(std::string_view name) const override { return by_name_.count(std::string(name)); }

  TensorInfo info(std::string_view name) const override {
    const GgufTensorInfo& t = find(name);
    TensorInfo info;
    info.name = std::string(name);
    info.dtype = DType::kF32;
    info.shape.assign(t.dims.rbegin(), t.dims.rend());
    info.stored_type = ggml_type_name(t.type);
    info.file = gguf_->display_name();
    return info;
  }

  HostTensor get(std::string_view name) const override {
    const GgufTensorInfo& t = find(name);
    HostTensor data = gguf_->dequantize(t);
    const std::string what = gguf_->display_name() + ": tensor \"" + t.name + "\"";
    switch (rope_permutation_of(t.name)) {
      case RopePermutation::kQuery:
        return unpermute_rope_rows(data, num_heads_, what);
      case RopePermutation::kKey:
        return unpermute_rope_rows(data, num_kv_heads_, what);
      case RopePermutation::kNone:
        break;
    }
    return data;
  }

  uint64_t file_bytes() const override { return file_bytes_; }

  std::shared_ptr<const QuantizedWeight> packed(std::string_view name) const override {
    const GgufTensorInfo& t = find(name);
    if (t.dims.size() != 2 || !gguf_type_is_packed(t.type)) return nullptr;
    // Where each Hugging Face row lives in the file: un-permute a column of row numbers.
    std::vector<int32_t> row_order;
    const RopePermutation perm = rope_permutation_of(t.name);
    if (perm != RopePermutation::kNone) {
      std::vector<float> index(static_cast<size_t>(t.dims[1]));
      for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<float>(i);
      const HostTensor order = unpermute_rope_rows(
          HostTensor::from_floats(std::move(index), {t.dims[1]}),
          perm == RopePermutation::kQuery ? num_heads_ : num_kv_heads_,
          gguf_->display_name() + ": tensor \"" + t.name + "\"");
      for (int64_t i = 0; i < t.dims[1]; ++i) {
        row_order.push_back(static_cast<int32_t>(order.as<float>()[i]));
      }
    }
    return std::make_shared<GgufBlockWeight>(gguf_, t, std::move(row_order));
  }

 private:
  const GgufTensorInfo& find(std::string_view name) const {
    const auto it = by_name_.find(std::string(name));
    if (it == by_name_.end()) {
      fail(ErrorCode::kInvalidFile,
           gguf_->display_name() + ": no tensor \"" + std::string(name) + "\"");
    }
    return *it->second;
  }

  std::shared_ptr<const GgufFile> gguf_;
  int64_t num_heads_;
  int64_t num_kv_heads_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, const GgufTensorInfo*> by_name_;
  uint64_t file_bytes_ = 0;
};

}  // namespace

std::unique_ptr<TensorSource> open_gguf_source(std::shared_ptr<const GgufFile> gguf,
                                               const ModelConfig& config) {
  HEARTH_CHECK(gguf != nullptr, "open_gguf_source: null file");
  return std::make_unique<GgufSource>(std::move(gguf), config);
}

}  // namespace hearth
