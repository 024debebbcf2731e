// SmolLM2-135M-Instruct on the CPU backend against Hugging Face transformers (fp32, CPU) on the
// same GGUF weights. Reference: tests/fixtures/model/hf_parity.json, made by
// tests/reference/hf_parity.py. Gates: greedy 32-token continuations identical (batched and one
// prompt at a time); logits of the reference's top-40 tokens within 2e-3 at every position;
// log-sum-exp within 2e-3; mean KL(ref || ours) ≤ 1e-4. These use the exact quantized linears
// (CpuLinears::kExact); HfParityFast checks the fast path the engine runs by default.
#include <gtest/gtest.h>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/model_loader.h"
#include "tests/common/hf_parity.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {

class HfParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cases_ = test::load_parity_cases(test::fixtures_dir() / "model" / "hf_parity.json");
    smol_ = new test::CpuTestModel();
  }
  static void TearDownTestSuite() { delete smol_; }

  static inline std::vector<test::ParityCase> cases_;
  static inline test::CpuTestModel* smol_ = nullptr;
};

TEST_F(HfParity, GreedyContinuationsIdenticalAloneAndBatched) {
  ASSERT_GE(cases_.size(), 10u);
  std::vector<size_t> all;
  for (size_t i = 0; i < cases_.size(); ++i) all.push_back(i);
  const auto batched = test::greedy_continuations(*smol_->model, *smol_->backend,
                                                  *smol_->bundle.tokenizer, cases_, all);
  for (size_t i = 0; i < cases_.size(); ++i) {
    EXPECT_EQ(batched[i], cases_[i].greedy) << "prompt " << i << " (batched)";
  }
  for (size_t i : {size_t{0}, size_t{6}}) {
    EXPECT_EQ(test::greedy_continuations(*smol_->model, *smol_->backend, *smol_->bundle.tokenizer,
                                         cases_, {i})[0],
              cases_[i].greedy)
        << "prompt " << i << " (alone)";
  }
}

TEST_F(HfParity, PerPositionLogitsAndKlDivergence) {
  const test::LogitStats st = test::compare_logits(*smol_->model, *smol_->backend, cases_);
  std::printf(
      "positions %lld, max |logit diff| %.2e, max |lse diff| %.2e, mean KL %.2e, "
      "99.9th pct KL %.2e, same top token %.2f%%\n",
      static_cast<long long>(st.positions), st.max_logit_err, st.max_lse_err, st.mean_kl,
      st.p999_kl, 100 * st.same_top);
  EXPECT_LE(st.max_logit_err, 2e-3);
  EXPECT_LE(st.max_lse_err, 2e-3);
  EXPECT_LE(st.mean_kl, 1e-4);
  EXPECT_EQ(st.same_top, 1.0);
}

// The fast path (activations rounded to 16-bit integers per block of 32) against the same
// reference: the same greedy tokens, and logits within the bounds its rounding allows.
class HfParityFast : public HfParity {
 protected:
  static void SetUpTestSuite() {
    HfParity::SetUpTestSuite();
    fast_ = new test::CpuTestModel(CpuLinears::kFast);
  }
  static void TearDownTestSuite() {
    delete fast_;
    HfParity::TearDownTestSuite();
  }
  static inline test::CpuTestModel* fast_ = nullptr;
};

TEST_F(HfParityFast, GreedyContinuationsIdentical) {
  std::vector<size_t> all;
  for (size_t i = 0; i < cases_.size(); ++i) all.push_back(i);
  const auto batched = test::greedy_continuations(*fast_->model, *fast_->backend,
                                                  *fast_->bundle.tokenizer, cases_, all);
  for (size_t i = 0; i < cases_.size(); ++i) {
    EXPECT_EQ(batched[i], cases_[i].greedy) << "prompt " << i;
  }
}

TEST_F(HfParityFast, PerPositionLogitsAndKlDivergence) {
  const test::LogitStats st = test::compare_logits(*fast_->model, *fast_->backend, cases_);
  std::printf(
      "fast: positions %lld, max |logit diff| %.2e, max |lse diff| %.2e, mean KL %.2e, "
      "99.9th pct KL %.2e, same top token %.2f%%\n",
      static_cast<long long>(st.positions), st.max_logit_err, st.max_lse_err, st.mean_kl,
      st.p999_kl, 100 * st.same_top);
  // Measured on this model: max logit difference 9.6e-3, lse 5.1e-3, mean KL 2.2e-7.
  EXPECT_LE(st.max_logit_err, 2e-2);
  EXPECT_LE(st.max_lse_err, 2e-2);
  EXPECT_LE(st.mean_kl, 1e-5);
  EXPECT_EQ(st.same_top, 1.0);
}

}  // namespace
}  // namespace hearth
