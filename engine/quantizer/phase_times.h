// Wall time per named phase of one quantization step (a module's measurement, its final pass),
// for the log line that tells where a slow job spends its time ("gptq 12.1 s (14), forward
// 3.0 s (304), ..."). Phases keep the order in which they were first seen. A phase named
// "a: b" is a part of phase "a" and is not counted again in total().
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hearth::quantizer {

class PhaseTimes {
 public:
  // Adds the time from construction to destruction to one phase.
  class Scope {
   public:
    Scope(PhaseTimes* times, const char* phase)
        : times_(times), phase_(phase), start_(std::chrono::steady_clock::now()) {}
    ~Scope() { stop(); }
    // Ends the phase early (later calls do nothing).
    void stop();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimes* times_;
    const char* phase_;
    std::chrono::steady_clock::time_point start_;
  };

  void add(const std::string& phase, double seconds, int64_t count = 1);
  double seconds(const std::string& phase) const;  // 0 when never seen
  int64_t count(const std::string& phase) const;
  double total() const;  // of the top-level phases
  // "quantize 12.1 s (14), forward 3.0 s (304)"; empty when nothing was timed.
  std::string summary() const;
  void clear() { phases_.clear(); }

 private:
  struct Phase {
    std::string name;
    double seconds = 0;
    int64_t count = 0;
  };
  const Phase* find(const std::string& phase) const;
  std::vector<Phase> phases_;
};

// Times one phase when `times` is not null.
inline PhaseTimes::Scope time_phase(PhaseTimes* times, const char* phase) {
  return PhaseTimes::Scope(times, phase);
}

}  // namespace hearth::quantizer
