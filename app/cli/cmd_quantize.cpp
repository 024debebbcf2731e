// hearth-cli quantize: an fp16/bf16 model (Hugging Face folder or GGUF) to an EXL2 or GPTQ
// folder, with progress on stderr (or JSON lines on stdout with --json-progress), Ctrl-C to
// stop (the job stays resumable with --resume).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/api/paths.h"
#include "engine/core/error.h"
#include "engine/quantizer/quantize_job.h"

namespace hearth::cli {
namespace {

CancelToken* g_cancel = nullptr;
extern "C" void on_interrupt(int) {
  if (g_cancel) g_cancel->cancel();
}

std::string duration(double s) {
  if (s < 0) return "?";
  char buf[32];
  const auto t = static_cast<long long>(s + 0.5);
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t / 60) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  }
  return buf;
}

}  // namespace

int run_quantize(const std::vector<std::string>& raw) {
  const ArgParser args(
      raw, {"model",          "out",         "format",      "bpw",     "head-bits", "bits",
            "group-size",     "damp",        "calibration", "rows",    "length",    "measure-rows",
            "measure-length", "measurement", "work-dir",    "backend", "device",    "threads",
            "shard-size",     "eval-data",   "eval-ctx"},
      {"resume", "restart", "json-progress", "no-act-order", "asym", "quantize-head", "keep-work",
       "evaluate", "json"});
  QuantizeOptions o;
  // Like every other command, the default model when --model is not given.
  o.source = args.get("model").value_or(default_model_path().string());
  o.output = args.require("out");
  const std::string format = args.get("format").value_or("exl2");
  if (format != "exl2" && format != "gptq") throw UsageError("--format must be exl2 or gptq");
  o.format = format == "gptq" ? QuantizeFormat::kGptq : QuantizeFormat::kExl2;
  o.target_bpw = args.get_double("bpw", 4.0, 0.5, 16.0);
  o.head_bits = static_cast<int>(args.get_int("head-bits", 6, 1, 16));
  o.bits = static_cast<int>(args.get_int("bits", 4, 1, 16));
  o.group_size = args.get_int("group-size", 128, -1, 1 << 20);
  o.damp_percent = args.get_double("damp", 0.01, 1e-6, 0.999);
  o.act_order = !args.has("no-act-order");
  o.symmetric = !args.has("asym");
  o.quantize_head = args.has("quantize-head");
  if (auto c = args.get("calibration")) o.calibration_file = *c;
  if (auto m = args.get("measurement")) o.measurement = *m;
  if (auto w = args.get("work-dir")) o.work_dir = *w;
  o.rows = args.get_int("rows", 0, 0, 100000);
  o.length = args.get_int("length", 0, 0, 65536);
  o.measure_rows = args.get_int("measure-rows", 0, 0, 100000);
  o.measure_length = args.get_int("measure-length", 0, 0, 65536);
  const std::string backend = args.get("backend").value_or("cpu");
  if (backend != "cpu" && backend != "cuda") throw UsageError("--backend must be cpu or cuda");
  o.device = backend == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
  o.cuda_device = static_cast<int>(args.get_int("device", 0, 0, 64));
  o.cpu_threads = static_cast<int>(args.get_int("threads", 0, 0, 1024));
  o.shard_size_mb = args.get_int("shard-size", 8192, 0, 1 << 30);
  o.resume = args.has("resume");
  o.restart = args.has("restart");
  o.keep_work = args.has("keep-work");
  o.evaluate = args.has("evaluate");
  if (auto e = args.get("eval-data")) o.eval_file = *e;
  o.eval_ctx = args.get_int("eval-ctx", 512, 2, 1 << 20);

  const bool json = args.has("json-progress");
  CancelToken cancel;
  g_cancel = &cancel;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  auto progress = [&](const QuantizeProgress& p) {
    if (json) {
      nlohmann::json j{{"event", "progress"},      {"stage", quantize_stage_name(p.stage)},
                       {"step", p.step},           {"steps", p.steps},
                       {"item", p.item},           {"fraction", p.fraction},
                       {"elapsed_s", p.elapsed_s}, {"remaining_s", p.remaining_s}};
      if (!p.message.empty()) j["message"] = p.message;
      std::cout << j.dump() << std::endl;
      return;
    }
    if (!p.message.empty()) std::fprintf(stderr, "\n  %s\n", p.message.c_str());
    std::fprintf(stderr, "\r%-9s %3lld/%-3lld %-28s %5.1f %%  elapsed %s  left %s   ",
                 quantize_stage_name(p.stage), static_cast<long long>(p.step),
                 static_cast<long long>(p.steps), p.item.substr(0, 28).c_str(), 100.0 * p.fraction,
                 duration(p.elapsed_s).c_str(), duration(p.remaining_s).c_str());
    std::fflush(stderr);
  };
  QuantizeResult r;
  try {
    r = quantize_model(o, progress, cancel);
  } catch (const Error& e) {
    g_cancel = nullptr;
    if (!json) std::fprintf(stderr, "\n");
    if (e.code() == ErrorCode::kCancelled) {
      std::fprintf(stderr,
                   "hearth-cli: stopped; continue later with the same command and "
                   "--resume\n");
      return 130;
    }
    throw;
  }
  g_cancel = nullptr;
  nlohmann::json j{{"event", "done"},
                   {"output", r.output.string()},
                   {"bytes_on_disk", r.bytes_on_disk},
                   {"bits_per_weight", r.bits_per_weight},
                   {"head_bits_per_weight", r.head_bits_per_weight},
                   {"seconds", r.seconds},
                   {"warnings", r.warnings}};
  if (r.evaluation) {
    const auto& e = *r.evaluation;
    j["evaluation"] = {{"tokens", e.tokens},
                       {"perplexity_source", e.perplexity_source},
                       {"perplexity_quant", e.perplexity_quant},
                       {"kl_mean", e.kl_mean},
                       {"kl_p999", e.kl_p999},
                       {"top1_agreement", e.top1_agreement}};
  }
  if (json || args.has("json")) {
    std::cout << j.dump(json ? -1 : 2) << std::endl;
    return 0;
  }
  std::fprintf(stderr, "\n");
  std::printf("wrote %s: %.2f MB, %.3f bpw (decoder), head %.2f bpw, in %s\n", r.output.c_str(),
              static_cast<double>(r.bytes_on_disk) / 1e6, r.bits_per_weight, r.head_bits_per_weight,
              duration(r.seconds).c_str());
  for (const auto& w : r.warnings) std::printf("  warning: %s\n", w.c_str());
  if (r.evaluation) {
    const auto& e = *r.evaluation;
    std::printf(
        "perplexity %.4f (source %.4f), KL mean %.5f p99.9 %.4f, top-1 %.2f %% (%lld "
        "tokens)\n",
        e.perplexity_quant, e.perplexity_source, e.kl_mean, e.kl_p999, 100.0 * e.top1_agreement,
        static_cast<long long>(e.tokens));
  }
  return 0;
}

}  // namespace hearth::cli
