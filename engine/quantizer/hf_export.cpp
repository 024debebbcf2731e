#include "engine/quantizer/hf_export.h"

#include "engine/core/error.h"
#include "engine/io/gguf_file.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
using nlohmann::json;
using nlohmann::ordered_json;

ordered_json config_json_from(const ModelConfig& c) {
  ordered_json j;
  j["architectures"] = json::array({c.architecture});
  j["model_type"] = c.architecture == "MistralForCausalLM" ? "mistral" : "llama";
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["attention_bias"] = c.attention_bias;
  j["mlp_bias"] = c.mlp_bias;
  j["hidden_act"] = "silu";
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  if (c.eos_token_ids.size() > 1) j["eos_token_id"] = c.eos_token_ids;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  if (c.rope_scaling.type != RopeScalingType::kNone) {
    ordered_json r;
    r["rope_type"] = rope_scaling_name(c.rope_scaling.type);
    r["factor"] = c.rope_scaling.factor;
    if (c.rope_scaling.type == RopeScalingType::kLlama3) {
      r["low_freq_factor"] = c.rope_scaling.low_freq_factor;
      r["high_freq_factor"] = c.rope_scaling.high_freq_factor;
    }
    if (c.rope_scaling.original_max_position_embeddings > 0) {
      r["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
    }
    j["rope_scaling"] = r;
  }
  j["torch_dtype"] = "float16";
  return j;
}

namespace {

// The Hugging Face pre-tokenizer a GGUF "tokenizer.ggml.pre" stands for (as Hearth's GGUF
// tokenizer loader maps them).
ordered_json pre_tokenizer_for(const std::string& pre) {
  auto byte_level = [](bool use_regex) {
    return ordered_json{{"type", "ByteLevel"},
                        {"add_prefix_space", false},
                        {"trim_offsets", true},
                        {"use_regex", use_regex}};
  };
  if (pre == "default" || pre == "gpt2" || pre == "gpt-2") return byte_level(true);
  if (pre == "smollm" || pre == "starcoder" || pre == "refact") {
    return ordered_json{{"type", "Sequence"},
                        {"pretokenizers",
                         json::array({ordered_json{{"type", "Digits"}, {"individual_digits", true}},
                                      byte_level(true)})}};
  }
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    const std::string regex =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    return ordered_json{{"type", "Sequence"},
                        {"pretokenizers", json::array({ordered_json{{"type", "Split"},
                                                                    {"pattern", {{"Regex", regex}}},
                                                                    {"behavior", "Isolated"},
                                                                    {"invert", false}},
                                                       byte_level(false)})}};
  }
  fail(ErrorCode::kUnsupported, "GGUF tokenizer.ggml.pre \"" + pre.substr(0, 40) +
                                    "\" cannot be written as tokenizer.json; quantize from the "
                                    "Hugging Face folder instead");
}

}  // namespace

void write_tokenizer_files_from_gguf(const GgufFile& g, const ModelConfig& config,
                                     const std::filesystem::path& dir) {
  const auto model = g.get_string("tokenizer.ggml.model");
  if (!model || *model != "gpt2") {
    fail(
        ErrorCode::kUnsupported,
        "this GGUF's vocabulary (" + model.value_or("none") +
            ") cannot be written as tokenizer.json; quantize from the Hugging Face folder instead");
  }
  const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  const auto merges = g.get_string_array("tokenizer.ggml.merges");
  if (!tokens || !merges)
    fail(ErrorCode::kInvalidFile, "GGUF: the tokenizer has no tokens or merges");
  const auto types = g.get_int_array("tokenizer.ggml.token_type");
  const std::string pre = g.get_string("tokenizer.ggml.pre").value_or("default");

  ordered_json added = json::array();
  for (size_t id = 0; id < tokens->size(); ++id) {
    const int64_t type = types && id < types->size() ? (*types)[id] : 1;
    if (type == 3 || type == 4) {
      added.push_back(ordered_json{{"id", id},
                                   {"content", (*tokens)[id]},
                                   {"single_word", false},
                                   {"lstrip", false},
                                   {"rstrip", false},
                                   {"normalized", type == 4},
                                   {"special", type == 3}});
    }
  }
  ordered_json vocab = ordered_json::object();
  for (size_t id = 0; id < tokens->size(); ++id) vocab[(*tokens)[id]] = id;
  ordered_json merge_list = json::array();
  for (const auto& m : *merges) merge_list.push_back(m);

  const auto bos = g.get_int("tokenizer.ggml.bos_token_id");
  const auto eos = g.get_int("tokenizer.ggml.eos_token_id");
  const bool add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(false);
  ordered_json post = nullptr;
  if (add_bos && bos) {
    const std::string b = (*tokens)[static_cast<size_t>(*bos)];
    post = ordered_json{
        {"type", "TemplateProcessing"},
        {"single", json::array({ordered_json{{"SpecialToken", {{"id", b}, {"type_id", 0}}}},
                                ordered_json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", json::array({ordered_json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                              ordered_json{{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
        {"special_tokens",
         {{b, {{"id", b}, {"ids", json::array({*bos})}, {"tokens", json::array({b})}}}}}};
  }
  ordered_json tok;
  tok["version"] = "1.0";
  tok["truncation"] = nullptr;
  tok["padding"] = nullptr;
  tok["added_tokens"] = added;
  tok["normalizer"] = nullptr;
  tok["pre_tokenizer"] = pre_tokenizer_for(pre);
  tok["post_processor"] = post;
  tok["decoder"] = ordered_json{{"type", "ByteLevel"},
                                {"add_prefix_space", true},
                                {"trim_offsets", true},
                                {"use_regex", true}};
  tok["model"] =
      ordered_json{{"type", "BPE"},
                   {"dropout", nullptr},
                   {"unk_token", nullptr},
                   {"continuing_subword_prefix", nullptr},
                   {"end_of_word_suffix", nullptr},
                   {"fuse_unk", false},
                   {"byte_fallback", false},
                   {"ignore_merges", pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3"},
                   {"vocab", vocab},
                   {"merges", merge_list}};
  write_file_atomically(dir / "tokenizer.json", tok.dump(1) + "\n");

  ordered_json tc;
  tc["add_bos_token"] = add_bos;
  tc["add_eos_token"] = g.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (bos) tc["bos_token"] = (*tokens)[static_cast<size_t>(*bos)];
  if (eos) tc["eos_token"] = (*tokens)[static_cast<size_t>(*eos)];
  if (auto t = g.get_string("tokenizer.chat_template")) tc["chat_template"] = *t;
  tc["model_max_length"] = config.max_position_embeddings;
  tc["tokenizer_class"] = "PreTrainedTokenizerFast";
  write_file_atomically(dir / "tokenizer_config.json", tc.dump(1) + "\n");

  ordered_json gen;
  if (config.bos_token_id) gen["bos_token_id"] = *config.bos_token_id;
  if (config.eos_token_ids.size() == 1) gen["eos_token_id"] = config.eos_token_ids[0];
  if (config.eos_token_ids.size() > 1) gen["eos_token_id"] = config.eos_token_ids;
  write_file_atomically(dir / "generation_config.json", gen.dump(1) + "\n");
}

}  // namespace hearth::quantizer
