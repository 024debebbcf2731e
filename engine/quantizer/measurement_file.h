// measurement.json (docs/FORMATS.md §3.3.7): for every decoder module, the accuracy and cost of
// each candidate row of settings. Written in exllamav2's layout, so a measurement made by either
// tool can drive the other's optimizer; it depends only on the source model and calibration
// data.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/quantizer/exl2_qparams.h"

namespace hearth::quantizer {

struct MeasuredOption {
  double accuracy = 0;
  int64_t total_bits = 0;
  // Projection ("q_proj", ...) -> setting.
  std::vector<std::pair<std::string, Exl2QParams>> settings;
};

struct Measurement {
  // Module key ("model.layers.0.self_attn", "model.layers.0.mlp") -> options.
  std::map<std::string, std::vector<MeasuredOption>> modules;
  int64_t last_module_idx = 0;
};

nlohmann::json qparams_to_json(const Exl2QParams& qp);
Exl2QParams qparams_from_json(const nlohmann::json& j);  // Error(kInvalidFile)

nlohmann::json option_to_json(const MeasuredOption& o);
MeasuredOption option_from_json(const nlohmann::json& j);

void save_measurement(const std::filesystem::path& path, const Measurement& m);
// Error(kInvalidFile) naming the file when it is damaged.
Measurement load_measurement(const std::filesystem::path& path);

}  // namespace hearth::quantizer
