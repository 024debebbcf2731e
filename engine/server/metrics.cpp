#include "engine/server/metrics.h"

#include <cstdio>

namespace hearth::server {
namespace {

void line(std::string& out, const std::string& name, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " %.17g\n", value);
  out += name;
  out += buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

void Metrics::Histogram::observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++buckets[i];
  }
  ++count;
  sum += seconds;
}

void Metrics::Histogram::render(std::string& out, const char* name, const char* help) const {
  header(out, name, "histogram", help);
  char le[32];
  for (size_t i = 0; i < kBounds.size(); ++i) {
    std::snprintf(le, sizeof le, "%g", kBounds[i]);
    line(out, std::string(name) + "_bucket{le=\"" + le + "\"}", static_cast<double>(buckets[i]));
  }
  line(out, std::string(name) + "_bucket{le=\"+Inf\"}", static_cast<double>(count));
  line(out, std::string(name) + "_sum", sum);
  line(out, std::string(name) + "_count", static_cast<double>(count));
}

void Metrics::request_done(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
}

void Metrics::generation_done(int64_t prompt_tokens, int64_t generated_tokens, double first_token_s,
                              double per_token_s) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  generated_tokens_ += generated_tokens;
  if (generated_tokens > 0) first_token_.observe(first_token_s);
  if (generated_tokens > 1) per_token_.observe(per_token_s);
}

std::string Metrics::render(const LoopStats& loop, int64_t in_flight) const {
  std::lock_guard lock(mutex_);
  std::string out;
  header(out, "hearth_requests_total", "counter", "HTTP requests by route and status.");
  for (const auto& [key, count] : requests_) {
    line(out,
         "hearth_requests_total{route=\"" + key.first + "\",status=\"" +
             std::to_string(key.second) + "\"}",
         static_cast<double>(count));
  }
  header(out, "hearth_prompt_tokens_total", "counter", "Prompt tokens processed.");
  line(out, "hearth_prompt_tokens_total", static_cast<double>(prompt_tokens_));
  header(out, "hearth_generation_tokens_total", "counter", "Tokens generated.");
  line(out, "hearth_generation_tokens_total", static_cast<double>(generated_tokens_));
  header(out, "hearth_requests_in_flight", "gauge", "HTTP generation requests being served.");
  line(out, "hearth_requests_in_flight", static_cast<double>(in_flight));
  header(out, "hearth_queue_length", "gauge",
         "Generations submitted and not yet ended (running or waiting for room).");
  line(out, "hearth_queue_length", static_cast<double>(loop.waiting));
  first_token_.render(out, "hearth_time_to_first_token_seconds",
                      "From submission to a generation's first token.");
  per_token_.render(out, "hearth_time_per_output_token_seconds",
                    "Mean time per token after the first, per generation.");
  header(out, "hearth_memory_bytes", "gauge", "Memory the loaded model holds, by category.");
  const MemoryUsage& m = loop.memory;
  line(out, "hearth_memory_bytes{category=\"weights\"}", static_cast<double>(m.weights));
  line(out, "hearth_memory_bytes{category=\"kv_cache\"}", static_cast<double>(m.kv_cache));
  line(out, "hearth_memory_bytes{category=\"activations\"}", static_cast<double>(m.activations));
  line(out, "hearth_memory_bytes{category=\"workspace\"}", static_cast<double>(m.workspace));
  return out;
}

}  // namespace hearth::server
