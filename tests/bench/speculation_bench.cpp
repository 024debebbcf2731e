// Speculative decoding (prompt lookup) on a code-editing chat: the same requests with
// speculation off and on, at several numbers of concurrent requests. Prints tokens/s of each,
// the speed-up, the share of proposals kept, and whether the greedy answers are identical.
// Prefix reuse is on in both: repeated runs reuse the prompts' pages alike.
//
//   speculation_bench --model PATH [--draft-model PATH] [--backend cuda|cpu]
//                     [--concurrency 1,8,32] [--max-tokens N] [--draft-tokens K]
//                     [--temperature T] [--seeds S] [--json-out FILE]
// With --draft-model, the draft model's speculation is measured instead of prompt lookup. With
// --temperature (> 0) the requests sample (a fixed seed per request): proposals are then checked
// by speculative sampling, and answers need not be identical, only equally distributed. Sampled
// answers differ in length between the two engines (one that stops early spends a larger share
// of its time on the prompt), so each measurement then runs the batch with S seeds (default 6)
// and sums them, and the decode rate (tokens over the time after each request's first token) is
// reported beside the wall-clock rate.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/api/engine.h"
#include "engine/core/error.h"

namespace hearth {
namespace {

// A function the request asks to change a little: the answer repeats most of it.
constexpr const char* kFunction = R"(def summarize_orders(orders, tax_rate):
    total = 0
    count = 0
    largest = None
    for order in orders:
        if order.cancelled:
            continue
        amount = order.quantity * order.unit_price
        if order.discount:
            amount = amount - amount * order.discount
        total = total + amount
        count = count + 1
        if largest is None or amount > largest:
            largest = amount
    tax = total * tax_rate
    average = total / count if count else 0
    return {
        "total": total,
        "tax": tax,
        "count": count,
        "average": average,
        "largest": largest,
    })";

GenerationRequest edit_request(int max_tokens, int variant, float temperature, uint64_t seed) {
  GenerationRequest r;
  r.messages = {{"system", "You are a careful coding assistant. Answer with code only."},
                {"user", std::string("Here is a Python function:\n\n```python\n") + kFunction +
                             "\n```\n\nRename the variable `total` to `subtotal` everywhere and "
                             "return the whole updated function." +
                             (variant > 0 ? " (request " + std::to_string(variant) + ")" : "")}};
  r.max_tokens = max_tokens;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed + static_cast<uint64_t>(variant);
  return r;
}

// One measurement: the batch run once per seed, summed.
struct Run {
  double seconds = 0;         // wall clock
  double decode_seconds = 0;  // requests' time after their first token
  int64_t generated = 0, proposed = 0, accepted = 0, decoded = 0;
  std::vector<std::vector<int32_t>> tokens;  // the first seed's answers
};

Run run_batch(Engine& engine, int concurrency, int max_tokens, float temperature, int seeds) {
  Run r;
  for (int seed = 0; seed < seeds; ++seed) {
    std::vector<RequestId> ids;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < concurrency; ++i) {
      ids.push_back(engine.submit(
          edit_request(max_tokens, i, temperature, 1234 + 1000 * static_cast<uint64_t>(seed))));
    }
    while (engine.step()) {
    }
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (RequestId id : ids) {
      const GenerationResult g = *engine.take_result(id);
      r.generated += g.stats.generated_tokens;
      r.proposed += g.stats.proposed_tokens;
      r.accepted += g.stats.accepted_tokens;
      // The first token ends the prompt's time; the others are the decode's.
      r.decoded += std::max<int64_t>(g.stats.generated_tokens - 1, 0);
      r.decode_seconds += g.stats.decode_seconds;
      if (seed == 0) r.tokens.push_back(g.tokens);
    }
  }
  return r;
}

int main_impl(int argc, char** argv) {
  std::string model, draft_model, backend = "cuda", json_out;
  std::vector<int> concurrency = {1, 8, 32};
  int max_tokens = 256, draft_tokens = 8, seeds = 0;
  float temperature = 0.0f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") {
      model = value();
    } else if (a == "--draft-model") {
      draft_model = value();
    } else if (a == "--backend") {
      backend = value();
    } else if (a == "--concurrency") {
      concurrency.clear();
      std::string list = value();
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        concurrency.push_back(std::stoi(list.substr(at, comma - at)));
        at = comma + 1;
      }
    } else if (a == "--max-tokens") {
      max_tokens = std::stoi(value());
    } else if (a == "--draft-tokens") {
      draft_tokens = std::stoi(value());
    } else if (a == "--temperature") {
      temperature = std::stof(value());
    } else if (a == "--seeds") {
      seeds = std::stoi(value());
    } else if (a == "--json-out") {
      json_out = value();
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (model.empty()) {
    std::fprintf(stderr, "--model is required\n");
    return 2;
  }
  if (seeds <= 0) seeds = temperature > 0 ? 6 : 1;
  int max_concurrency = 1;
  for (int c : concurrency) max_concurrency = std::max(max_concurrency, c);

  nlohmann::json report = nlohmann::json::array();
  // Both engines stay loaded and take turns, each measurement repeated: the faster of
  // kRepeats runs counts (short runs; clocks and the host vary between them).
  constexpr int kRepeats = 3;
  std::vector<std::unique_ptr<Engine>> engines;
  for (int mode = 0; mode < 2; ++mode) {
    auto engine = std::make_unique<Engine>();
    LoadOptions o;
    o.model_path = model;
    o.device = backend == "cpu" ? DeviceKind::kCpu : DeviceKind::kCuda;
    o.max_seq_len = 2048;
    o.max_batch = max_concurrency;
    o.cache_tokens = static_cast<int64_t>(max_concurrency) * 1024;
    o.speculation = mode == 0             ? Speculation::kOff
                    : draft_model.empty() ? Speculation::kNgram
                                          : Speculation::kDraft;
    if (mode == 1 && !draft_model.empty()) o.draft_model_path = draft_model;
    o.draft_tokens = draft_tokens;
    engine->load(o);
    run_batch(*engine, 1, 16, temperature, 1);  // warm-up: kernels, graphs
    engines.push_back(std::move(engine));
  }
  std::vector<std::vector<Run>> runs(2);
  for (int c : concurrency) {
    for (int mode = 0; mode < 2; ++mode) runs[mode].push_back({});
    for (int rep = 0; rep < kRepeats; ++rep) {
      for (int mode = 0; mode < 2; ++mode) {
        Run r = run_batch(*engines[mode], c, max_tokens, temperature, seeds);
        Run& best = runs[mode].back();
        if (best.seconds == 0 || r.seconds < best.seconds) best = std::move(r);
      }
    }
  }
  const char* mode_name = draft_model.empty() ? "ngram" : "draft";
  std::printf(
      "concurrent | tokens/s off | tokens/s %s | speed-up | decode tokens/s off | %s | "
      "speed-up | kept of proposed | identical answers (first seed) | tokens off / %s\n",
      mode_name, mode_name, mode_name);
  for (size_t i = 0; i < concurrency.size(); ++i) {
    const Run& off = runs[0][i];
    const Run& on = runs[1][i];
    const double off_tps = static_cast<double>(off.generated) / off.seconds;
    const double on_tps = static_cast<double>(on.generated) / on.seconds;
    int identical = 0;
    for (size_t r = 0; r < off.tokens.size(); ++r) identical += off.tokens[r] == on.tokens[r];
    const double kept =
        on.proposed > 0 ? static_cast<double>(on.accepted) / static_cast<double>(on.proposed) : 0;
    // Per request: the mean rate of its decode (every request weighs by its time).
    const double off_decode = static_cast<double>(off.decoded) / off.decode_seconds;
    const double on_decode = static_cast<double>(on.decoded) / on.decode_seconds;
    std::printf(
        "%10d | %12.1f | %14.1f | %7.2fx | %19.1f | %9.1f | %7.2fx | %7lld of %6lld (%4.1f %%) | "
        "%d of %zu | %lld / %lld\n",
        concurrency[i], off_tps, on_tps, on_tps / off_tps, off_decode, on_decode,
        on_decode / off_decode, static_cast<long long>(on.accepted),
        static_cast<long long>(on.proposed), 100 * kept, identical, off.tokens.size(),
        static_cast<long long>(off.generated), static_cast<long long>(on.generated));
    report.push_back({{"concurrency", concurrency[i]},
                      {"speculation", mode_name},
                      {"temperature", temperature},
                      {"tokens_per_s_off", off_tps},
                      {"tokens_per_s_on", on_tps},
                      {"speedup", on_tps / off_tps},
                      {"decode_tokens_per_s_off", off_decode},
                      {"decode_tokens_per_s_on", on_decode},
                      {"decode_speedup", on_decode / off_decode},
                      {"seeds", seeds},
                      {"generated_off", off.generated},
                      {"generated_on", on.generated},
                      {"proposed", on.proposed},
                      {"accepted", on.accepted},
                      {"acceptance", kept},
                      {"identical_answers", identical},
                      {"answers", off.tokens.size()}});
  }
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace hearth

int main(int argc, char** argv) {
  try {
    return hearth::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speculation_bench: %s\n", e.what());
    return 1;
  }
}
