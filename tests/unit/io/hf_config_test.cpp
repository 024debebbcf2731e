// config.json (+ generation_config.json) against what transformers reads from the same text
// (fixture from tests/reference/io_safetensors_reference.py), plus the rules transformers does
// not cover (alternative key names, text_config, rope_parameters).
#include <gtest/gtest.h>

#include "engine/io/hf_config.h"
#include "tests/unit/io/io_test_util.h"

namespace hearth {
namespace {

RopeScalingType rope_type_of(const std::string& name) {
  if (name == "linear") return RopeScalingType::kLinear;
  if (name == "dynamic") return RopeScalingType::kDynamic;
  if (name == "yarn") return RopeScalingType::kYarn;
  if (name == "llama3") return RopeScalingType::kLlama3;
  return RopeScalingType::kNone;
}

TEST(HfConfig, MatchesTransformersOnRealConfigShapes) {
  const auto fixture = test::load_fixture("hf_configs.json");
  ASSERT_GE(fixture.size(), 8u);
  for (const auto& [name, entry] : fixture.items()) {
    SCOPED_TRACE(name);
    const std::string config = entry.at("config");
    std::optional<std::string> gen;
    if (!entry.at("generation_config").is_null()) gen = entry.at("generation_config");
    const ModelConfig c =
        parse_hf_config_json(config, gen ? std::optional<std::string_view>(*gen) : std::nullopt);
    const auto& e = entry.at("expected");
    EXPECT_EQ(c.architecture, e.at("architecture").get<std::string>());
    EXPECT_EQ(c.vocab_size, e.at("vocab_size").get<int64_t>());
    EXPECT_EQ(c.hidden_size, e.at("hidden_size").get<int64_t>());
    EXPECT_EQ(c.intermediate_size, e.at("intermediate_size").get<int64_t>());
    EXPECT_EQ(c.num_layers, e.at("num_layers").get<int64_t>());
    EXPECT_EQ(c.num_heads, e.at("num_heads").get<int64_t>());
    EXPECT_EQ(c.num_kv_heads, e.at("num_kv_heads").get<int64_t>());
    EXPECT_EQ(c.head_dim, e.at("head_dim").get<int64_t>());
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, e.at("rms_norm_eps").get<double>());
    EXPECT_DOUBLE_EQ(c.rope_theta, e.at("rope_theta").get<double>());
    EXPECT_EQ(c.rope_scaling.type, rope_type_of(e.at("rope_type")));
    if (e.contains("rope_factor")) {
      EXPECT_DOUBLE_EQ(c.rope_scaling.factor, e.at("rope_factor").get<double>());
    }
    if (e.contains("rope_low_freq_factor")) {
      EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, e.at("rope_low_freq_factor").get<double>());
      EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor,
                       e.at("rope_high_freq_factor").get<double>());
    }
    if (e.contains("rope_original_max_position_embeddings")) {
      EXPECT_EQ(c.rope_scaling.original_max_position_embeddings,
                e.at("rope_original_max_position_embeddings").get<int64_t>());
    }
    if (e.contains("rope_beta_fast")) {
      EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, e.at("rope_beta_fast").get<double>());
      EXPECT_DOUBLE_EQ(c.rope_scaling.beta_slow, e.at("rope_beta_slow").get<double>());
    }
    if (e.contains("rope_attention_factor")) {
      EXPECT_EQ(c.rope_scaling.attention_factor, e.at("rope_attention_factor").get<double>());
    }
    EXPECT_EQ(c.tie_word_embeddings, e.at("tie_word_embeddings").get<bool>());
    EXPECT_EQ(c.attention_bias, e.at("attention_bias").get<bool>());
    EXPECT_EQ(c.mlp_bias, e.at("mlp_bias").get<bool>());
    if (e.at("bos_token_id").is_null()) {
      EXPECT_FALSE(c.bos_token_id.has_value());
    } else {
      EXPECT_EQ(c.bos_token_id, e.at("bos_token_id").get<int32_t>());
    }
    EXPECT_EQ(c.eos_token_ids, e.at("eos_token_ids").get<std::vector<int32_t>>());
    if (e.at("pad_token_id").is_null()) {
      EXPECT_FALSE(c.pad_token_id.has_value());
    } else {
      EXPECT_EQ(c.pad_token_id, e.at("pad_token_id").get<int32_t>());
    }
    EXPECT_EQ(c.max_position_embeddings, e.at("max_position_embeddings").get<int64_t>());
    if (e.at("sliding_window").is_null()) {
      EXPECT_FALSE(c.sliding_window.has_value());
    } else {
      EXPECT_EQ(c.sliding_window, e.at("sliding_window").get<int64_t>());
    }
    EXPECT_EQ(c.torch_dtype, e.at("torch_dtype").get<std::string>());
    EXPECT_EQ(!c.quantization_config_json.empty(), e.at("has_quantization_config").get<bool>());
  }
}

TEST(HfConfig, KeepsQuantizationConfigAsRawJson) {
  const ModelConfig c = parse_hf_config_json(R"({"architectures":["LlamaForCausalLM"],
    "vocab_size":100,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
    "num_attention_heads":4,"quantization_config":{"quant_method":"gptq","bits":4,
    "checkpoint_format":"gptq_v2"}})",
                                             std::nullopt);
  const auto q = nlohmann::json::parse(c.quantization_config_json);
  EXPECT_EQ(q.at("checkpoint_format"), "gptq_v2");
  EXPECT_EQ(q.at("bits"), 4);
}

TEST(HfConfig, AcceptsAlternativeContextLengthKeysAndDefaults) {
  const std::string base = R"("vocab_size":100,"hidden_size":64,"intermediate_size":128,
    "num_hidden_layers":2,"num_attention_heads":4)";
  auto parse = [&](const std::string& extra) {
    return parse_hf_config_json("{\"model_type\":\"llama\"," + base + extra + "}", std::nullopt);
  };
  const ModelConfig d = parse("");
  EXPECT_EQ(d.architecture, "LlamaForCausalLM");  // from model_type
  EXPECT_EQ(d.max_position_embeddings, 2048);
  EXPECT_EQ(d.num_kv_heads, 4);
  EXPECT_EQ(d.head_dim, 16);
  EXPECT_DOUBLE_EQ(d.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(d.rms_norm_eps, 1e-6);
  EXPECT_TRUE(d.eos_token_ids.empty());
  EXPECT_EQ(parse(",\"max_sequence_length\":4096").max_position_embeddings, 4096);
  EXPECT_EQ(parse(",\"model_max_length\":1024").max_position_embeddings, 1024);
  EXPECT_EQ(parse(",\"max_seq_len\":512").max_position_embeddings, 512);
  EXPECT_EQ(parse(",\"n_positions\":300").max_position_embeddings, 300);
  EXPECT_EQ(parse(",\"partial_rotary_factor\":0.5").rotary_dim(), 8);
  EXPECT_EQ(parse(",\"pad_token_id\":-1").pad_token_id, std::nullopt);
  EXPECT_EQ(parse(",\"eos_token_id\":[5, 7, 5]").eos_token_ids, (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(parse(",\"rope_scaling\":{\"rope_type\":\"default\"}").rope_scaling.type,
            RopeScalingType::kNone);
  const ModelConfig mistral =
      parse_hf_config_json("{\"model_type\":\"mistral\"," + base + "}", std::nullopt);
  EXPECT_EQ(mistral.architecture, "MistralForCausalLM");
}

TEST(HfConfig, FallsBackToTextConfig) {
  const ModelConfig c = parse_hf_config_json(R"({"architectures":["LlamaForCausalLM"],
    "text_config":{"vocab_size":100,"hidden_size":64,"intermediate_size":128,
    "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2}})",
                                             std::nullopt);
  EXPECT_EQ(c.vocab_size, 100);
  EXPECT_EQ(c.num_kv_heads, 2);
}

TEST(HfConfig, ReadsAFolderAndNamesIt) {
  test::TempDir dir;
  const auto model = dir / "My-Model-7B";
  test::write_file(model / "config.json",
                   std::string_view(R"({"architectures":["MistralForCausalLM"],"vocab_size":100,
      "hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,
      "eos_token_id":2,"bos_token_id":1})"));
  ModelConfig c = parse_hf_config(model);
  EXPECT_EQ(c.name, "My-Model-7B");
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
  test::write_file(model / "generation_config.json", std::string_view(R"({"eos_token_id":[2,9]})"));
  c = parse_hf_config(model / "");
  EXPECT_EQ(c.name, "My-Model-7B");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 9}));
  test::expect_error([&] { parse_hf_config(dir / "absent"); }, ErrorCode::kIo, {"config.json"});
  test::write_file(model / "generation_config.json", std::string_view("{\"eos_token_id\": \"x\"}"));
  test::expect_error([&] { parse_hf_config(model); }, ErrorCode::kInvalidFile,
                     {"generation_config.json", "eos_token_id"});
}

}  // namespace
}  // namespace hearth
