// hearth-cli info: what a model is, without loading its weights.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/api/memory_planner.h"

namespace hearth::cli {

int run_info(const std::vector<std::string>& raw) {
  const ArgParser args(raw, load_flags(), {"json"});
  const LoadOptions options = load_options_from(args);
  const ModelInfo info = Engine::inspect(options.model_path);
  const ModelConfig& c = info.config;
  // Each --lora adapter checked against the model (an adapter that does not fit fails here,
  // naming the tensor).
  std::vector<AdapterInfo> adapters;
  for (const AdapterSpec& a : options.adapters) {
    adapters.push_back(Engine::inspect_adapter(a.path, options.model_path));
    adapters.back().weight = a.weight;
  }
  const MemoryPlan plan = Engine::plan(options);

  nlohmann::json j;
  j["path"] = info.path.string();
  j["name"] = info.name;
  j["format"] = model_format_name(info.format);
  j["architecture"] = c.architecture;
  j["parameters"] = info.parameters;
  j["bits_per_weight"] = info.bits_per_weight;
  j["file_bytes"] = info.file_bytes;
  j["tensor_types"] = info.stored_types;
  j["context_length"] = c.max_position_embeddings;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["layers"] = c.num_layers;
  j["heads"] = c.num_heads;
  j["kv_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = rope_scaling_name(c.rope_scaling.type);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["eos_token_ids"] = c.eos_token_ids;
  j["chat_template"] = info.has_chat_template;
  if (!info.quantization.empty()) {
    j["quantization_config"] = nlohmann::json::parse(info.quantization, nullptr, false);
  }
  j["memory"] = {
      {"device", plan.device_name},  {"weights", plan.weights},
      {"kv_cache", plan.kv_cache},   {"activations", plan.activations},
      {"workspace", plan.workspace}, {"adapters", plan.adapters},
      {"needed", plan.needed()},     {"device_free", plan.device_free},
      {"fits", plan.fits},           {"kv_cache_type", kv_cache_type_name(plan.kv_cache_type)}};
  if (!plan.advice.empty()) j["memory"]["advice"] = plan.advice;
  j["memory"]["gpus"] = nlohmann::json::array();
  for (const GpuShare& g : plan.gpus) {
    j["memory"]["gpus"].push_back({{"device", g.device},
                                   {"name", g.name},
                                   {"first_layer", g.first_layer},
                                   {"layers", g.layers},
                                   {"weights", g.weights},
                                   {"kv_cache", g.kv_cache},
                                   {"activations", g.activations},
                                   {"workspace", g.workspace},
                                   {"needed", g.needed()},
                                   {"device_free", g.device_free},
                                   {"fits", g.fits}});
  }
  j["memory"]["cache_choices"] = nlohmann::json::array();
  for (const CacheChoice& c : plan.cache_choices) {
    j["memory"]["cache_choices"].push_back({{"type", kv_cache_type_name(c.type)},
                                            {"bytes_per_token", c.bytes_per_token},
                                            {"tokens_that_fit", c.tokens_that_fit}});
  }
  j["adapters"] = nlohmann::json::array();
  for (const AdapterInfo& a : adapters) {
    j["adapters"].push_back({{"path", a.path.string()},
                             {"name", a.name},
                             {"format", a.format},
                             {"rank", a.rank},
                             {"alpha", a.alpha},
                             {"rslora", a.rslora},
                             {"targets", a.targets},
                             {"layers", a.layers},
                             {"bytes", a.bytes},
                             {"weight", a.weight},
                             {"fits", true}});
  }
  const CudaStatus& gpu = Engine::cuda_status();
  j["gpu"] = {{"available", gpu.available}, {"status", gpu.summary}};

  if (args.has("json")) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%s\n", info.name.c_str());
  std::printf("  path           %s\n", info.path.c_str());
  std::printf("  format         %s (%s)\n", model_format_name(info.format),
              info.stored_types.c_str());
  std::printf("  architecture   %s\n", c.architecture.c_str());
  std::printf("  parameters     %.1f M (%.2f bits per weight, %s on disk)\n",
              static_cast<double>(info.parameters) / 1e6, info.bits_per_weight,
              format_bytes(info.file_bytes).c_str());
  std::printf("  layers         %lld, hidden %lld, mlp %lld, heads %lld (kv %lld), head dim %lld\n",
              static_cast<long long>(c.num_layers), static_cast<long long>(c.hidden_size),
              static_cast<long long>(c.intermediate_size), static_cast<long long>(c.num_heads),
              static_cast<long long>(c.num_kv_heads), static_cast<long long>(c.head_dim));
  std::printf("  vocabulary     %lld tokens%s\n", static_cast<long long>(c.vocab_size),
              c.tie_word_embeddings ? ", head tied to the embeddings" : "");
  std::printf("  context        %lld tokens, rope theta %g, scaling %s\n",
              static_cast<long long>(c.max_position_embeddings), c.rope_theta,
              rope_scaling_name(c.rope_scaling.type));
  if (!info.quantization.empty()) std::printf("  quantization   %s\n", info.quantization.c_str());
  std::printf("  memory on %s: %s needed (weights %s, cache %s, activations %s%s), %s free%s\n",
              plan.device_name.c_str(), format_bytes(plan.needed()).c_str(),
              format_bytes(plan.weights).c_str(), format_bytes(plan.kv_cache).c_str(),
              format_bytes(plan.activations).c_str(),
              plan.adapters ? (", adapters " + format_bytes(plan.adapters)).c_str() : "",
              format_bytes(plan.device_free).c_str(), plan.fits ? "" : " — does not fit");
  if (plan.gpus.size() > 1) {
    for (const GpuShare& g : plan.gpus) {
      std::printf(
          "    %-12s layers %lld–%lld: %s (weights %s, cache %s), %s free%s\n",
          ("GPU " + std::to_string(g.device)).c_str(), static_cast<long long>(g.first_layer),
          static_cast<long long>(g.first_layer + g.layers - 1), format_bytes(g.needed()).c_str(),
          format_bytes(g.weights).c_str(), format_bytes(g.kv_cache).c_str(),
          format_bytes(g.device_free).c_str(), g.fits ? "" : " — does not fit");
    }
  }
  if (!plan.advice.empty()) std::printf("  advice         %s\n", plan.advice.c_str());
  // Tokens each --cache choice would hold (* the one planned); fp16 is fp32 on the CPU.
  std::string choices;
  for (const CacheChoice& c : plan.cache_choices) {
    const bool cpu_full = c.type == KvCacheType::kF16 && options.device == DeviceKind::kCpu;
    choices += std::string(choices.empty() ? "" : ", ") + kv_cache_type_name(c.type) +
               (cpu_full ? " (fp32)" : "") + (c.type == plan.kv_cache_type ? "*" : "") + " " +
               std::to_string(c.tokens_that_fit) + " tokens (" +
               std::to_string(c.bytes_per_token >> 10) + " KiB each)";
  }
  if (!choices.empty()) std::printf("  cache fits     %s\n", choices.c_str());
  for (const AdapterInfo& a : adapters) {
    std::string targets;
    for (const std::string& t : a.targets) targets += (targets.empty() ? "" : ",") + t;
    std::printf(
        "  adapter        %s (%s, rank %lld, alpha %g%s, %s on %lld layers, %s, weight %g): "
        "fits\n",
        a.name.c_str(), a.format.c_str(), static_cast<long long>(a.rank), a.alpha,
        a.rslora ? ", rsLoRA" : "", targets.c_str(), static_cast<long long>(a.layers),
        format_bytes(a.bytes).c_str(), static_cast<double>(a.weight));
  }
  std::printf("  gpu            %s\n", gpu.summary.c_str());
  return 0;
}

}  // namespace hearth::cli
