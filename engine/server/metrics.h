// The server's counters and latency histograms, written out in Prometheus' text format for
// GET /metrics. Thread-safe: every HTTP handler records into one Metrics.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/server/serving_loop.h"

namespace hearth::server {

class Metrics {
 public:
  // One finished HTTP request: the route ("/v1/chat/completions") and the status it got.
  void request_done(const std::string& route, int status);
  // One finished generation: its token counts and, when it produced any, the time to its first
  // token and the mean time per later token.
  void generation_done(int64_t prompt_tokens, int64_t generated_tokens, double first_token_s,
                       double per_token_s);
  // The whole exposition, with the loop's live figures (queue, memory) as gauges.
  std::string render(const LoopStats& loop, int64_t in_flight) const;

 private:
  // Cumulative buckets (seconds), as Prometheus histograms count them.
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                                     0.5,   1.0,  2.5,   5.0,  10.0, 30.0};
  struct Histogram {
    std::array<int64_t, kBounds.size()> buckets{};
    int64_t count = 0;
    double sum = 0;
    void observe(double seconds);
    void render(std::string& out, const char* name, const char* help) const;
  };

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0;
  int64_t generated_tokens_ = 0;
  Histogram first_token_;
  Histogram per_token_;
};

}  // namespace hearth::server
