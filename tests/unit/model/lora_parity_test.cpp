// SmolLM2-135M-Instruct with LoRA adapters on the CPU backend against transformers + PEFT (fp32,
// CPU) on the same GGUF weights. Reference: tests/fixtures/lora/expected.json and the adapters
// beside it, made by tests/reference/lora_peft_fixtures.py: a rank-8 adapter on q/k/v/o, a
// rank-16 rsLoRA adapter on all seven projections of some layers (also as a llama.cpp GGUF
// adapter), and both at weights 0.7 / 0.3. Gates as for the base model (hf_parity_test.cpp):
// greedy 32-token continuations identical; the reference's top-40 logits and log-sum-exp
// within 2e-3 at every position; mean KL ≤ 1e-4.
#include <gtest/gtest.h>

#include "engine/api/engine.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/model_loader.h"
#include "tests/common/hf_parity.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {

std::filesystem::path lora_fixtures() {
  return test::fixtures_dir() / "lora";
}

struct AdapterCase {
  std::vector<std::pair<std::string, float>> adapters;  // fixture path, weight
  std::vector<test::ParityCase> prompts;
  std::vector<std::vector<int32_t>> base_greedy;  // the base model's tokens for each prompt
};

std::vector<AdapterCase> load_cases() {
  const nlohmann::json j = test::load_json_fixture(lora_fixtures() / "expected.json");
  std::vector<AdapterCase> cases;
  for (const auto& c : j["cases"]) {
    AdapterCase a;
    for (const auto& ad : c["adapters"]) {
      a.adapters.emplace_back(ad["path"].get<std::string>(), ad["weight"].get<float>());
    }
    a.prompts = test::parity_cases_from(c["prompts"]);
    for (const auto& p : c["prompts"]) {
      a.base_greedy.push_back(p["base_greedy_ids"].get<std::vector<int32_t>>());
    }
    cases.push_back(std::move(a));
  }
  return cases;
}

class LoraParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cases_ = load_cases();
    smol_ = new test::CpuTestModel();
  }
  static void TearDownTestSuite() { delete smol_; }

  // Applies case `c`'s adapters (read from `suffix`-ed paths: "" for PEFT folders) and returns
  // the slot weights.
  static std::vector<float> apply(const AdapterCase& c, const std::string& suffix = "") {
    std::vector<std::shared_ptr<const LoraAdapter>> slots;
    std::vector<float> weights;
    for (const auto& [path, weight] : c.adapters) {
      slots.push_back(std::make_shared<const LoraAdapter>(
          read_lora_adapter(lora_fixtures() / (path + suffix), smol_->bundle.info.config)));
      weights.push_back(weight);
    }
    smol_->model->set_adapters(slots);
    return weights;
  }

  static void expect_close(const AdapterCase& c, const std::vector<float>& weights,
                           const std::string& what) {
    const test::LogitStats st =
        test::compare_logits(*smol_->model, *smol_->backend, c.prompts, weights);
    std::printf(
        "%s: positions %lld, max |logit diff| %.2e, max |lse diff| %.2e, mean KL %.2e, "
        "same top token %.2f%%\n",
        what.c_str(), static_cast<long long>(st.positions), st.max_logit_err, st.max_lse_err,
        st.mean_kl, 100 * st.same_top);
    EXPECT_LE(st.max_logit_err, 2e-3) << what;
    EXPECT_LE(st.max_lse_err, 2e-3) << what;
    EXPECT_LE(st.mean_kl, 1e-4) << what;
    EXPECT_EQ(st.same_top, 1.0) << what;
    std::vector<size_t> all;
    for (size_t i = 0; i < c.prompts.size(); ++i) all.push_back(i);
    const auto greedy = test::greedy_continuations(
        *smol_->model, *smol_->backend, *smol_->bundle.tokenizer, c.prompts, all, weights);
    for (size_t i = 0; i < c.prompts.size(); ++i) {
      EXPECT_EQ(greedy[i], c.prompts[i].greedy) << what << ", prompt " << i;
    }
  }

  static inline std::vector<AdapterCase> cases_;
  static inline test::CpuTestModel* smol_ = nullptr;
};

TEST_F(LoraParity, PeftAdaptersAloneAndWeighted) {
  ASSERT_EQ(cases_.size(), 3u);
  for (const AdapterCase& c : cases_) {
    std::string what;
    for (const auto& [path, weight] : c.adapters) what += path + "×" + std::to_string(weight) + " ";
    expect_close(c, apply(c), what);
    // The fixtures are not vacuous: the adapters change the greedy text.
    int changed = 0;
    for (size_t i = 0; i < c.prompts.size(); ++i)
      changed += c.prompts[i].greedy != c.base_greedy[i];
    EXPECT_GE(changed, 2) << what;
  }
  smol_->model->set_adapters({});
}

TEST_F(LoraParity, GgufAdapterEqualsItsPeftSource) {
  // all_r16.gguf holds all_r16 as llama.cpp's converter writes it (q/k rows interleaved, the
  // rsLoRA scale folded into alpha).
  const AdapterCase& c = cases_.at(1);
  ASSERT_EQ(c.adapters.size(), 1u);
  ASSERT_EQ(c.adapters[0].first, "all_r16");
  expect_close(c, apply(c, ".gguf"), "all_r16.gguf");
  smol_->model->set_adapters({});
}

// Through the Engine: adapters loaded, re-weighted and unloaded without reloading the model, per
// request; results record them; an adapter for another model leaves the model working.
TEST_F(LoraParity, EngineAppliesAdaptersPerRequest) {
  Engine engine;
  LoadOptions lo;
  lo.model_path = test::test_model();
  lo.device = DeviceKind::kCpu;
  lo.max_batch = 4;
  engine.load(lo);
  const AdapterCase& mixed = cases_.at(2);
  const int attn = engine.load_adapter(lora_fixtures() / "attn_r8", 0.7f);
  const int all = engine.load_adapter(lora_fixtures() / "all_r16.gguf", 0.3f);
  ASSERT_EQ(engine.adapters().size(), 2u);
  EXPECT_EQ(engine.adapters()[0].rank, 8);
  EXPECT_EQ(engine.adapters()[1].format, "gguf");

  auto request = [&](size_t prompt) {
    GenerationRequest r;
    r.prompt_tokens = mixed.prompts[prompt].prompt;
    r.max_tokens = static_cast<int32_t>(mixed.prompts[prompt].greedy.size());
    r.ignore_eos = true;
    return r;
  };
  // Every loaded adapter at its own weight, batched with a request that asks for none.
  GenerationRequest plain = request(1);
  plain.adapters = std::vector<AdapterWeight>{};
  const auto results = engine.generate_batch({request(0), plain});
  EXPECT_EQ(results[0].tokens, mixed.prompts[0].greedy);
  ASSERT_EQ(results[0].adapters.size(), 2u);
  EXPECT_EQ(results[0].adapters[0].name, "attn_r8");
  EXPECT_FLOAT_EQ(results[0].adapters[0].weight, 0.7f);
  EXPECT_EQ(results[1].tokens, mixed.base_greedy[1]);
  EXPECT_TRUE(results[1].adapters.empty());

  // A running request keeps its adapters: they cannot be unloaded under it.
  const RequestId running = engine.submit(request(0));
  EXPECT_THROW(engine.unload_adapter(attn), Error);
  engine.cancel(running);
  while (!engine.idle()) engine.step();
  EXPECT_EQ(engine.take_result(running)->finish, FinishReason::kCancelled);

  // Re-weighted: all_r16 off, attn_r8 at 1 — the attn_r8 case of the fixture.
  engine.set_adapter_weight(all, 0.0f);
  engine.set_adapter_weight(attn, 1.0f);
  EXPECT_EQ(engine.generate(request(2)).tokens, cases_.at(0).prompts[2].greedy);
  // Unloaded: the base model again; the prompt's cached pages were computed with adapters and
  // must not be reused.
  engine.unload_adapter(attn);
  engine.unload_adapter(all);
  const GenerationResult base = engine.generate(request(2));
  EXPECT_EQ(base.tokens, mixed.base_greedy[2]);
  EXPECT_TRUE(base.adapters.empty());
  EXPECT_THROW(engine.unload_adapter(attn), Error);

  // A missing adapter, or a model file given as an adapter, is refused; the model goes on
  // working.
  try {
    engine.load_adapter(lora_fixtures() / "does_not_exist");
    ADD_FAILURE() << "a missing adapter loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  try {
    engine.load_adapter(test::test_model());
    ADD_FAILURE() << "a model loaded as an adapter";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not \"adapter\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(engine.generate(request(2)).tokens, mixed.base_greedy[2]);
}

}  // namespace
}  // namespace hearth
