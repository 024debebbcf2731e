#include "engine/generate/speculation_governor.h"

#include <algorithm>

namespace hearth {

namespace {
constexpr double kWeight = 0.2;      // of a new step in the running averages
constexpr int kStepsToJudge = 8;     // speculative steps between judgements
constexpr double kTolerance = 1.0;   // speculation must deliver at least what plain steps do
constexpr int kLongestPause = 1024;  // steps
constexpr double kFarSlower = 0.5;   // a speculative step below this share pauses at once
}  // namespace

bool SpeculationGovernor::allows(int64_t jobs) const {
  auto it = by_jobs_.find(jobs);
  if (it == by_jobs_.end()) return false;  // a plain step first, to compare with
  return it->second.plain_needed == 0 && it->second.paused_for == 0;
}

SpeculationGovernor::Rates SpeculationGovernor::rates(int64_t jobs) const {
  auto it = by_jobs_.find(jobs);
  return it == by_jobs_.end() ? Rates{} : static_cast<const Rates&>(it->second);
}

void SpeculationGovernor::record(double seconds, int64_t tokens, int64_t jobs, bool speculated) {
  if (seconds <= 0 || jobs <= 0) return;
  State& s = by_jobs_[jobs];
  const double rate = static_cast<double>(tokens) / seconds;
  auto update = [&](double& average, int& steps) {
    average = steps == 0 ? rate : (1 - kWeight) * average + kWeight * rate;
    ++steps;
  };
  if (!speculated) {
    update(s.plain, s.plain_steps);
    if (s.plain_needed > 0) --s.plain_needed;
    if (s.paused_for > 0) --s.paused_for;
    return;
  }
  update(s.speculative, s.speculative_steps);
  // A step far slower than plain ones is judged at once: probing must stay cheap when a
  // speculative step costs many plain ones (a slow draft model).
  const bool far_slower = rate < kFarSlower * s.plain;
  if (s.speculative_steps % kStepsToJudge != 0 && !far_slower) return;
  if (far_slower || s.speculative < kTolerance * s.plain) {
    s.paused_for = s.next_pause;
    s.next_pause = std::min(2 * s.next_pause, kLongestPause);
    s.speculative_steps = 0;  // judged afresh after the pause
  } else {
    s.next_pause = 16;
    // Refresh the plain rate now and then (contexts grow, other jobs come and go).
    if (s.speculative_steps % (4 * kStepsToJudge) == 0) s.plain_needed = 1;
  }
}

}  // namespace hearth
