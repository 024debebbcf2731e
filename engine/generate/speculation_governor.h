// Whether speculating pays, measured: the generator reports each decode step's wall time and the
// tokens its decoding jobs received, with and without proposals. Rates are kept per number of
// decoding jobs (a step's cost depends on it). While steps with proposals deliver fewer tokens
// per second than steps without, at the current number of jobs, speculation pauses (longer each
// time it still does not pay), then is tried again; plain steps are taken now and then to have
// something to compare with. A draft model as slow as the model itself, or proposals rarely
// kept, thus cost a few probing steps, not the run.
#pragma once

#include <cstdint>
#include <map>

namespace hearth {

class SpeculationGovernor {
 public:
  // Whether the next step, with `jobs` decoding jobs, may propose.
  bool allows(int64_t jobs) const;
  // After a step of decoding jobs only: `seconds` of wall time, `tokens` received by its `jobs`
  // jobs, `speculated` whether the step carried proposals.
  void record(double seconds, int64_t tokens, int64_t jobs, bool speculated);

  struct Rates {
    double speculative = 0, plain = 0;  // tokens per second (running averages)
    int speculative_steps = 0, plain_steps = 0;
  };
  Rates rates(int64_t jobs) const;

 private:
  struct State : Rates {
    int plain_needed = 2;  // plain steps to take before (and between) comparisons
    int paused_for = 0;
    int next_pause = 16;
  };
  std::map<int64_t, State> by_jobs_;
};

}  // namespace hearth
