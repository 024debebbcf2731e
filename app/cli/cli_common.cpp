#include "app/cli/cli_common.h"

#include <unistd.h>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/api/paths.h"

namespace hearth::cli {

std::set<std::string> merge(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::set<std::string> load_flags() {
  return {"model",        "backend",      "threads",     "max-seq-len",  "cache-tokens",
          "device",       "gpus",         "split",       "gpu-split",    "gpu-reserve",
          "max-batch",    "rope-scaling", "rope-factor", "ntk-alpha",    "rope-original-context",
          "prefix-reuse", "cache",        "speculate",   "draft-tokens", "draft-model",
          "lora",         "cpu-linears"};
}

CpuLinears cpu_linears_from(const ArgParser& args, CpuLinears fallback) {
  const std::string name = args.get("cpu-linears").value_or(cpu_linears_name(fallback));
  if (name == "fast") return CpuLinears::kFast;
  if (name == "exact") return CpuLinears::kExact;
  throw UsageError("--cpu-linears must be fast or exact, got '" + name + "'");
}

KvCacheType kv_cache_type_from(const ArgParser& args) {
  const std::string name = args.get("cache").value_or("fp16");
  const std::optional<KvCacheType> type = parse_kv_cache_type(name);
  if (!type) throw UsageError("--cache must be fp16, q8, q6 or q4, got '" + name + "'");
  return *type;
}

std::vector<AdapterSpec> adapters_from(const ArgParser& args) {
  std::vector<AdapterSpec> out;
  for (const std::string& value : args.get_all("lora")) {
    AdapterSpec a;
    a.path = value;
    // PATH:WEIGHT when what follows the last ':' is a number (paths rarely end so).
    if (const size_t colon = value.rfind(':'); colon != std::string::npos) {
      const std::string weight = value.substr(colon + 1);
      char* end = nullptr;
      errno = 0;
      const double w = std::strtod(weight.c_str(), &end);
      if (!weight.empty() && *end == '\0') {
        if (errno == ERANGE || !std::isfinite(w) || w < -100 || w > 100) {
          throw UsageError("--lora " + value + ": the weight must be a number from -100 to 100");
        }
        a.path = value.substr(0, colon);
        a.weight = static_cast<float>(w);
      }
    }
    if (a.path.empty()) throw UsageError("--lora needs a path");
    out.push_back(std::move(a));
  }
  if (out.size() > static_cast<size_t>(Engine::kMaxAdapters)) {
    throw UsageError("at most " + std::to_string(Engine::kMaxAdapters) + " --lora adapters");
  }
  return out;
}

void gpu_options_from(const ArgParser& args, LoadOptions& o) {
  if (auto gpus = args.get("gpus")) {
    if (args.has("device")) throw UsageError("--device and --gpus do not go together");
    for (const std::string& item : split_list(*gpus)) {
      char* end = nullptr;
      const long g = std::strtol(item.c_str(), &end, 10);
      if (*end != '\0' || g < 0 || g > 64) {
        throw UsageError("--gpus takes device numbers, e.g. 0,1; got '" + *gpus + "'");
      }
      o.gpus.push_back(static_cast<int>(g));
    }
    if (o.gpus.empty()) throw UsageError("--gpus needs at least one device number");
  }
  const std::string split = args.get("split").value_or("layer");
  if (split != "layer" && split != "tensor") {
    throw UsageError("--split must be layer or tensor, got '" + split + "'");
  }
  o.gpu_split = split == "tensor" ? GpuSplit::kTensor : GpuSplit::kLayers;
  if (auto sizes = args.get("gpu-split")) {
    for (const std::string& item : split_list(*sizes)) {
      char* end = nullptr;
      errno = 0;
      const double gib = std::strtod(item.c_str(), &end);
      if (*end != '\0' || errno == ERANGE || !std::isfinite(gib) || gib <= 0) {
        throw UsageError("--gpu-split takes GiB per GPU, e.g. 20,24; got '" + *sizes + "'");
      }
      o.gpu_split_gib.push_back(gib);
    }
  }
  if (args.has("gpu-reserve")) {
    const double gib = args.get_double("gpu-reserve", 0.25, 0.0, 1024.0);
    o.gpu_reserve_bytes = static_cast<size_t>(gib * double(size_t{1} << 30));
  }
  const size_t gpus = o.gpus.empty() ? 1 : o.gpus.size();
  if ((args.has("split") || args.has("gpu-split")) && gpus < 2) {
    throw UsageError("--split and --gpu-split need two or more --gpus");
  }
  if (!o.gpu_split_gib.empty() && o.gpu_split_gib.size() != gpus) {
    throw UsageError("--gpu-split needs one size per GPU of --gpus");
  }
  if ((!o.gpus.empty() || args.has("split")) && o.device != DeviceKind::kCuda) {
    throw UsageError("--gpus needs --backend cuda");
  }
}

LoadOptions load_options_from(const ArgParser& args) {
  LoadOptions o;
  o.model_path = args.get("model").value_or(default_model_path().string());
  const std::string backend = args.get("backend").value_or("cpu");
  if (backend == "cpu") {
    o.device = DeviceKind::kCpu;
  } else if (backend == "cuda") {
    o.device = DeviceKind::kCuda;
  } else {
    throw UsageError("--backend must be cpu or cuda, got '" + backend + "'");
  }
  o.cuda_device = static_cast<int>(args.get_int("device", 0, 0, 64));
  gpu_options_from(args, o);
  o.cpu_threads = static_cast<int>(args.get_int("threads", 0, 0, 1024));
  o.cpu_linears = cpu_linears_from(args, CpuLinears::kFast);
  o.max_seq_len = args.get_int("max-seq-len", 0, 0, 1 << 22);
  o.cache_tokens = args.get_int("cache-tokens", 0, 0, 1 << 26);
  o.max_batch = static_cast<int>(args.get_int("max-batch", 8, 1, 256));
  const std::string reuse = args.get("prefix-reuse").value_or("on");
  if (reuse != "on" && reuse != "off") {
    throw UsageError("--prefix-reuse must be on or off, got '" + reuse + "'");
  }
  o.prefix_reuse = reuse == "on";
  o.kv_cache_type = kv_cache_type_from(args);
  const std::string speculate = args.get("speculate").value_or("off");
  const std::optional<Speculation> speculation = parse_speculation(speculate);
  if (!speculation) {
    throw UsageError("--speculate must be off, ngram or draft, got '" + speculate + "'");
  }
  o.speculation = *speculation;
  o.draft_tokens =
      static_cast<int>(args.get_int("draft-tokens", 8, 1, LoadOptions::kMaxDraftTokens));
  if (args.has("draft-tokens") && o.speculation == Speculation::kOff) {
    throw UsageError("--draft-tokens needs --speculate");
  }
  if (auto draft = args.get("draft-model")) o.draft_model_path = *draft;
  if ((o.speculation == Speculation::kDraft) != args.has("draft-model")) {
    throw UsageError("--speculate draft and --draft-model PATH go together");
  }
  if (auto type = args.get("rope-scaling")) {
    RopeScaling rs;
    if (*type == "none") {
      rs.type = RopeScalingType::kNone;
    } else if (*type == "linear") {
      rs.type = RopeScalingType::kLinear;
    } else if (*type == "dynamic") {
      rs.type = RopeScalingType::kDynamic;
    } else if (*type == "yarn") {
      rs.type = RopeScalingType::kYarn;
    } else if (*type == "llama3") {
      rs.type = RopeScalingType::kLlama3;
    } else {
      throw UsageError("--rope-scaling must be none, linear, dynamic, yarn or llama3");
    }
    rs.factor = args.get_double("rope-factor", 1.0, 1.0, 1024.0);
    rs.original_max_position_embeddings = args.get_int("rope-original-context", 0, 0, 1 << 24);
    o.rope_scaling = rs;
  } else if (args.has("rope-factor")) {
    throw UsageError("--rope-factor needs --rope-scaling");
  }
  if (args.has("ntk-alpha")) o.ntk_alpha = args.get_double("ntk-alpha", 1.0, 1.0, 1000.0);
  o.adapters = adapters_from(args);
  return o;
}

std::set<std::string> sampling_flags() {
  return {"temperature",      "top-k", "top-p", "min-p", "repetition-penalty", "frequency-penalty",
          "presence-penalty", "seed"};
}

SamplingParams sampling_from(const ArgParser& args) {
  SamplingParams s;
  s.temperature = static_cast<float>(args.get_double("temperature", 0.0, 0.0, 100.0));
  s.top_k = static_cast<int32_t>(args.get_int("top-k", 0, 0, 1 << 24));
  s.top_p = static_cast<float>(args.get_double("top-p", 1.0, 1e-6, 1.0));
  s.min_p = static_cast<float>(args.get_double("min-p", 0.0, 0.0, 1.0));
  s.repetition_penalty =
      static_cast<float>(args.get_double("repetition-penalty", 1.0, 1e-3, 100.0));
  s.frequency_penalty = static_cast<float>(args.get_double("frequency-penalty", 0.0, -100, 100));
  s.presence_penalty = static_cast<float>(args.get_double("presence-penalty", 0.0, -100, 100));
  s.seed = static_cast<uint64_t>(args.get_int("seed", 0, 0, INT64_MAX));
  return s;
}

void load_engine(Engine& engine, const LoadOptions& options, bool show_progress) {
  // A single self-overwriting line, only on a terminal and only when the percentage moves.
  show_progress = show_progress && isatty(fileno(stderr));
  int last_percent = -1;
  engine.load(options, [&](const LoadProgress& p) {
    if (!show_progress) return;
    const int percent = p.total > 0 ? static_cast<int>(100 * p.done / p.total) : 0;
    if (percent == last_percent && p.stage != "ready") return;
    last_percent = percent;
    if (p.stage == "ready") {
      std::fprintf(stderr, "\r\033[K");
    } else {
      std::fprintf(stderr, "\r\033[K%s %d%%", p.stage.c_str(), percent);
    }
    std::fflush(stderr);
  });
}

}  // namespace hearth::cli
