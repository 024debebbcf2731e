// Where the time of a generator's decode steps goes, so that its own cost can be told apart from
// the model's: a step's wall time splits into the forward call, the sampling call (on the CUDA
// backend the forward call only queues the pass, so sampling is where the host waits for the
// GPU), and the rest — admission, batch building, token bookkeeping, detokenizing, stop matching
// — which is the generator's own work.
#pragma once

#include <cstdint>

namespace hearth {

struct DecodeStepTimes {
  int64_t steps = 0;   // steps in which every slice was a decode step (no prompt chunk)
  int64_t tokens = 0;  // tokens those steps generated
  double wall_seconds = 0;
  double forward_seconds = 0;  // inside the model's forward call
  double sample_seconds = 0;   // inside the backend's sampling call
  // Neither forward nor sampling: what the generator itself spent.
  double generator_seconds() const { return wall_seconds - forward_seconds - sample_seconds; }
};

}  // namespace hearth
