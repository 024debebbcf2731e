// GGUF tokenizer.ggml.* metadata -> tokenizer: "gpt2" (byte-level BPE, pre-tokenizer chosen by
// tokenizer.ggml.pre) and "llama" (SentencePiece-BPE over scores).
#include "engine/core/error.h"
#include "engine/io/gguf_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/llama_spm_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_loaders.h"

namespace hearth {
namespace {

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
};

std::string where(const GgufFile& g, std::string_view key) {
  return g.display_name() + ": " + std::string(key);
}

GgufVocab read_vocab(const GgufFile& g) {
  GgufVocab v;
  auto tokens = g.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.tokens") + " is missing");
  if (tokens->empty())
    fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.tokens") + " is empty");
  if (static_cast<int64_t>(tokens->size()) > kMaxVocabSize)
    fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.tokens") + " has " +
                                      std::to_string(tokens->size()) + " entries (limit " +
                                      std::to_string(kMaxVocabSize) + ")");
  v.tokens = std::move(*tokens);
  if (auto types = g.get_int_array("tokenizer.ggml.token_type")) {
    if (types->size() != v.tokens.size())
      fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.token_type") + " has " +
                                        std::to_string(types->size()) + " entries for " +
                                        std::to_string(v.tokens.size()) + " tokens");
    for (size_t i = 0; i < types->size(); ++i)
      if ((*types)[i] < 1 || (*types)[i] > 6)
        fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.token_type") + "[" +
                                          std::to_string(i) + "] = " + std::to_string((*types)[i]) +
                                          " is not a token type (1..6)");
    v.types = std::move(*types);
  } else {
    v.types.assign(v.tokens.size(), 1);
  }
  return v;
}

std::optional<int32_t> special_id(const GgufFile& g, std::string_view key, size_t n_vocab) {
  auto id = g.get_int(key);
  if (!id) return std::nullopt;
  if (*id < 0 || static_cast<uint64_t>(*id) >= n_vocab)
    fail(ErrorCode::kInvalidFile, where(g, key) + " = " + std::to_string(*id) +
                                      " is outside the vocabulary of " + std::to_string(n_vocab));
  return static_cast<int32_t>(*id);
}

// tokenizer.ggml.pre -> the pre-tokenizer of the Hugging Face tokenizer it was converted from.
struct PreChoice {
  std::unique_ptr<PreTokenizer> pre;
  bool ignore_merges = false;
};

PreChoice pre_tokenizer_for(const GgufFile& g, const std::string& pre) {
  PreChoice c;
  if (pre == "default" || pre == "gpt2" || pre == "gpt-2") {
    c.pre = make_byte_level_pre_tokenizer(false, true);
  } else if (pre == "smollm" || pre == "starcoder" || pre == "refact") {
    // Digits(individual_digits) then ByteLevel with the GPT-2 regex (SmolLM2's tokenizer.json).
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(make_digits_pre_tokenizer(true));
    steps.push_back(make_byte_level_pre_tokenizer(false, true));
    c.pre = make_sequence_pre_tokenizer(std::move(steps));
  } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "qwen2") {
    // Split(Llama 3 or Qwen2 regex) then ByteLevel without its own regex; Llama 3 takes a
    // piece that is a whole token as is (ignore_merges).
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(make_regex_split_pre_tokenizer(
        pre == "qwen2" ? regex_patterns::kQwen2 : regex_patterns::kLlama3, SplitBehavior::kIsolated,
        false));
    steps.push_back(make_byte_level_pre_tokenizer(false, false));
    c.pre = make_sequence_pre_tokenizer(std::move(steps));
    c.ignore_merges = pre != "qwen2";
  } else {
    fail(ErrorCode::kUnsupported, where(g, "tokenizer.ggml.pre") + " = \"" + pre.substr(0, 100) +
                                      "\" is not supported (default, gpt2, smollm, starcoder, "
                                      "refact, llama-bpe, llama3, qwen2 are)");
  }
  return c;
}

std::unique_ptr<Tokenizer> load_gpt2(const GgufFile& g, GgufVocab vocab) {
  BpeTokenizerSpec spec;
  spec.source = g.display_name();
  const size_t n = vocab.tokens.size();
  auto merges = g.get_string_array("tokenizer.ggml.merges");
  if (!merges) fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.merges") + " is missing");
  spec.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string& m = (*merges)[i];
    // As llama.cpp: split at the first space after the first character.
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos)
      fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.merges") + "[" + std::to_string(i) +
                                        "] = \"" + m.substr(0, 100) + "\" is not \"left right\"");
    spec.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  for (size_t id = 0; id < n; ++id) {
    const int64_t type = vocab.types[id];
    if (type == 3 || type == 4)  // control, user-defined: matched in the text before BPE
      spec.added_tokens.push_back({static_cast<int32_t>(id), vocab.tokens[id], type == 3});
  }
  spec.vocab = std::move(vocab.tokens);
  for (auto& t : spec.vocab)
    if (t.empty()) t = std::string();  // an empty token stays unused

  PreChoice pre = pre_tokenizer_for(g, g.get_string("tokenizer.ggml.pre").value_or("default"));
  spec.pre_tokenizer = std::move(pre.pre);
  spec.ignore_merges = pre.ignore_merges;
  spec.decoder = BpeDecoder::kByteLevel;
  spec.bos_id = special_id(g, "tokenizer.ggml.bos_token_id", n);
  spec.eos_id = special_id(g, "tokenizer.ggml.eos_token_id", n);
  special_id(g, "tokenizer.ggml.unknown_token_id", n);  // validated; byte-level BPE needs no unk
  special_id(g, "tokenizer.ggml.padding_token_id", n);
  if (g.get_bool("tokenizer.ggml.add_bos_token").value_or(false) && spec.bos_id)
    spec.prefix_ids.push_back(*spec.bos_id);
  if (g.get_bool("tokenizer.ggml.add_eos_token").value_or(false) && spec.eos_id)
    spec.suffix_ids.push_back(*spec.eos_id);
  return make_bpe_tokenizer(std::move(spec));
}

std::unique_ptr<Tokenizer> load_llama(const GgufFile& g, GgufVocab vocab) {
  SpmVocabSpec spec;
  spec.source = g.display_name();
  const size_t n = vocab.tokens.size();
  if (auto scores = g.get_float_array("tokenizer.ggml.scores")) {
    if (scores->size() != n)
      fail(ErrorCode::kInvalidFile, where(g, "tokenizer.ggml.scores") + " has " +
                                        std::to_string(scores->size()) + " entries for " +
                                        std::to_string(n) + " tokens");
    spec.scores = std::move(*scores);
  }
  spec.types.reserve(n);
  for (int64_t t : vocab.types) spec.types.push_back(static_cast<SpmTokenType>(t));
  spec.tokens = std::move(vocab.tokens);
  spec.bos_id = special_id(g, "tokenizer.ggml.bos_token_id", n);
  spec.eos_id = special_id(g, "tokenizer.ggml.eos_token_id", n);
  spec.unk_id = special_id(g, "tokenizer.ggml.unknown_token_id", n);
  special_id(g, "tokenizer.ggml.padding_token_id", n);
  spec.add_bos = g.get_bool("tokenizer.ggml.add_bos_token").value_or(true);
  spec.add_eos = g.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  spec.add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  return make_llama_spm_tokenizer(std::move(spec));
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_from_gguf(const GgufFile& gguf) {
  const auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model) fail(ErrorCode::kInvalidFile, where(gguf, "tokenizer.ggml.model") + " is missing");
  if (*model == "gpt2") return load_gpt2(gguf, read_vocab(gguf));
  if (*model == "llama") return load_llama(gguf, read_vocab(gguf));
  fail(ErrorCode::kUnsupported, where(gguf, "tokenizer.ggml.model") + " = \"" +
                                    model->substr(0, 100) +
                                    "\" is not supported (gpt2 and llama are)");
}

}  // namespace hearth
