// hearth-cli bench: prompt and decode speed of a model on a backend.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/api/memory_planner.h"
#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#if HEARTH_WITH_CUDA
#include "engine/bench/cuda_bench.h"
#include "engine/bench/quant_bench.h"
#include "engine/bench/split_bench.h"
#endif

namespace hearth::cli {

namespace {

// --batches 1,8,32: the decode batch sizes of a synthetic benchmark (empty: its defaults).
std::vector<int64_t> decode_batches(const ArgParser& args) {
  std::vector<int64_t> batches;
  const auto list = args.get("batches");
  if (!list) return batches;
  auto batch_size = [](const std::string& b) -> int64_t {  // 0: not a size from 1 to 256
    size_t used = 0;
    try {
      const long long v = std::stoll(b, &used);
      return used == b.size() && v >= 1 && v <= 256 ? v : 0;
    } catch (const std::exception&) {
      return 0;
    }
  };
  for (const std::string& b : split_list(*list)) batches.push_back(batch_size(b));
  if (batches.empty() || std::count(batches.begin(), batches.end(), 0) > 0) {
    throw UsageError("--batches: decode batch sizes from 1 to 256, comma-separated");
  }
  return batches;
}

// Synthetic models of real shapes (random weights made in memory) on the GPU: fp16, or EXL2 /
// GPTQ with --quant. Prints the benchmark's own tables (or its JSON).
int run_synthetic_bench(const ArgParser& args) {
  const std::vector<int64_t> batches = decode_batches(args);
#if HEARTH_WITH_CUDA
  const std::vector<std::string> models = split_list(*args.get("synthetic"));
  const int device = static_cast<int>(args.get_int("device", 0, 0, 64));
  std::string text;
  nlohmann::json json;
  if (args.has("gpus")) {
    // Layer split and tensor parallelism over the GPUs against the first alone, per model and
    // quantization.
    SplitBenchOptions o;
    LoadOptions gpus;
    gpus.device = DeviceKind::kCuda;
    gpu_options_from(args, gpus);
    o.gpus = gpus.gpus;
    // --split names one way alone; without it both run.
    if (args.has("split")) {
      o.layer_split = gpus.gpu_split == GpuSplit::kLayers;
      o.tensor_parallel = gpus.gpu_split == GpuSplit::kTensor;
    }
    if (!batches.empty()) o.decode_batches = batches;
    if (auto ways = args.get("all-reduce")) o.all_reduce = split_list(*ways);
    const std::vector<std::string> quants =
        args.has("quant") ? split_list(*args.get("quant")) : std::vector<std::string>{""};
    json = nlohmann::json::array();
    for (const std::string& model : models) {
      for (const std::string& quant : quants) {
        o.model = model;
        o.quant = quant;
        const SplitBenchReport r = run_layer_split_benchmark(o);
        text += r.text;
        json.push_back(r.json);
      }
    }
  } else if (auto quants = args.get("quant")) {
    QuantBenchOptions o;
    o.models = models;
    o.quants = split_list(*quants);
    o.device = device;
    o.kernel_sweep = args.has("sweep");
    if (!batches.empty()) o.decode_batches = batches;
    const QuantBenchReport r = run_quant_benchmark(o);
    text = r.text;
    json = r.json;
  } else {
    BenchOptions o;
    o.models = models;
    o.device = device;
    o.kernel_sweep = args.has("sweep");
    if (!batches.empty()) o.decode_batches = batches;
    o.variants = false;
    const BenchReport r = run_backend_benchmark(o);
    text = r.text;
    json = r.json;
  }
  if (args.has("json")) {
    std::cout << json.dump(2) << "\n";
  } else {
    std::cout << text;
  }
  return 0;
#else
  (void)batches;
  fail(ErrorCode::kUnsupported, "synthetic benchmarks run on the GPU; this build has no CUDA");
#endif
}

}  // namespace

int run_bench(const std::vector<std::string>& raw) {
  const ArgParser args(raw,
                       merge(load_flags(), {"prompt-len", "gen-len", "batch", "repeat", "synthetic",
                                            "quant", "batches", "all-reduce"}),
                       {"json", "sweep"});
  if (args.has("synthetic")) return run_synthetic_bench(args);
  if (args.has("quant")) throw UsageError("--quant needs --synthetic");
  LoadOptions options = load_options_from(args);
  const int64_t prompt_len = args.get_int("prompt-len", 128, 1, 1 << 20);
  const auto gen_len = static_cast<int32_t>(args.get_int("gen-len", 64, 2, 1 << 20));
  const int batch = static_cast<int>(args.get_int("batch", 1, 1, 256));
  const int repeat = static_cast<int>(args.get_int("repeat", 3, 1, 100));
  options.max_batch = std::max(options.max_batch, batch);
  if (options.max_seq_len == 0) options.max_seq_len = prompt_len + gen_len + 1;
  if (options.cache_tokens == 0) options.cache_tokens = (prompt_len + gen_len + 256) * batch;

  Engine engine;
  load_engine(engine, options, !args.has("json"));
  std::mt19937 rng(1234);
  const int32_t vocab = engine.tokenizer().vocab_size();
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);

  // Each run: `batch` prompts of random tokens, generated to gen_len with eos ignored. The
  // best run counts (the first also warms caches).
  double best_prompt = 0, best_decode = 0;
  DecodeStepTimes best_steps;  // the run whose decode steps delivered the most tokens/s
  auto steps_rate = [](const DecodeStepTimes& t) {
    return t.wall_seconds > 0 ? static_cast<double>(t.tokens) / t.wall_seconds : 0.0;
  };
  for (int r = 0; r < repeat; ++r) {
    engine.reset_decode_step_times();
    std::vector<GenerationRequest> requests(batch);
    for (auto& req : requests) {
      req.prompt_tokens.resize(static_cast<size_t>(prompt_len));
      for (auto& t : req.prompt_tokens) t = token(rng);
      req.max_tokens = gen_len;
      req.ignore_eos = true;
    }
    const auto results = engine.generate_batch(requests);
    double prompt_s = 0, decode_s = 0;
    int64_t decoded = 0;
    for (const auto& res : results) {
      prompt_s = std::max(prompt_s, res.stats.prompt_seconds);
      decode_s = std::max(decode_s, res.stats.decode_seconds);
      decoded += res.stats.generated_tokens - 1;
    }
    const double prompt_tps = prompt_s > 0 ? static_cast<double>(prompt_len * batch) / prompt_s : 0;
    const double decode_tps = decode_s > 0 ? static_cast<double>(decoded) / decode_s : 0;
    best_prompt = std::max(best_prompt, prompt_tps);
    best_decode = std::max(best_decode, decode_tps);
    const DecodeStepTimes steps = engine.decode_step_times();
    if (steps_rate(steps) > steps_rate(best_steps)) best_steps = steps;
  }
  // Per decode step (steps without prompt chunks): the forward call, sampling (where the CUDA
  // backend waits for the pass) and the generator's own work, which the model's time is
  // measured against.
  const double n_steps = static_cast<double>(std::max<int64_t>(best_steps.steps, 1));
  const double step_ms = best_steps.wall_seconds * 1e3 / n_steps;
  const double forward_ms = best_steps.forward_seconds * 1e3 / n_steps;
  const double sampling_ms = best_steps.sample_seconds * 1e3 / n_steps;
  const double generator_ms = best_steps.generator_seconds() * 1e3 / n_steps;
  const double model_ms = forward_ms + sampling_ms;
  const double generator_share = model_ms > 0 ? generator_ms / model_ms : 0.0;

  const MemoryUsage mem = engine.memory_usage();
  nlohmann::json j;
  j["model"] = engine.info().name;
  j["backend"] = options.device == DeviceKind::kCuda ? "cuda" : "cpu";
  j["prompt_len"] = prompt_len;
  j["gen_len"] = gen_len;
  j["batch"] = batch;
  j["prompt_tokens_per_s"] = best_prompt;
  j["decode_tokens_per_s"] = best_decode;
  j["weights_bytes"] = mem.weights;
  j["decode_steps"] = {{"steps", best_steps.steps},
                       {"tokens", best_steps.tokens},
                       {"tokens_per_s", steps_rate(best_steps)},
                       {"ms_per_step", step_ms},
                       {"forward_call_ms", forward_ms},
                       {"sampling_ms", sampling_ms},
                       {"generator_ms", generator_ms},
                       {"generator_share", generator_share}};
  if (args.has("json")) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf(
        "%s on %s, batch %d: prompt %lld tokens at %.1f tok/s, decode %.1f tok/s "
        "(weights %s)\n",
        engine.info().name.c_str(), j["backend"].get<std::string>().c_str(), batch,
        static_cast<long long>(prompt_len), best_prompt, best_decode,
        format_bytes(mem.weights).c_str());
    std::printf(
        "decode steps: %.1f tok/s over %lld steps of %.3f ms (forward call %.3f, sampling %.3f, "
        "generator %.3f ms: %.1f %% of the model's time)\n",
        steps_rate(best_steps), static_cast<long long>(best_steps.steps), step_ms, forward_ms,
        sampling_ms, generator_ms, 100.0 * generator_share);
  }
  return 0;
}

}  // namespace hearth::cli
