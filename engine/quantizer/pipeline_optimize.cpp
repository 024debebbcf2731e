// The EXL2 optimization stage: the bit allocation over the measured modules that meets the
// target bits per weight, and each module's chosen settings.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/quantizer/exl2_optimizer.h"
#include "engine/quantizer/measurement_file.h"
#include "engine/quantizer/pipeline_state.h"

namespace hearth::quantizer {
using nlohmann::json;

void QuantPipeline::Impl::run_optimize() {
  state.steps = 1;
  state.step = 0;
  report("");
  const Measurement& meas = measurement;
  std::vector<std::vector<SlotOption>> slots;
  int64_t weights = 0;
  const int64_t H = config.hidden_size, I = config.intermediate_size;
  for (int64_t m = 0; m < 2 * config.num_layers; ++m) {
    auto it = meas.modules.find(module_key(m));
    if (it == meas.modules.end()) {
      fail(ErrorCode::kInvalidFile, "the measurement has no entry for " + module_key(m));
    }
    std::vector<SlotOption> s;
    for (const auto& o : it->second) s.push_back({o.total_bits, 1.0 - o.accuracy});
    slots.push_back(std::move(s));
    weights += m % 2 == 0 ? 2 * H * config.q_dim() + 2 * H * config.kv_dim() : 3 * H * I;
  }
  const auto budget = static_cast<int64_t>(static_cast<double>(weights) * opt.target_bpw);
  const OptimizerResult r = optimize_exl2(slots, budget);
  state.strategy = json::array();
  for (int64_t m = 0; m < 2 * config.num_layers; ++m) {
    state.strategy.push_back(option_to_json(meas.modules.at(module_key(m))[r.choice[m]]));
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "optimizer: %.4f bpw, max error %.5f, sum %.5f (norm %.1f)",
                static_cast<double>(r.cost) / static_cast<double>(weights), r.max_error,
                r.sum_error, r.norm);
  report("", buf);
  state.step = 1;
  save();
}

std::map<std::string, Exl2QParams> QuantPipeline::Impl::strategy_for(int64_t m) {
  std::map<std::string, Exl2QParams> out;
  const MeasuredOption o = option_from_json(state.strategy.at(static_cast<size_t>(m)));
  for (const auto& [proj, qp] : o.settings) out[proj] = qp;
  return out;
}

}  // namespace hearth::quantizer
