// SmolLM2-135M-Instruct (the GGUF test model, dequantized = "the model") quantized on the CPU to
// GPTQ 4-bit g128 and EXL2 4.0 bpw with a small calibration set, then compared with the source
// on held-out text (perplexity, KL). Minutes on 2 cores: labelled `slow` (ctest -LE slow skips
// it, and it runs only with HEARTH_SLOW_TESTS=1). It prints the figures.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/quantizer/model_eval.h"
#include "engine/quantizer/quantize_job.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {
namespace fs = std::filesystem;

void run(QuantizeFormat format, double max_kl) {
  const char* slow = std::getenv("HEARTH_SLOW_TESTS");
  if (!slow || std::string(slow) != "1") {
    GTEST_SKIP() << "skipped: minutes on a small CPU; set HEARTH_SLOW_TESTS=1 to run";
  }
  const fs::path model = test::test_model();
  if (!fs::exists(model)) GTEST_SKIP() << "skipped: no SmolLM2 model at " << model;
  const fs::path root = fs::temp_directory_path() / "hearth_quantizer_smollm2";
  QuantizeOptions o;
  o.source = model;
  o.output = root / quantize_format_name(format);
  o.restart = true;
  o.format = format;
  o.target_bpw = 4.0;
  o.bits = 4;
  o.group_size = 128;
  o.rows = 16;
  o.length = 512;
  o.measure_rows = 4;
  o.evaluate = true;  // built-in held-out text
  o.eval_ctx = 512;
  fs::remove_all(o.output);
  const QuantizeResult r = quantize_model(o);
  ASSERT_TRUE(r.evaluation.has_value());
  const QuantizeEvaluation& e = *r.evaluation;
  std::printf(
      "SmolLM2 %s: %.3f bpw, %.1f MB, %.0f s; ppl %.3f (source %.3f), KL %.4f "
      "(p99.9 %.3f), top-1 %.1f %% over %lld tokens\n",
      quantize_format_name(format), r.bits_per_weight, r.bytes_on_disk / 1e6, r.seconds,
      e.perplexity_quant, e.perplexity_source, e.kl_mean, e.kl_p999, 100 * e.top1_agreement,
      static_cast<long long>(e.tokens));
  EXPECT_LT(e.kl_mean, max_kl);
  EXPECT_LT(e.perplexity_quant, 2.0 * e.perplexity_source);
  EXPECT_GT(e.top1_agreement, 0.6);
}

TEST(QuantizeSmolLM2, Gptq4BitG128) {
  run(QuantizeFormat::kGptq, 0.6);
}
TEST(QuantizeSmolLM2, Exl2At4Bpw) {
  run(QuantizeFormat::kExl2, 0.6);
}

}  // namespace
}  // namespace hearth
