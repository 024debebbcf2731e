// SmolLM2-135M-Instruct on the CUDA backend (fp16) against transformers: the committed CPU fp32
// reference (tests/fixtures/model/hf_parity.json) and, when HEARTH_HF_GPU_FIXTURE names one, a
// reference made by tests/reference/hf_parity.py on the GPU machine. Skips without a GPU or without
// the model file. Gates (TESTING.md, "Numerical gates"): greedy continuations identical or
// diverging only where our token is in the reference's top 5; mean KL ≤ 1e-4, 99.9th percentile ≤
// 5e-3, same top token ≥ 99 %.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/model_loader.h"
#include "tests/common/hf_parity.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {

// `adapters`: LoRA adapters (path, weight) the reference ran with.
void check_cases(const std::vector<test::ParityCase>& cases, const std::string& label,
                 const std::vector<std::pair<std::filesystem::path, float>>& adapters = {}) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "skipped: no GPU";
  if (!std::filesystem::exists(test::test_model())) {
    GTEST_SKIP() << "skipped: " << test::test_model() << " is not on this machine";
  }
  const char* label_c = label.c_str();
  const ModelBundle bundle = open_model(test::test_model(), true);
  auto backend = create_cuda_backend();
  LlamaModelOptions o;
  o.max_seq_len = 256;
  o.max_batch_tokens = 128;
  o.max_logit_rows = 128;
  LlamaModel model(bundle.info.config, *backend, *bundle.weights, o);
  std::vector<std::shared_ptr<const LoraAdapter>> slots;
  std::vector<float> weights;
  for (const auto& [path, weight] : adapters) {
    slots.push_back(
        std::make_shared<const LoraAdapter>(read_lora_adapter(path, bundle.info.config)));
    weights.push_back(weight);
  }
  model.set_adapters(slots);

  const test::LogitStats st = test::compare_logits(model, *backend, cases, weights);
  std::printf(
      "[ %s ] positions %lld, max |logit diff| %.3e, max |lse diff| %.3e, mean KL %.3e, "
      "99.9th pct KL %.3e, same top token %.2f%%\n",
      label_c, static_cast<long long>(st.positions), st.max_logit_err, st.max_lse_err, st.mean_kl,
      st.p999_kl, 100 * st.same_top);
  EXPECT_LE(st.mean_kl, 1e-4);
  EXPECT_LE(st.p999_kl, 5e-3);
  EXPECT_GE(st.same_top, 0.99);

  std::vector<size_t> all;
  for (size_t i = 0; i < cases.size(); ++i) all.push_back(i);
  const auto ours =
      test::greedy_continuations(model, *backend, *bundle.tokenizer, cases, all, weights);
  int identical = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    bool in_top5 = true;
    const int at = test::first_divergence(cases[i], ours[i], &in_top5);
    identical += at < 0;
    if (at >= 0) {
      std::printf("[ %s ] prompt %zu diverges at token %d (ours in reference top-5: %s)\n", label_c,
                  i, at, in_top5 ? "yes" : "no");
    }
    EXPECT_TRUE(in_top5) << "prompt " << i << " diverges at " << at;
  }
  std::printf("[ %s ] %d of %zu greedy continuations identical\n", label_c, identical,
              cases.size());
}

void check_against(const std::filesystem::path& fixture, const char* label) {
  check_cases(test::load_parity_cases(fixture), label);
}

TEST(GpuHfParity, AgainstTransformersCpuFp32) {
  check_against(test::fixtures_dir() / "model" / "hf_parity.json", "vs transformers cpu fp32");
}

TEST(GpuHfParity, AgainstTransformersOnTheGpu) {
  const char* path = std::getenv("HEARTH_HF_GPU_FIXTURE");
  if (!path || !*path) GTEST_SKIP() << "skipped: HEARTH_HF_GPU_FIXTURE is not set";
  check_against(path, "vs transformers gpu");
}

// LoRA adapters (tests/fixtures/lora, made with PEFT by tests/reference/lora_peft_fixtures.py) on
// fp16 activations, with the same gates: each case alone and the weighted pair, PEFT and GGUF.
TEST(GpuHfParity, LoraAdaptersAgainstPeft) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "skipped: no GPU";
  const std::filesystem::path dir = test::fixtures_dir() / "lora";
  const nlohmann::json j = test::load_json_fixture(dir / "expected.json");
  for (const auto& c : j["cases"]) {
    for (const char* suffix : {"", ".gguf"}) {
      std::vector<std::pair<std::filesystem::path, float>> adapters;
      std::string label = "lora";
      bool has_gguf = true;
      for (const auto& a : c["adapters"]) {
        const std::string path = a["path"].get<std::string>() + suffix;
        has_gguf = has_gguf && std::filesystem::exists(dir / path);
        adapters.emplace_back(dir / path, a["weight"].get<float>());
        label += " " + path + " x" + std::to_string(a["weight"].get<float>());
      }
      if (*suffix && !has_gguf) continue;
      check_cases(test::parity_cases_from(c["prompts"]), label, adapters);
    }
  }
}

}  // namespace
}  // namespace hearth
