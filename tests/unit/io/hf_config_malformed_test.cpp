// Malformed and absurd config.json / generation_config.json (TESTING.md, "Malformed inputs"):
// each is an Error naming the file and the field, never a crash or a silently wrong value.
#include <gtest/gtest.h>

#include "engine/io/hf_config.h"
#include "tests/unit/io/io_test_util.h"

namespace hearth {
namespace {

// A valid Llama config with `extra` fields appended (later keys are not allowed to repeat
// earlier ones, so `replace` swaps a field's value instead).
std::string config(const std::string& extra = "",
                   std::vector<std::pair<std::string, std::string>> replace = {}) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"architectures", R"(["LlamaForCausalLM"])"},
      {"vocab_size", "1000"},
      {"hidden_size", "64"},
      {"intermediate_size", "128"},
      {"num_hidden_layers", "2"},
      {"num_attention_heads", "4"},
      {"num_key_value_heads", "2"},
      {"eos_token_id", "2"}};
  for (const auto& [k, v] : replace) {
    bool found = false;
    for (auto& f : fields) {
      if (f.first == k) {
        f.second = v;
        found = true;
      }
    }
    if (!found) fields.emplace_back(k, v);
  }
  std::erase_if(fields, [](const auto& f) { return f.second == "<drop>"; });
  std::string s = "{";
  for (const auto& [k, v] : fields) s += (s.size() > 1 ? "," : "") + ("\"" + k + "\":" + v);
  return s + extra + "}";
}

void reject(const std::string& json, ErrorCode code, std::initializer_list<std::string> needles,
            std::optional<std::string> generation = std::nullopt) {
  test::expect_error(
      [&] {
        parse_hf_config_json(
            json, generation ? std::optional<std::string_view>(*generation) : std::nullopt);
      },
      code, needles);
}

TEST(HfConfigMalformed, TheBaseConfigIsValid) {
  EXPECT_NO_THROW(parse_hf_config_json(config(), std::nullopt));
  // auto_map (remote code) is ignored, not an error.
  EXPECT_NO_THROW(parse_hf_config_json(
      config(R"(,"auto_map":{"AutoModelForCausalLM":"evil.Model"})"), std::nullopt));
}

TEST(HfConfigMalformed, Json) {
  reject("", ErrorCode::kInvalidFile, {"config.json", "invalid JSON"});
  reject("{\"vocab_size\": 10,}", ErrorCode::kInvalidFile, {"invalid JSON at byte"});
  reject("[1, 2]", ErrorCode::kInvalidFile, {"must be a JSON object"});
  reject("{\"a\": \"\xc3\x28\"}", ErrorCode::kInvalidFile, {"UTF-8"});
  reject(std::string(100000, '[') + std::string(100000, ']'), ErrorCode::kInvalidFile,
         {"nested deeper"});
  reject(config(",\"vocab_size\":1000"), ErrorCode::kInvalidFile, {"duplicate key \"vocab_size\""});
}

TEST(HfConfigMalformed, Architecture) {
  reject(config("", {{"architectures", R"(["Qwen2ForCausalLM"])"}}), ErrorCode::kUnsupported,
         {"Qwen2ForCausalLM", "not supported"});
  reject(config("", {{"architectures", "[]"}}), ErrorCode::kInvalidFile, {"architectures"});
  reject(config("", {{"architectures", "\"LlamaForCausalLM\""}}), ErrorCode::kInvalidFile,
         {"architectures"});
  reject(config("", {{"architectures", "<drop>"}}), ErrorCode::kInvalidFile,
         {"architectures", "missing"});
  reject(config("", {{"architectures", "<drop>"}, {"model_type", "\"gpt2\""}}),
         ErrorCode::kUnsupported, {"gpt2"});
}

TEST(HfConfigMalformed, AbsurdSizes) {
  reject(config("", {{"num_hidden_layers", "1e9"}}), ErrorCode::kInvalidFile,
         {"num_hidden_layers", "must be an integer", "floating-point"});
  reject(config("", {{"num_hidden_layers", "1000000000"}}), ErrorCode::kInvalidFile,
         {"num_hidden_layers", "1..512"});
  reject(config("", {{"vocab_size", "-1"}}), ErrorCode::kInvalidFile, {"vocab_size", "-1"});
  reject(config("", {{"vocab_size", "18446744073709551615"}}), ErrorCode::kInvalidFile,
         {"vocab_size", "out of range"});
  reject(config("", {{"vocab_size", "1e30"}}), ErrorCode::kInvalidFile, {"vocab_size"});
  reject(config("", {{"hidden_size", "64.0"}}), ErrorCode::kInvalidFile,
         {"hidden_size", "must be an integer"});
  reject(config("", {{"hidden_size", "\"64\""}}), ErrorCode::kInvalidFile,
         {"hidden_size", "a string"});
  reject(config("", {{"hidden_size", "true"}}), ErrorCode::kInvalidFile, {"hidden_size"});
  reject(config("", {{"hidden_size", "<drop>"}}), ErrorCode::kInvalidFile,
         {"hidden_size is missing"});
  reject(config("", {{"hidden_size", "66"}}), ErrorCode::kInvalidFile,
         {"hidden_size", "not divisible by num_attention_heads"});
  reject(config("", {{"num_attention_heads", "0"}}), ErrorCode::kInvalidFile,
         {"num_attention_heads"});
  reject(config("", {{"num_key_value_heads", "3"}}), ErrorCode::kInvalidFile,
         {"num_key_value_heads"});
  reject(config("", {{"head_dim", "7"}}), ErrorCode::kInvalidFile, {"head_dim"});
  reject(config("", {{"intermediate_size", "0"}}), ErrorCode::kInvalidFile, {"intermediate_size"});
  reject(config("", {{"max_position_embeddings", "0"}}), ErrorCode::kInvalidFile,
         {"max_position_embeddings"});
  reject(config("", {{"rms_norm_eps", "0"}}), ErrorCode::kInvalidFile, {"rms_norm_eps"});
  reject(config("", {{"rms_norm_eps", "1e400"}}), ErrorCode::kInvalidFile, {"1e400"});
  reject(config("", {{"rope_theta", "-5"}}), ErrorCode::kInvalidFile, {"rope_theta"});
  reject(config("", {{"rope_theta", "\"big\""}}), ErrorCode::kInvalidFile,
         {"rope_theta", "must be a number"});
  reject(config("", {{"partial_rotary_factor", "2"}}), ErrorCode::kInvalidFile,
         {"partial_rotary_factor"});
  reject(config("", {{"sliding_window", "-1"}}), ErrorCode::kInvalidFile, {"sliding_window"});
  reject(config("", {{"tie_word_embeddings", "1"}}), ErrorCode::kInvalidFile,
         {"tie_word_embeddings", "true or false"});
}

TEST(HfConfigMalformed, RopeScaling) {
  reject(config("", {{"rope_scaling", R"({"type":"linear","rope_type":"yarn","factor":2})"}}),
         ErrorCode::kInvalidFile, {"rope_scaling", "must agree"});
  reject(config("", {{"rope_scaling", R"({"type":"longrope","factor":2})"}}),
         ErrorCode::kUnsupported, {"longrope"});
  reject(config("", {{"rope_scaling", R"({"type":"linear"})"}}), ErrorCode::kInvalidFile,
         {"rope_scaling", "factor is missing"});
  reject(config("", {{"rope_scaling", R"({"factor":2})"}}), ErrorCode::kInvalidFile,
         {"neither \"type\" nor \"rope_type\""});
  reject(
      config(
          "",
          {{"rope_scaling",
            R"({"rope_type":"llama3","factor":8,"high_freq_factor":4,"original_max_position_embeddings":8192})"}}),
      ErrorCode::kInvalidFile, {"low_freq_factor is missing"});
  reject(
      config(
          "",
          {{"rope_scaling",
            R"({"rope_type":"llama3","factor":8,"low_freq_factor":4,"high_freq_factor":1,"original_max_position_embeddings":8192})"}}),
      ErrorCode::kInvalidFile, {"high_freq_factor must exceed"});
  reject(config("", {{"rope_scaling", R"({"type":"linear","factor":0.5})"}}),
         ErrorCode::kInvalidFile, {"rope_scaling.factor"});
  reject(config("", {{"rope_scaling", R"({"type":"linear","factor":"2"})"}}),
         ErrorCode::kInvalidFile, {"factor", "must be a number"});
  reject(config("", {{"rope_scaling", "\"linear\""}}), ErrorCode::kInvalidFile,
         {"rope_scaling", "must be an object"});
}

TEST(HfConfigMalformed, SpecialTokens) {
  reject(config("", {{"eos_token_id", "1000"}}), ErrorCode::kInvalidFile,
         {"eos_token_id", "outside the vocabulary"});
  reject(config("", {{"eos_token_id", "[2, \"3\"]"}}), ErrorCode::kInvalidFile,
         {"eos_token_id", "a string"});
  reject(config("", {{"eos_token_id", "1099511627776"}}), ErrorCode::kInvalidFile,
         {"eos_token_id", "out of range"});
  reject(config("", {{"eos_token_id", "-3"}}), ErrorCode::kInvalidFile, {"eos_token_id"});
  reject(config("", {{"bos_token_id", "5000"}}), ErrorCode::kInvalidFile, {"bos_token_id"});
  reject(config("", {{"bos_token_id", "[1]"}}), ErrorCode::kInvalidFile, {"bos_token_id"});
  reject(config(), ErrorCode::kInvalidFile, {"generation_config.json", "eos_token_id"},
         std::string(R"({"eos_token_id":[2,4000]})"));
  reject(config(), ErrorCode::kInvalidFile, {"generation_config.json", "invalid JSON"},
         std::string("{"));
  reject(config("", {{"quantization_config", "\"exl2\""}}), ErrorCode::kInvalidFile,
         {"quantization_config"});
}

TEST(HfConfigMalformed, OversizedFilesAreNotRead) {
  test::TempDir dir;
  std::string big = config();
  big.insert(big.size() - 1, ",\"pad\":\"" + std::string(17u << 20, 'x') + "\"");
  test::write_file(dir / "config.json", big);
  test::expect_error([&] { parse_hf_config(dir.path()); }, ErrorCode::kInvalidFile,
                     {"config.json", "larger than"});
}

}  // namespace
}  // namespace hearth
