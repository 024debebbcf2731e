#include "engine/quantizer/phase_times.h"

#include <cstdio>

namespace hearth::quantizer {

void PhaseTimes::Scope::stop() {
  if (!times_) return;
  const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
  times_->add(phase_, d.count());
  times_ = nullptr;
}

void PhaseTimes::add(const std::string& phase, double seconds, int64_t count) {
  for (Phase& p : phases_) {
    if (p.name == phase) {
      p.seconds += seconds;
      p.count += count;
      return;
    }
  }
  phases_.push_back({phase, seconds, count});
}

const PhaseTimes::Phase* PhaseTimes::find(const std::string& phase) const {
  for (const Phase& p : phases_) {
    if (p.name == phase) return &p;
  }
  return nullptr;
}

double PhaseTimes::seconds(const std::string& phase) const {
  const Phase* p = find(phase);
  return p ? p->seconds : 0.0;
}

int64_t PhaseTimes::count(const std::string& phase) const {
  const Phase* p = find(phase);
  return p ? p->count : 0;
}

double PhaseTimes::total() const {
  double t = 0;
  for (const Phase& p : phases_) {
    if (p.name.find(':') == std::string::npos) t += p.seconds;
  }
  return t;
}

std::string PhaseTimes::summary() const {
  std::string out;
  char buf[160];
  for (const Phase& p : phases_) {
    std::snprintf(buf, sizeof buf, "%s%s %.1f s (%lld)", out.empty() ? "" : ", ", p.name.c_str(),
                  p.seconds, static_cast<long long>(p.count));
    out += buf;
  }
  return out;
}

}  // namespace hearth::quantizer
