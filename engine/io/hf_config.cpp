#include "engine/io/hf_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/io/json_strict.h"

namespace hearth {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 16u << 20;

// Typed access to one JSON document with messages that name the file and the field.
class Fields {
 public:
  Fields(const json& root, std::string file) : root_(root), file_(std::move(file)) {
    // Multimodal wrappers keep the language model's fields under text_config; exllamav2 falls
    // back to them, so do we.
    if (auto it = root_.find("text_config"); it != root_.end() && it->is_object()) {
      text_config_ = &*it;
    }
  }

  const std::string& file() const { return file_; }

  // The value of `key` (null counts as absent).
  const json* find(std::string_view key) const {
    if (const json* v = find_in(root_, key)) return v;
    if (text_config_) return find_in(*text_config_, key);
    return nullptr;
  }

  [[noreturn]] void error(std::string_view key, const std::string& why) const {
    fail(ErrorCode::kInvalidFile, file_ + ": " + std::string(key) + " " + why);
  }

  std::optional<int64_t> integer(std::string_view key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    return as_integer(*v, key);
  }
  int64_t required_integer(std::string_view key) const {
    auto v = integer(key);
    if (!v) error(key, "is missing");
    return *v;
  }
  std::optional<double> number(std::string_view key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    return as_number(*v, key);
  }
  std::optional<bool> boolean(std::string_view key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) error(key, std::string("must be true or false, got ") + json_kind(*v));
    return v->get<bool>();
  }
  std::optional<std::string> string(std::string_view key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) error(key, std::string("must be a string, got ") + json_kind(*v));
    return v->get<std::string>();
  }

  int64_t as_integer(const json& v, std::string_view key) const {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        error(key, "= " + v.dump() + " is out of range");
      }
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    error(key, "must be an integer, got " + std::string(json_kind(v)) +
                   (v.is_number() || v.is_string() ? " (" + v.dump() + ")" : ""));
  }
  double as_number(const json& v, std::string_view key) const {
    if (!v.is_number()) error(key, std::string("must be a number, got ") + json_kind(v));
    const double d = v.get<double>();
    if (!std::isfinite(d)) error(key, "must be finite, got " + v.dump());
    return d;
  }
  // A token id, or a list of them (eos), as int32 values.
  std::vector<int32_t> token_ids(std::string_view key, bool allow_list) const {
    const json* v = find(key);
    if (!v) return {};
    std::vector<int32_t> ids;
    auto add = [&](const json& item) {
      const int64_t id = as_integer(item, key);
      if (id < std::numeric_limits<int32_t>::min() || id > std::numeric_limits<int32_t>::max()) {
        error(key, "= " + std::to_string(id) + " is out of range for a token id");
      }
      if (std::find(ids.begin(), ids.end(), static_cast<int32_t>(id)) == ids.end()) {
        ids.push_back(static_cast<int32_t>(id));
      }
    };
    if (v->is_array() && allow_list) {
      if (v->size() > 4096) error(key, "lists more than 4096 token ids");
      for (const auto& item : *v) add(item);
    } else {
      add(*v);
    }
    return ids;
  }

 private:
  static const json* find_in(const json& obj, std::string_view key) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  const json& root_;
  const json* text_config_ = nullptr;
  std::string file_;
};

json parse_object(std::string_view text, const std::string& what) {
  json doc = parse_json_strict(text, what, 64);
  if (!doc.is_object()) {
    fail(ErrorCode::kInvalidFile, what + ": must be a JSON object, got " + json_kind(doc));
  }
  return doc;
}

std::string architecture_of(const Fields& f, const json& root) {
  std::string arch;
  if (auto it = root.find("architectures"); it != root.end() && !it->is_null()) {
    if (!it->is_array() || it->empty() || !(*it)[0].is_string()) {
      f.error("architectures", "must be a non-empty list of strings");
    }
    arch = (*it)[0].get<std::string>();
  } else if (auto type = f.string("model_type")) {
    // Configs without "architectures" name the family only through model_type.
    if (*type == "llama") arch = "LlamaForCausalLM";
    if (*type == "mistral") arch = "MistralForCausalLM";
    if (arch.empty()) {
      fail(ErrorCode::kUnsupported, f.file() + ": model_type \"" + *type +
                                        "\" is not supported (Hearth runs Llama and Mistral "
                                        "models)");
    }
  } else {
    f.error("architectures", "is missing (and there is no model_type)");
  }
  if (arch != "LlamaForCausalLM" && arch != "MistralForCausalLM") {
    fail(ErrorCode::kUnsupported, f.file() + ": architecture \"" + arch +
                                      "\" is not supported (Hearth runs LlamaForCausalLM and "
                                      "MistralForCausalLM)");
  }
  return arch;
}

// rope_scaling (or transformers 5's rope_parameters) -> RopeScaling.
RopeScaling parse_rope_scaling(const Fields& f, const json& rs, const std::string& field) {
  RopeScaling out;
  if (!rs.is_object()) f.error(field, std::string("must be an object, got ") + json_kind(rs));
  Fields r(rs, f.file() + ": " + field);
  const auto type = r.string("type");
  const auto rope_type = r.string("rope_type");
  if (type && rope_type && *type != *rope_type) {
    f.error(field, "gives both type \"" + *type + "\" and rope_type \"" + *rope_type +
                       "\"; they must agree");
  }
  const std::string kind = type ? *type : rope_type ? *rope_type : "";
  if (kind.empty()) {
    // rope_parameters may carry only rope_theta.
    if (field == "rope_parameters") return out;
    f.error(field, "has neither \"type\" nor \"rope_type\"");
  }
  if (kind == "default" || kind == "none") return out;

  if (kind == "linear") {
    out.type = RopeScalingType::kLinear;
  } else if (kind == "dynamic") {
    out.type = RopeScalingType::kDynamic;
  } else if (kind == "yarn") {
    out.type = RopeScalingType::kYarn;
  } else if (kind == "llama3") {
    out.type = RopeScalingType::kLlama3;
  } else {
    fail(ErrorCode::kUnsupported, f.file() + ": " + field + " type \"" + kind +
                                      "\" is not supported (linear, dynamic, yarn and llama3 are)");
  }
  const auto factor = r.number("factor");
  if (!factor) r.error("factor", "is missing");
  out.factor = *factor;
  if (auto v = r.integer("original_max_position_embeddings")) {
    out.original_max_position_embeddings = *v;
  }
  if (out.type == RopeScalingType::kLlama3) {
    const auto low = r.number("low_freq_factor");
    const auto high = r.number("high_freq_factor");
    if (!low) r.error("low_freq_factor", "is missing");
    if (!high) r.error("high_freq_factor", "is missing");
    if (out.original_max_position_embeddings == 0) {
      r.error("original_max_position_embeddings", "is missing");
    }
    out.low_freq_factor = *low;
    out.high_freq_factor = *high;
  }
  if (out.type == RopeScalingType::kYarn) {
    if (auto v = r.number("beta_fast")) out.beta_fast = *v;
    if (auto v = r.number("beta_slow")) out.beta_slow = *v;
    out.attention_factor = r.number("attention_factor");
    out.mscale = r.number("mscale");
    out.mscale_all_dim = r.number("mscale_all_dim");
  }
  return out;
}

}  // namespace

ModelConfig parse_hf_config_json(std::string_view config_json,
                                 std::optional<std::string_view> generation_config_json,
                                 const std::string& display_name) {
  const json root = parse_object(config_json, display_name);
  const Fields f(root, display_name);
  ModelConfig c;
  c.architecture = architecture_of(f, root);

  c.vocab_size = f.required_integer("vocab_size");
  c.hidden_size = f.required_integer("hidden_size");
  c.intermediate_size = f.required_integer("intermediate_size");
  c.num_layers = f.required_integer("num_hidden_layers");
  c.num_heads = f.required_integer("num_attention_heads");
  c.num_kv_heads = f.integer("num_key_value_heads").value_or(c.num_heads);
  if (c.num_heads <= 0) f.error("num_attention_heads", "must be positive");
  if (auto hd = f.integer("head_dim")) {
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      f.error("hidden_size", std::to_string(c.hidden_size) +
                                 " is not divisible by num_attention_heads " +
                                 std::to_string(c.num_heads) + " and head_dim is not given");
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  c.rms_norm_eps = f.number("rms_norm_eps").value_or(1e-6);

  // Context length: the first of the names that configs use for it.
  for (const char* key : {"max_position_embeddings", "max_sequence_length", "model_max_length",
                          "max_seq_len", "n_positions"}) {
    if (auto v = f.integer(key)) {
      c.max_position_embeddings = *v;
      break;
    }
  }

  const json* rope_parameters = f.find("rope_parameters");
  if (auto v = f.number("rope_theta")) {
    c.rope_theta = *v;
  } else if (rope_parameters && rope_parameters->is_object()) {
    if (auto it = rope_parameters->find("rope_theta"); it != rope_parameters->end()) {
      c.rope_theta = f.as_number(*it, "rope_parameters.rope_theta");
    }
  }
  if (const json* rs = f.find("rope_scaling")) {
    c.rope_scaling = parse_rope_scaling(f, *rs, "rope_scaling");
  } else if (rope_parameters) {
    c.rope_scaling = parse_rope_scaling(f, *rope_parameters, "rope_parameters");
  }
  c.partial_rotary_factor = f.number("partial_rotary_factor").value_or(1.0);
  if (auto sw = f.integer("sliding_window")) {
    if (*sw <= 0) f.error("sliding_window", "must be positive, got " + std::to_string(*sw));
    c.sliding_window = *sw;
  }

  c.tie_word_embeddings = f.boolean("tie_word_embeddings").value_or(false);
  c.attention_bias = f.boolean("attention_bias").value_or(false);
  c.mlp_bias = f.boolean("mlp_bias").value_or(false);

  if (auto bos = f.token_ids("bos_token_id", false); !bos.empty()) c.bos_token_id = bos[0];
  c.eos_token_ids = f.token_ids("eos_token_id", true);
  if (auto pad = f.token_ids("pad_token_id", false); !pad.empty() && pad[0] >= 0) {
    c.pad_token_id = pad[0];  // some configs write -1 for "no padding token"
  }
  if (auto dt = f.string("torch_dtype")) {
    c.torch_dtype = *dt;
  } else if (auto dt2 = f.string("dtype")) {
    c.torch_dtype = *dt2;
  }
  if (const json* q = f.find("quantization_config")) {
    if (!q->is_object()) {
      f.error("quantization_config", std::string("must be an object, got ") + json_kind(*q));
    }
    c.quantization_config_json = q->dump();
  }
  // auto_map (remote code) is deliberately ignored: Hearth never runs code from a model folder.

  if (generation_config_json) {
    const auto parent = std::filesystem::path(display_name).parent_path();
    const std::string gname = (parent / "generation_config.json").string();
    const json groot = parse_object(*generation_config_json, gname);
    const Fields g(groot, gname);
    if (auto eos = g.token_ids("eos_token_id", true); !eos.empty()) {
      for (int32_t id : eos) {
        if (id < 0 || id >= c.vocab_size) {
          g.error("eos_token_id", std::to_string(id) + " is outside the vocabulary (vocab_size " +
                                      std::to_string(c.vocab_size) + ")");
        }
      }
      c.eos_token_ids = eos;
    }
    if (!c.bos_token_id) {
      if (auto bos = g.token_ids("bos_token_id", false); !bos.empty()) c.bos_token_id = bos[0];
    }
    if (!c.pad_token_id) {
      if (auto pad = g.token_ids("pad_token_id", false); !pad.empty() && pad[0] >= 0) {
        c.pad_token_id = pad[0];
      }
    }
  }

  try {
    c.validate();
  } catch (const Error& e) {
    fail(e.code(), display_name + ": " + e.what());
  }
  return c;
}

ModelConfig parse_hf_config(const std::filesystem::path& model_dir) {
  const auto config_path = model_dir / "config.json";
  const std::string config = read_text_file(config_path.string(), kMaxConfigBytes);
  std::optional<std::string> generation;
  const auto gen_path = model_dir / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(gen_path, ec)) {
    generation = read_text_file(gen_path.string(), kMaxConfigBytes);
  }
  ModelConfig c = parse_hf_config_json(
      config, generation ? std::optional<std::string_view>(*generation) : std::nullopt,
      config_path.string());
  auto dir = model_dir;
  if (dir.filename().empty()) dir = dir.parent_path();
  c.name = dir.filename().string();
  return c;
}

}  // namespace hearth
