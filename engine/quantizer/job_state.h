// The state of a quantization job in its work folder (job.json), written atomically after every
// step so that a crash or a cancel loses at most the step in progress. Hidden states between
// modules are kept in checkpoint files next to it (hidden_states.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/quantizer/quantize_job.h"

namespace hearth::quantizer {

struct LayerReport {
  std::string name;
  std::string setting;      // EXL2 setting or "4b g128"
  double proxy_error = 0;   // tr(ΔW·H·ΔWᵀ), H damped (GPTQ's loss)
  double damp = 0;          // damping added to H's diagonal
  double weight_error = 0;  // relative Frobenius error of the weights
  int64_t total_bits = 0;
  int64_t weights = 0;
};

struct JobState {
  int version = 1;
  QuantizeOptions options;  // as started (paths absolute)
  QuantizeStage stage = QuantizeStage::kPrepare;
  int64_t step = 0;  // modules done in `stage`
  int64_t steps = 0;
  int64_t checkpoint = 0;  // modules whose output states are saved (<= step)
  double elapsed_s = 0;
  nlohmann::json strategy = nlohmann::json::array();  // EXL2: chosen row per module
  std::vector<LayerReport> layers;                    // final pass, in order
  std::vector<std::string> warnings;
};

nlohmann::json options_to_json(const QuantizeOptions& o);
QuantizeOptions options_from_json(const nlohmann::json& j);  // Error(kInvalidFile) if damaged
// The options that decide the output bytes differ: names the first one, else empty.
std::string first_output_difference(const QuantizeOptions& a, const QuantizeOptions& b);

std::filesystem::path job_file(const std::filesystem::path& work_dir);
void save_job(const std::filesystem::path& work_dir, const JobState& state);
// Error(kInvalidFile) when job.json is damaged.
JobState load_job(const std::filesystem::path& work_dir);

}  // namespace hearth::quantizer
