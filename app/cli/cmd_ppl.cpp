// hearth-cli ppl: perplexity of a model on a text file (sliding windows of --ctx tokens,
// advanced by --stride; each position is scored once).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/api/paths.h"
#include "engine/core/error.h"
#include "engine/quantizer/model_eval.h"

namespace hearth::cli {

// Shared by ppl and kld: the evaluation text (a file, or "builtin" for the held-out text).
std::string read_eval_text(const std::string& path) {
  if (path == "builtin") return builtin_eval_text();
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

EvalOptions eval_options_from(const ArgParser& args) {
  EvalOptions o;
  const std::string backend = args.get("backend").value_or("cpu");
  if (backend != "cpu" && backend != "cuda") throw UsageError("--backend must be cpu or cuda");
  o.device = backend == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
  o.cuda_device = static_cast<int>(args.get_int("device", 0, 0, 64));
  o.cpu_threads = static_cast<int>(args.get_int("threads", 0, 0, 1024));
  // Measurements default to the exact values; --cpu-linears fast measures the fast path.
  o.cpu_linears = cpu_linears_from(args, CpuLinears::kExact);
  o.ctx = args.get_int("ctx", 2048, 2, 1 << 20);
  o.stride = args.get_int("stride", 0, 0, 1 << 20);
  o.max_tokens = args.get_int("max-tokens", 0, 0, int64_t{1} << 40);
  o.adapters = adapters_from(args);
  o.kv_cache_type = kv_cache_type_from(args);
  return o;
}

int run_ppl(const std::vector<std::string>& raw) {
  const ArgParser args(raw,
                       {"model", "data", "ctx", "stride", "max-tokens", "backend", "device",
                        "threads", "lora", "cache", "cpu-linears"},
                       {"json"});
  const std::string model = args.get("model").value_or(default_model_path().string());
  const std::string text = read_eval_text(args.require("data"));
  const EvalOptions o = eval_options_from(args);
  const bool json = args.has("json");
  const PerplexityResult r = evaluate_perplexity(model, text, o, [&](int64_t done, int64_t total) {
    if (!json)
      std::fprintf(stderr, "\r  %lld / %lld tokens", static_cast<long long>(done),
                   static_cast<long long>(total));
  });
  if (!json) std::fprintf(stderr, "\n");
  if (json) {
    nlohmann::json j{{"model", model},    {"tokens", r.tokens},         {"windows", r.windows},
                     {"nll", r.nll},      {"perplexity", r.perplexity}, {"ctx", o.ctx},
                     {"stride", o.stride}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("perplexity %.4f  (nll %.5f over %lld tokens, %lld window%s)\n", r.perplexity,
                r.nll, static_cast<long long>(r.tokens), static_cast<long long>(r.windows),
                r.windows == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace hearth::cli
