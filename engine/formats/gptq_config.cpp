#include "engine/formats/gptq_config.h"

#include <nlohmann/json.hpp>
#include <system_error>

#include "engine/core/error.h"
#include "engine/io/json_strict.h"

namespace hearth {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& key, const std::string& what) {
  fail(ErrorCode::kInvalidFile, where + ": quantization config \"" + key + "\" " + what);
}

std::optional<int64_t> get_int(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) {
    // Some writers store whole numbers as floats (4.0); accept those, nothing else.
    if (it->is_number_float()) {
      const double d = it->get<double>();
      if (d == static_cast<double>(static_cast<int64_t>(d)) && d > -1e9 && d < 1e9) {
        return static_cast<int64_t>(d);
      }
    }
    bad(where, key, std::string("must be an integer, got ") + json_kind(*it));
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > (uint64_t(1) << 40)) {
    bad(where, key, "is out of range");
  }
  const int64_t v = it->get<int64_t>();
  if (v < -(int64_t(1) << 40) || v > (int64_t(1) << 40)) bad(where, key, "is out of range");
  return v;
}

std::optional<bool> get_bool(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean())
    bad(where, key, std::string("must be true or false, got ") + json_kind(*it));
  return it->get<bool>();
}

std::string get_string(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) bad(where, key, std::string("must be a string, got ") + json_kind(*it));
  return it->get<std::string>();
}

}  // namespace

GptqConfig parse_gptq_config(std::string_view text, const std::string& where) {
  GptqConfig c;
  if (text.empty()) return c;
  const json j = parse_json_strict(text, where + ": quantization config", 32);
  if (!j.is_object()) {
    fail(ErrorCode::kInvalidFile,
         where + ": quantization config must be a JSON object, got " + json_kind(j));
  }
  if (const auto bits = get_int(j, "bits", where)) {
    if (*bits < 1 || *bits > 16) bad(where, "bits", "is " + std::to_string(*bits));
    c.bits = static_cast<int>(*bits);
  }
  if (const auto gs = get_int(j, "group_size", where)) {
    if (*gs == 0 || *gs < -1) bad(where, "group_size", "is " + std::to_string(*gs));
    c.group_size = *gs;
  }
  c.sym = get_bool(j, "sym", where);
  c.desc_act = get_bool(j, "desc_act", where);
  c.checkpoint_format = get_string(j, "checkpoint_format", where);
  if (c.checkpoint_format.empty()) c.checkpoint_format = get_string(j, "format", where);
  c.quant_method = get_string(j, "quant_method", where);
  if (c.quant_method.empty()) c.quant_method = get_string(j, "method", where);
  c.is_marlin_format = get_bool(j, "is_marlin_format", where).value_or(false);
  return c;
}

std::string read_quantize_config_file(const std::filesystem::path& folder) {
  const std::filesystem::path path = folder / "quantize_config.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  return read_text_file(path.string(), 1 << 20);
}

}  // namespace hearth
