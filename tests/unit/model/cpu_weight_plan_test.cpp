// The CPU memory plan of EXL2 and GPTQ folders against what the CPU backend's fast path holds
// once the model is loaded: the quantized linears at their re-laid size. EXL2 groups wider than
// 4 bits take a byte per weight there, so such a model needs more memory than its file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/api/engine.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/model/llama_model.h"
#include "engine/model/model_loader.h"
#include "engine/quantizer/hf_export.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

// A synthetic quantized model of the "tiny" shape written as a model folder.
fs::path write_quantized_folder(const fs::path& dir, const SyntheticQuantSource::Options& o) {
  ModelConfig config = synthetic_model_config("tiny");
  SyntheticQuantSource source(config, o);
  quantizer::NamedTensors tensors;
  for (const std::string& name : source.tensor_names()) tensors.emplace_back(name, source.get(name));
  fs::create_directories(dir);
  quantizer::write_safetensors(dir / "model.safetensors", tensors);
  nlohmann::ordered_json cfg = quantizer::config_json_from(config);
  cfg["quantization_config"] = nlohmann::json::parse(source.quantization_config_json());
  quantizer::write_file_atomically(dir / "config.json", cfg.dump(2));
  return dir;
}

TEST(CpuWeightPlan, QuantizedFoldersArePlannedAtTheirReLaidSize) {
  const fs::path root = fs::temp_directory_path() / ("hearth_cpu_plan_" + std::to_string(getpid()));
  struct Case {
    const char* format;
    double bpw;
  };
  for (const Case& c : {Case{"exl2", 6.0}, Case{"exl2", 4.0}, Case{"gptq", 4.0}}) {
    const std::string what = std::string(c.format) + " " + std::to_string(c.bpw);
    SyntheticQuantSource::Options o;
    o.format = c.format;
    o.bpw = c.bpw;
    const fs::path dir = write_quantized_folder(root / (c.format + std::to_string(c.bpw)), o);

    LoadOptions load;
    load.model_path = dir;
    load.device = DeviceKind::kCpu;
    load.cpu_linears = CpuLinears::kFast;
    const MemoryPlan plan = Engine::plan(load);
    const ModelBundle bundle = open_model(dir, false);
    EXPECT_EQ(plan.weights, bundle.info.cpu_fast_weight_bytes) << what;

    auto backend = create_cpu_backend(2, CpuLinears::kFast);
    LlamaModelOptions mo;
    mo.max_seq_len = 64;
    LlamaModel model(bundle.info.config, *backend, *bundle.weights, mo);
    const auto held = static_cast<double>(backend->memory_usage().weights);
    // The plan counts each linear's file bytes by its bits per weight; the file also holds a
    // header and the layers' small tensors.
    EXPECT_NEAR(static_cast<double>(plan.weights), held, 0.03 * held) << what;
    if (c.bpw > 4.0) {
      EXPECT_GT(held, 1.15 * static_cast<double>(bundle.info.file_bytes)) << what;
    }
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace hearth
