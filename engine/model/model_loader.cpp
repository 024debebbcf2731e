#include "engine/model/model_loader.h"

#include "engine/model/lora_adapter.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "engine/backend/cpu/int8_weight.h"
#include "engine/core/error.h"
#include "engine/formats/gptq_config.h"
#include "engine/formats/quant_model_info.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/io/gguf_config.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_source.h"
#include "engine/io/hf_config.h"
#include "engine/io/safetensors.h"

namespace hearth {

const char* model_format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::kSafetensors:
      return "fp16";
    case ModelFormat::kGguf:
      return "gguf";
    case ModelFormat::kExl2:
      return "exl2";
    case ModelFormat::kGptq:
      return "gptq";
  }
  return "?";
}
namespace fs = std::filesystem;

namespace {

bool has_gguf_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string(magic, 4) == "GGUF";
}

std::string read_text_file(const fs::path& path, size_t limit = 64 << 20) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) fail(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (size > limit) fail(ErrorCode::kInvalidFile, path.string() + " is too large");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A token given as "text" or {"content": "text"} in tokenizer_config.json.
std::string token_text(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) {
    return j["content"].get<std::string>();
  }
  return {};
}

std::string describe_types(const std::map<std::string, int>& counts) {
  std::string s;
  for (const auto& [type, n] : counts) {
    if (!s.empty()) s += ", ";
    s += type + " ×" + std::to_string(n);
  }
  return s;
}

// Bytes the CUDA backend holds of one tensor: GGUF blocks its quantized kernels run at their tile
// layout's size, other floating-point tensors in fp16, packed integers (EXL2, GPTQ) as stored.
uint64_t cuda_tensor_bytes(const TensorSource& weights, const std::string& name) {
  const auto packed = weights.packed(name);
  if (const auto* blocks = dynamic_cast<const GgufBlockWeight*>(packed.get());
      blocks && runs_packed_on_gpu(*blocks)) {
    return static_cast<uint64_t>(gguf_tile_layout_bytes(*blocks));
  }
  const TensorInfo t = weights.info(name);
  uint64_t numel = 1;
  for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
  const bool floating = t.dtype == DType::kF32 || t.dtype == DType::kF16 || t.dtype == DType::kBF16;
  return numel * (floating ? 2 : dtype_size(t.dtype));
}

// ModelInfo::cuda_layer_bytes and cuda_embedding_bytes, for splitting a model over GPUs.
void fill_cuda_layer_bytes(const TensorSource& weights, ModelInfo& info) {
  info.cuda_layer_bytes.assign(static_cast<size_t>(std::max<int64_t>(info.config.num_layers, 0)),
                               0);
  const std::string layers = "model.layers.";
  for (const std::string& name : weights.tensor_names()) {
    if (name == "model.embed_tokens.weight") {
      info.cuda_embedding_bytes = cuda_tensor_bytes(weights, name);
      continue;
    }
    if (!name.starts_with(layers)) continue;
    const size_t dot = name.find('.', layers.size());
    const std::string index = name.substr(layers.size(), dot - layers.size());
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos ||
        index.size() > 6) {
      continue;
    }
    const size_t i = std::stoul(index);
    if (i < info.cuda_layer_bytes.size())
      info.cuda_layer_bytes[i] += cuda_tensor_bytes(weights, name);
  }
}

void fill_common_info(ModelBundle& m) {
  ModelInfo& info = m.info;
  info.parameters = info.config.parameter_count();
  info.file_bytes = m.weights->file_bytes();
  if (info.parameters > 0) {
    info.bits_per_weight =
        static_cast<double>(info.file_bytes) * 8.0 / static_cast<double>(info.parameters);
  }
  std::map<std::string, int> counts;
  for (const auto& name : m.weights->tensor_names()) ++counts[m.weights->info(name).stored_type];
  info.stored_types = describe_types(counts);
  info.has_chat_template = m.chat_template_source.has_value();
  if (info.name.empty()) info.name = info.path.filename().string();
  fill_cuda_layer_bytes(*m.weights, info);
}

// ModelInfo::cuda_weight_bytes of a GGUF model (HF tensor names): tensors the quantized kernels
// run (the embedding table too, looked up packed and serving as a tied head) at their tile
// layout's size, the rest in fp16; a tied head beside a plain table is a second fp16 copy.
uint64_t cuda_weight_bytes(const TensorSource& weights) {
  auto packed_bytes = [&](const std::string& name) -> std::optional<uint64_t> {
    const auto packed = weights.packed(name);
    const auto* blocks = dynamic_cast<const GgufBlockWeight*>(packed.get());
    if (!blocks || !runs_packed_on_gpu(*blocks)) return std::nullopt;
    return static_cast<uint64_t>(gguf_tile_layout_bytes(*blocks));
  };
  auto fp16_bytes = [&](const std::string& name) {
    uint64_t numel = 1;
    for (int64_t d : weights.info(name).shape) numel *= static_cast<uint64_t>(d);
    return numel * 2;
  };
  uint64_t total = 0;
  for (const std::string& name : weights.tensor_names()) {
    total += packed_bytes(name).value_or(fp16_bytes(name));
  }
  const std::string embedding = "model.embed_tokens.weight";
  if (!weights.has("lm_head.weight") && weights.has(embedding) && !packed_bytes(embedding)) {
    total += fp16_bytes(embedding);
  }
  return total;
}

// ModelInfo::cpu_fast_weight_bytes: the file's bytes, with every quantized linear the fast path
// re-lays (GGUF blocks, EXL2 and GPTQ layers) counted at its re-laid size instead. A layer that
// does not load is left at its file size (loading the model reports it).
uint64_t cpu_fast_weight_bytes(const TensorSource& weights, uint64_t file_bytes,
                               const std::string& quantization_config_json) {
  int64_t total = static_cast<int64_t>(file_bytes);
  auto relaid = [&](const QuantizedWeight& w) {
    if (!cpu::has_int8_weight(w)) return;
    const double stored = w.bits_per_weight() * static_cast<double>(w.in_features()) *
                          static_cast<double>(w.out_features()) / 8;
    total += static_cast<int64_t>(cpu::int8_weight_bytes(w)) - static_cast<int64_t>(stored);
  };
  for (const std::string& name : weights.tensor_names()) {
    if (const auto packed = weights.packed(name)) {
      relaid(*packed);
      continue;
    }
    std::string layer;
    if (name.ends_with(".q_weight")) layer = name.substr(0, name.size() - 9);
    if (name.ends_with(".qweight")) layer = name.substr(0, name.size() - 8);
    if (layer.empty()) continue;
    QuantizedLinearOptions o;
    o.quantization_config_json = quantization_config_json;
    try {
      relaid(*load_quantized_linear(weights, layer, o));
    } catch (const Error&) {
    }
  }
  return static_cast<uint64_t>(std::max<int64_t>(total, 0));
}

ModelBundle open_gguf(const fs::path& file, bool with_tokenizer) {
  ModelBundle m;
  m.gguf = std::make_shared<const GgufFile>(GgufFile::open(file));
  m.info.path = file;
  m.info.format = ModelFormat::kGguf;
  m.info.config = config_from_gguf(*m.gguf);
  // The file's name, as for folders: general.name is often a training-run label
  // ("Smollm2 135M 8k Lc100K Mix1 Ep2") that users do not recognise.
  m.info.name = file.stem().string();
  m.weights = open_gguf_source(m.gguf, m.info.config);
  if (auto tmpl = m.gguf->get_string("tokenizer.chat_template")) m.chat_template_source = *tmpl;
  if (with_tokenizer) {
    m.tokenizer = load_tokenizer_from_gguf(*m.gguf);
  }
  fill_common_info(m);
  m.info.cuda_weight_bytes = cuda_weight_bytes(*m.weights);
  m.info.cpu_fast_weight_bytes = cpu_fast_weight_bytes(*m.weights, m.info.file_bytes, "");
  return m;
}

ModelBundle open_folder(const fs::path& dir, bool with_tokenizer) {
  ModelBundle m;
  m.info.path = dir;
  m.info.config = parse_hf_config(dir);
  m.info.name = dir.filename().string();
  m.weights = open_safetensors_source(dir);

  // The format is told by tensor names, not by the config (old EXL2 folders have no
  // quantization_config at all).
  m.info.format = ModelFormat::kSafetensors;
  for (const auto& name : m.weights->tensor_names()) {
    if (name.ends_with(".q_weight")) m.info.format = ModelFormat::kExl2;
    if (name.ends_with(".qweight")) m.info.format = ModelFormat::kGptq;
  }
  if (!m.info.config.quantization_config_json.empty()) {
    m.info.quantization = m.info.config.quantization_config_json;
  }

  const fs::path tokenizer_config = dir / "tokenizer_config.json";
  if (fs::exists(tokenizer_config)) {
    const auto j = nlohmann::json::parse(read_text_file(tokenizer_config), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      fail(ErrorCode::kInvalidFile, tokenizer_config.string() + " is not a JSON object");
    }
    if (j.contains("chat_template")) {
      const auto& t = j["chat_template"];
      if (t.is_string()) {
        m.chat_template_source = t.get<std::string>();
      } else if (t.is_array()) {  // [{"name": "default", "template": "..."}, ...]
        for (const auto& entry : t) {
          if (entry.is_object() && entry.value("name", "") == "default" &&
              entry.contains("template") && entry["template"].is_string()) {
            m.chat_template_source = entry["template"].get<std::string>();
          }
        }
      }
    }
    if (j.contains("bos_token")) m.bos_token = token_text(j["bos_token"]);
    if (j.contains("eos_token")) m.eos_token = token_text(j["eos_token"]);
  }
  if (!m.chat_template_source && fs::exists(dir / "chat_template.jinja")) {
    m.chat_template_source = read_text_file(dir / "chat_template.jinja");
  }
  if (with_tokenizer) m.tokenizer = load_tokenizer(dir);
  fill_common_info(m);
  // EXL2 / GPTQ models are known by the bits per weight of their quantized layers ("4.0 bpw"),
  // not by file size over parameters (which counts the fp16 embedding and a separate head).
  if (m.info.format == ModelFormat::kExl2 || m.info.format == ModelFormat::kGptq) {
    if (const auto bpw = quantized_bits_per_weight(*m.weights)) m.info.bits_per_weight = *bpw;
    // AutoGPTQ-era folders keep the config in quantize_config.json instead.
    if (m.info.quantization.empty()) m.info.quantization = read_quantize_config_file(dir);
    m.info.cpu_fast_weight_bytes = cpu_fast_weight_bytes(*m.weights, m.info.file_bytes,
                                                         m.info.config.quantization_config_json);
  }
  return m;
}

}  // namespace

ModelBundle open_model(const fs::path& path, bool with_tokenizer) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(ErrorCode::kIo, path.string() + ": no such file or folder");
  if (is_lora_adapter_path(path)) {
    fail(ErrorCode::kInvalidArgument, path.string() +
                                          " is a LoRA adapter, not a model: apply it to a model "
                                          "(--lora, or the Adapters tab)");
  }
  ModelBundle bundle;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "config.json")) {
      bundle = open_folder(path, with_tokenizer);
    } else {
      // A folder holding exactly one GGUF file is that model.
      fs::path gguf;
      int count = 0;
      for (const auto& e : fs::directory_iterator(path, ec)) {
        if (e.path().extension() == ".gguf") {
          gguf = e.path();
          ++count;
        }
      }
      if (count != 1) {
        fail(ErrorCode::kInvalidFile,
             path.string() + " holds neither config.json nor exactly one .gguf file");
      }
      bundle = open_gguf(gguf, with_tokenizer);
    }
  } else {
    const std::string ext = path.extension().string();
    if (ext == ".bin" || ext == ".pt" || ext == ".pth" || ext == ".pkl") {
      fail(ErrorCode::kUnsupported, path.string() +
                                        ": pickle checkpoints are never opened (they can run "
                                        "code); convert the model to safetensors");
    }
    if (!has_gguf_magic(path)) {
      fail(ErrorCode::kInvalidFile, path.string() + " is not a GGUF file (no GGUF magic)");
    }
    bundle = open_gguf(path, with_tokenizer);
  }
  if (bundle.tokenizer) {
    if (bundle.bos_token.empty() && bundle.tokenizer->bos_id()) {
      bundle.bos_token = bundle.tokenizer->piece(*bundle.tokenizer->bos_id());
    }
    if (bundle.eos_token.empty() && bundle.tokenizer->eos_id()) {
      bundle.eos_token = bundle.tokenizer->piece(*bundle.tokenizer->eos_id());
    }
  }
  return bundle;
}

}  // namespace hearth
