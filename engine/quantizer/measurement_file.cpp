#include "engine/quantizer/measurement_file.h"

#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
using nlohmann::json;

json qparams_to_json(const Exl2QParams& qp) {
  json gs = json::object(), bits = json::array(), prop = json::array();
  for (const auto& p : qp.parts) {
    gs[std::to_string(p.bits)] = p.group_size;
    bits.push_back(p.bits);
    prop.push_back(p.proportion);
  }
  return json{
      {"group_size", gs}, {"bits", bits}, {"bits_prop", prop}, {"scale_bits", qp.scale_bits}};
}

Exl2QParams qparams_from_json(const json& j) {
  try {
    Exl2QParams qp;
    const auto& bits = j.at("bits");
    const auto& prop = j.at("bits_prop");
    const auto& gs = j.at("group_size");
    if (!bits.is_array() || !prop.is_array() || bits.size() != prop.size() || bits.empty() ||
        bits.size() > 6) {
      fail(ErrorCode::kInvalidFile, "a setting needs matching \"bits\" and \"bits_prop\" lists");
    }
    for (size_t i = 0; i < bits.size(); ++i) {
      const int b = bits[i].get<int>();
      int64_t g = 0;
      if (gs.is_object()) {
        g = gs.at(std::to_string(b)).get<int64_t>();
      } else {
        g = gs.get<int64_t>();
      }
      qp.parts.push_back({b, prop[i].get<double>(), g});
    }
    qp.scale_bits = j.at("scale_bits").get<int>();
    if (qp.scale_bits != 4) fail(ErrorCode::kInvalidFile, "scale_bits must be 4");
    exl2_group_layout(qp, 4096);  // validates widths, order and group sizes
    return qp;
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidFile, std::string("a setting is malformed: ") + e.what());
  } catch (const Error& e) {
    fail(ErrorCode::kInvalidFile, e.what());
  }
}

json option_to_json(const MeasuredOption& o) {
  json j{{"accuracy", o.accuracy}, {"total_bits", o.total_bits}};
  for (const auto& [proj, qp] : o.settings) j[proj] = qparams_to_json(qp);
  return j;
}

MeasuredOption option_from_json(const json& j) {
  MeasuredOption o;
  try {
    o.accuracy = j.at("accuracy").get<double>();
    o.total_bits = j.at("total_bits").get<int64_t>();
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidFile, std::string("a measured option is malformed: ") + e.what());
  }
  for (const auto& [key, value] : j.items()) {
    if (key == "accuracy" || key == "total_bits") continue;
    o.settings.emplace_back(key, qparams_from_json(value));
  }
  return o;
}

void save_measurement(const std::filesystem::path& path, const Measurement& m) {
  json mods = json::object();
  for (const auto& [key, opts] : m.modules) {
    json arr = json::array();
    for (const auto& o : opts) arr.push_back(option_to_json(o));
    mods[key] = arr;
  }
  const json j{{"measurement", mods}, {"last_module_idx", m.last_module_idx}};
  write_file_atomically(path, j.dump(1) + "\n");
}

Measurement load_measurement(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("measurement") ||
      !j["measurement"].is_object()) {
    fail(ErrorCode::kInvalidFile, path.string() + " is not a measurement file");
  }
  Measurement m;
  m.last_module_idx = j.value("last_module_idx", int64_t{0});
  for (const auto& [key, arr] : j["measurement"].items()) {
    if (!arr.is_array() || arr.empty()) {
      fail(ErrorCode::kInvalidFile, path.string() + ": " + key + " has no options");
    }
    auto& opts = m.modules[key];
    for (const auto& e : arr) {
      try {
        opts.push_back(option_from_json(e));
      } catch (const Error& err) {
        fail(ErrorCode::kInvalidFile, path.string() + ": " + key + ": " + err.what());
      }
    }
  }
  return m;
}

}  // namespace hearth::quantizer
