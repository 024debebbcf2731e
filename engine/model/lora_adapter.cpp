#include "engine/model/lora_adapter.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "engine/core/error.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_names.h"
#include "engine/io/json_strict.h"
#include "engine/io/safetensors.h"

namespace hearth {

namespace {

constexpr uint64_t kMaxConfigBytes = 1 << 20;

struct ProjectionName {
  const char* module;  // under "model.layers.<i>."
  LoraProjection projection;
};
constexpr ProjectionName kProjections[] = {
    {"self_attn.q_proj", LoraProjection::kQ}, {"self_attn.k_proj", LoraProjection::kK},
    {"self_attn.v_proj", LoraProjection::kV}, {"self_attn.o_proj", LoraProjection::kO},
    {"mlp.gate_proj", LoraProjection::kGate}, {"mlp.up_proj", LoraProjection::kUp},
    {"mlp.down_proj", LoraProjection::kDown}};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// "model.layers.<i>.<module>" → (layer, projection); nullopt for anything else.
std::optional<std::pair<int64_t, LoraProjection>> parse_module(std::string_view name) {
  constexpr std::string_view kLayers = "model.layers.";
  if (!name.starts_with(kLayers)) return std::nullopt;
  name.remove_prefix(kLayers.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 6) return std::nullopt;
  int64_t layer = 0;
  for (char ch : name.substr(0, dot)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    layer = layer * 10 + (ch - '0');
  }
  const std::string_view module = name.substr(dot + 1);
  for (const ProjectionName& p : kProjections) {
    if (module == p.module) return std::make_pair(layer, p.projection);
  }
  return std::nullopt;
}

std::string module_name(int64_t layer, LoraProjection p) {
  return "model.layers." + std::to_string(layer) + "." + kProjections[static_cast<int>(p)].module;
}

// A and B of one linear as read, before the checks that need both.
struct PendingLinear {
  std::optional<HostTensor> a, b;
  std::string a_name, b_name;
};
using PendingLinears = std::map<std::pair<int64_t, int>, PendingLinear>;

HostTensor to_f32_checked(const HostTensor& t, const std::string& what) {
  HostTensor f = HostTensor::from_floats(t.to_floats(), t.shape);
  const float* v = f.as<float>();
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (!std::isfinite(v[i])) {
      fail(ErrorCode::kInvalidFile, what + " holds a non-finite value (" + std::to_string(v[i]) +
                                        " at element " + std::to_string(i) + ")");
    }
  }
  return f;
}

// The scale of a linear of `rank` named `module`.
using ScaleOf = std::function<float(int64_t rank, const std::string& module)>;

// Checks every linear's A and B against the model and one another; ordered by layer, then
// projection (the map's order).
std::vector<LoraLinear> finish_linears(PendingLinears& pending, const ModelConfig& config,
                                       const std::string& adapter, const ScaleOf& scale_of) {
  std::vector<LoraLinear> linears;
  for (auto& [key, p] : pending) {
    const int64_t layer = key.first;
    const auto proj = static_cast<LoraProjection>(key.second);
    const std::string module = module_name(layer, proj);
    if (!p.a || !p.b) {
      fail(ErrorCode::kInvalidFile, adapter + ": " + module + " has " +
                                        (p.a ? "lora A (" + p.a_name + ") but no lora B"
                                             : "lora B (" + p.b_name + ") but no lora A"));
    }
    if (layer >= config.num_layers) {
      fail(ErrorCode::kInvalidFile, adapter + ": tensor " + p.a_name + " is for layer " +
                                        std::to_string(layer) + ", the model has " +
                                        std::to_string(config.num_layers) + " layers");
    }
    const auto [out, in] = lora_projection_shape(proj, config);
    if (p.a->shape.size() != 2 || p.b->shape.size() != 2) {
      fail(ErrorCode::kInvalidFile, adapter + ": " + module + ": lora A and B must be 2-D, got " +
                                        shape_text(p.a->shape) + " and " + shape_text(p.b->shape));
    }
    const int64_t rank = p.a->shape[0];
    if (rank == 0 || p.b->shape[1] == 0) {
      fail(ErrorCode::kInvalidFile, adapter + ": tensor " + p.a_name + " has rank 0");
    }
    if (p.a->shape[1] != in || p.b->shape[0] != out || p.b->shape[1] != rank) {
      fail(ErrorCode::kInvalidFile,
           adapter + ": " + module + ": lora A is " + shape_text(p.a->shape) + " and lora B " +
               shape_text(p.b->shape) + ", the model needs A [rank, " + std::to_string(in) +
               "] and B [" + std::to_string(out) + ", rank] (an adapter for another model?)");
    }
    LoraLinear l;
    l.layer = layer;
    l.projection = proj;
    l.a = to_f32_checked(*p.a, adapter + ": tensor " + p.a_name);
    l.b = to_f32_checked(*p.b, adapter + ": tensor " + p.b_name);
    l.scale = scale_of(rank, module);
    if (!std::isfinite(l.scale)) {
      fail(ErrorCode::kInvalidFile, adapter + ": " + module + " has a non-finite scale");
    }
    linears.push_back(std::move(l));
  }
  if (linears.empty()) fail(ErrorCode::kInvalidFile, adapter + ": the adapter has no LoRA tensors");
  return linears;
}

// PEFT's rank_pattern / alpha_pattern: keys name modules by their full name or a dotted suffix.
std::optional<double> pattern_value(const nlohmann::json& patterns, const std::string& module) {
  if (!patterns.is_object()) return std::nullopt;
  for (const auto& [key, value] : patterns.items()) {
    if (!value.is_number()) continue;
    if (module == key || (module.size() > key.size() && module.ends_with("." + key))) {
      return value.get<double>();
    }
  }
  return std::nullopt;
}

double number_field(const nlohmann::json& config, const char* key, const std::string& what) {
  if (!config.contains(key) || !config[key].is_number()) {
    fail(ErrorCode::kInvalidFile, what + ": \"" + key + "\" must be a number");
  }
  return config[key].get<double>();
}

// Absent, null, false, or an empty list or object.
bool unset(const nlohmann::json& config, const char* key) {
  if (!config.contains(key)) return true;
  const nlohmann::json& v = config[key];
  return v.is_null() || (v.is_array() && v.empty()) || (v.is_object() && v.empty()) ||
         (v.is_boolean() && !v.get<bool>());
}

LoraAdapter read_peft(const std::filesystem::path& folder, const ModelConfig& model) {
  LoraAdapter adapter;
  adapter.path = folder;
  adapter.name = folder.filename().string();
  adapter.format = "peft";
  const std::string what = "adapter " + adapter.name;
  const std::string config_what = what + ": adapter_config.json";
  const nlohmann::json config = parse_json_strict(
      read_text_file((folder / "adapter_config.json").string(), kMaxConfigBytes), config_what);
  if (!config.is_object()) fail(ErrorCode::kInvalidFile, config_what + " is not an object");
  if (config.contains("peft_type") &&
      (!config["peft_type"].is_string() || config["peft_type"].get<std::string>() != "LORA")) {
    fail(ErrorCode::kUnsupported, what + ": peft_type " + config["peft_type"].dump() +
                                      " is not LORA (only LoRA adapters are applied)");
  }
  if (config.contains("bias") &&
      (!config["bias"].is_string() || config["bias"].get<std::string>() != "none")) {
    fail(ErrorCode::kUnsupported,
         what + ": bias " + config["bias"].dump() + " is not supported (only bias \"none\")");
  }
  if (!unset(config, "use_dora")) {
    fail(ErrorCode::kUnsupported, what + ": DoRA adapters (use_dora) are not supported");
  }
  if (!unset(config, "modules_to_save")) {
    fail(ErrorCode::kUnsupported,
         what + ": modules_to_save replaces whole modules, which Hearth does not apply");
  }
  if (!unset(config, "fan_in_fan_out")) {
    fail(ErrorCode::kUnsupported, what + ": fan_in_fan_out adapters are not for Llama models");
  }
  const double r = number_field(config, "r", config_what);
  const double alpha = number_field(config, "lora_alpha", config_what);
  adapter.alpha = alpha;
  adapter.rslora = config.contains("use_rslora") && config["use_rslora"].is_boolean() &&
                   config["use_rslora"].get<bool>();
  const nlohmann::json ranks = config.value("rank_pattern", nlohmann::json::object());
  const nlohmann::json alphas = config.value("alpha_pattern", nlohmann::json::object());

  const std::filesystem::path weights = folder / "adapter_model.safetensors";
  std::error_code ec;
  if (!std::filesystem::exists(weights, ec)) {
    for (const char* pickle : {"adapter_model.bin", "adapter_model.pt"}) {
      if (std::filesystem::exists(folder / pickle, ec)) refuse_pickle_checkpoint(folder / pickle);
    }
    fail(ErrorCode::kInvalidFile, what + ": no adapter_model.safetensors in " + folder.string());
  }
  const SafetensorsFile file = SafetensorsFile::open(weights);
  PendingLinears pending;
  for (const SafetensorsTensor& t : file.tensors()) {
    std::string_view name = t.name;
    if (name.starts_with("base_model.model.")) name.remove_prefix(17);
    // "<module>.lora_A.weight", or "<module>.lora_A.<adapter name>.weight" (older PEFT).
    const size_t at = name.find(".lora_");
    std::optional<std::pair<int64_t, LoraProjection>> module;
    bool is_a = false;
    if (at != std::string_view::npos && name.ends_with(".weight")) {
      module = parse_module(name.substr(0, at));
      const std::string_view which = name.substr(at + 6, 2);
      is_a = which == "A.";
      if (!is_a && which != "B.") module.reset();
    }
    if (!module) {
      fail(ErrorCode::kUnsupported,
           what + ": tensor " + t.name +
               " is not a LoRA A or B of a q/k/v/o/gate/up/down projection (DoRA, embedding and "
               "lm_head adapters are not supported)");
    }
    PendingLinear& p = pending[{module->first, static_cast<int>(module->second)}];
    if ((is_a ? p.a : p.b).has_value()) {
      fail(ErrorCode::kInvalidFile, what + ": two tensors for " + t.name);
    }
    (is_a ? p.a : p.b) = file.tensor(t);
    (is_a ? p.a_name : p.b_name) = t.name;
  }
  adapter.linears =
      finish_linears(pending, model, what, [&](int64_t rank, const std::string& module) {
        const double want = pattern_value(ranks, module).value_or(r);
        if (static_cast<double>(rank) != want) {
          fail(ErrorCode::kInvalidFile, what + ": " + module + " has rank " + std::to_string(rank) +
                                            ", adapter_config.json says " + std::to_string(want));
        }
        const double a = pattern_value(alphas, module).value_or(alpha);
        const double s = adapter.rslora ? a / std::sqrt(static_cast<double>(rank))
                                        : a / static_cast<double>(rank);
        return static_cast<float>(s);
      });
  return adapter;
}

LoraAdapter read_gguf(const std::filesystem::path& path, const ModelConfig& model) {
  LoraAdapter adapter;
  adapter.path = path;
  adapter.name = path.filename().string();
  adapter.format = "gguf";
  const std::string what = "adapter " + adapter.name;
  const GgufFile gguf = GgufFile::open(path);
  const std::optional<std::string> type = gguf.get_string("general.type");
  if (type != "adapter") {
    fail(ErrorCode::kInvalidFile, what + ": general.type is " + type.value_or("missing") +
                                      ", not \"adapter\" (a model file, not an adapter?)");
  }
  const std::optional<std::string> kind = gguf.get_string("adapter.type");
  if (kind != "lora") {
    fail(ErrorCode::kUnsupported,
         what + ": adapter.type is " + kind.value_or("missing") + ", only \"lora\" is applied");
  }
  const std::optional<std::string> arch = gguf.get_string("general.architecture");
  if (arch != "llama") {
    fail(ErrorCode::kInvalidFile,
         what + ": an adapter for architecture " + arch.value_or("(none)") + ", not llama");
  }
  // llama.cpp scales by alpha / rank, and by 1 when alpha is absent or 0.
  const double alpha = gguf.get_float("adapter.lora.alpha").value_or(0.0);
  adapter.alpha = alpha;
  PendingLinears pending;
  for (const GgufTensorInfo& t : gguf.tensors()) {
    const std::string_view name = t.name;
    const bool is_a = name.ends_with(".lora_a");
    const bool is_b = name.ends_with(".lora_b");
    std::optional<std::pair<int64_t, LoraProjection>> module;
    std::string base;
    if (is_a || is_b) {
      base = std::string(name.substr(0, name.size() - 7));  // "blk.3.attn_q.weight"
      const std::optional<std::string> hf = gguf_to_hf_name(base);
      if (hf && hf->ends_with(".weight")) module = parse_module(hf->substr(0, hf->size() - 7));
    }
    if (!module) {
      fail(ErrorCode::kUnsupported,
           what + ": tensor " + t.name +
               " is not a LoRA A or B of a q/k/v/o/gate/up/down projection (embedding and "
               "output adapters are not supported)");
    }
    const std::string tensor_what = what + ": tensor \"" + t.name + "\"";
    HostTensor data = gguf.dequantize(t);
    // llama.cpp's converter interleaves the rows of q and k per head; B's rows are outputs.
    if (is_b && data.shape.size() == 2) {
      switch (rope_permutation_of(base)) {
        case RopePermutation::kQuery:
          data = unpermute_rope_rows(data, model.num_heads, tensor_what);
          break;
        case RopePermutation::kKey:
          data = unpermute_rope_rows(data, model.num_kv_heads, tensor_what);
          break;
        case RopePermutation::kNone:
          break;
      }
    }
    PendingLinear& p = pending[{module->first, static_cast<int>(module->second)}];
    if ((is_a ? p.a : p.b).has_value()) fail(ErrorCode::kInvalidFile, what + ": two " + t.name);
    (is_a ? p.a : p.b) = std::move(data);
    (is_a ? p.a_name : p.b_name) = t.name;
  }
  adapter.linears = finish_linears(pending, model, what, [&](int64_t rank, const std::string&) {
    return static_cast<float>(alpha == 0.0 ? 1.0 : alpha / static_cast<double>(rank));
  });
  return adapter;
}

bool is_gguf_name(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".gguf";
}

}  // namespace

const char* lora_projection_name(LoraProjection p) {
  static constexpr const char* kNames[] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                           "gate_proj", "up_proj", "down_proj"};
  return kNames[static_cast<int>(p)];
}

std::pair<int64_t, int64_t> lora_projection_shape(LoraProjection p, const ModelConfig& c) {
  switch (p) {
    case LoraProjection::kQ:
      return {c.q_dim(), c.hidden_size};
    case LoraProjection::kK:
    case LoraProjection::kV:
      return {c.kv_dim(), c.hidden_size};
    case LoraProjection::kO:
      return {c.hidden_size, c.q_dim()};
    case LoraProjection::kGate:
    case LoraProjection::kUp:
      return {c.intermediate_size, c.hidden_size};
    case LoraProjection::kDown:
      return {c.hidden_size, c.intermediate_size};
  }
  return {0, 0};
}

int64_t LoraAdapter::max_rank() const {
  int64_t r = 0;
  for (const LoraLinear& l : linears) r = std::max(r, l.rank());
  return r;
}

int64_t LoraAdapter::layer_count() const {
  std::set<int64_t> layers;
  for (const LoraLinear& l : linears) layers.insert(l.layer);
  return static_cast<int64_t>(layers.size());
}

std::vector<std::string> LoraAdapter::target_names() const {
  bool seen[kLoraProjections] = {};
  for (const LoraLinear& l : linears) seen[static_cast<int>(l.projection)] = true;
  std::vector<std::string> names;
  for (int p = 0; p < kLoraProjections; ++p) {
    if (seen[p]) names.emplace_back(lora_projection_name(static_cast<LoraProjection>(p)));
  }
  return names;
}

int64_t LoraAdapter::parameter_count() const {
  int64_t n = 0;
  for (const LoraLinear& l : linears) n += l.a.numel() + l.b.numel();
  return n;
}

LoraAdapter read_lora_adapter(const std::filesystem::path& path, const ModelConfig& config) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    fail(ErrorCode::kIo, "adapter " + path.string() + " does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) return read_peft(path, config);
  if (is_gguf_name(path)) return read_gguf(path, config);
  const std::string file = path.filename().string();
  if (file == "adapter_config.json" || file == "adapter_model.safetensors") {
    return read_peft(path.parent_path(), config);
  }
  if (is_pickle_checkpoint_name(path)) refuse_pickle_checkpoint(path);
  fail(ErrorCode::kInvalidFile, "adapter " + path.string() +
                                    " is neither a PEFT folder (adapter_config.json) nor a GGUF "
                                    "adapter");
}

bool is_lora_adapter_path(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // A model folder that also carries an adapter_config.json is still a model.
    return std::filesystem::exists(path / "adapter_config.json", ec) &&
           !std::filesystem::exists(path / "config.json", ec);
  }
  if (!is_gguf_name(path)) return false;
  try {
    return GgufFile::open(path).get_string("general.type") == "adapter";
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace hearth
