// RoPE frequencies against Hugging Face transformers' own rope initialisation functions
// (tests/fixtures/model/rope_frequencies.json, made by tests/reference/rope_frequencies.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/rope.h"
#include "tests/common/test_paths.h"

namespace hearth {
namespace {

RopeScalingType type_of(const std::string& s) {
  if (s == "linear") return RopeScalingType::kLinear;
  if (s == "dynamic") return RopeScalingType::kDynamic;
  if (s == "yarn") return RopeScalingType::kYarn;
  if (s == "llama3") return RopeScalingType::kLlama3;
  return RopeScalingType::kNone;
}

TEST(Rope, FrequenciesMatchTransformers) {
  std::ifstream in(test::fixtures_dir() / "model" / "rope_frequencies.json");
  ASSERT_TRUE(in);
  const auto fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["cases"].size(), 7u);
  for (const auto& c : fixture["cases"]) {
    ModelConfig cfg;
    cfg.head_dim = c["head_dim"];
    cfg.rope_theta = c["rope_theta"];
    cfg.max_position_embeddings = c["max_position_embeddings"];
    if (!c["rope_scaling"].is_null()) {
      const auto& rs = c["rope_scaling"];
      cfg.rope_scaling.type = type_of(rs["rope_type"]);
      cfg.rope_scaling.factor = rs.value("factor", 1.0);
      cfg.rope_scaling.low_freq_factor = rs.value("low_freq_factor", 1.0);
      cfg.rope_scaling.high_freq_factor = rs.value("high_freq_factor", 4.0);
      cfg.rope_scaling.original_max_position_embeddings =
          rs.value("original_max_position_embeddings", 0);
    }
    const int64_t seq_len = c["seq_len"].is_null() ? cfg.max_position_embeddings
                                                   : c["seq_len"].get<int64_t>();
    const RopeFrequencies got = compute_rope_frequencies(cfg, seq_len);
    const auto want = c["inv_freq"].get<std::vector<double>>();
    ASSERT_EQ(got.inv_freq.size(), want.size()) << c["name"];
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got.inv_freq[i], want[i], 2e-6 * want[i]) << c["name"] << " i=" << i;
    }
    EXPECT_NEAR(got.attention_factor, c["attention_factor"].get<double>(), 1e-6) << c["name"];
  }
}

TEST(Rope, NtkAlphaScalesTheBase) {
  ModelConfig cfg;
  cfg.head_dim = 128;
  cfg.rope_theta = 10000;
  cfg.ntk_alpha = 2.0;
  const RopeFrequencies f = compute_rope_frequencies(cfg, 4096);
  const double base = 10000 * std::pow(2.0, 128.0 / 126.0);
  EXPECT_NEAR(f.inv_freq[10], 1.0 / std::pow(base, 20.0 / 128.0), 1e-7);
  EXPECT_EQ(f.attention_factor, 1.0f);
}

}  // namespace
}  // namespace hearth
