// Tokenizers built from GGUF metadata: SmolLM2's real GGUF against Hugging Face tokenizers, the
// spm_train model's vocabulary as a GGUF "llama" vocabulary against sentencepiece, and
// malformed tokenizer metadata.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/io/gguf_file.h"
#include "tests/unit/tokenizer/fixture_cases.h"
#include "tests/unit/tokenizer/gguf_vocab_builder.h"

namespace hearth {
namespace {

using test::GgufVocabBuilder;

TEST(GgufTokenizer, SmolLM2MatchesTokenizers) {
  if (!std::filesystem::exists(test::test_model()))
    GTEST_SKIP() << "no test model at " << test::test_model();
  const auto gguf = GgufFile::open(test::test_model());
  const auto tok = load_tokenizer_from_gguf(gguf);
  const auto cases = test::load_cases(test::tokenizer_fixtures() / "smollm2_cases.json");
  ASSERT_GE(cases.size(), 200u);
  EXPECT_EQ(test::check_cases(*tok, cases), 0);

  EXPECT_EQ(tok->vocab_size(), 49152);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->piece(1), "<|im_start|>");
  EXPECT_EQ(tok->piece_to_id("<|im_end|>"), 2);
  EXPECT_TRUE(tok->is_special(0));
  EXPECT_FALSE(tok->is_special(100));
  EXPECT_FALSE(tok->adds_bos());  // tokenizer.ggml.add_bos_token = false, as in tokenizer_config
  for (const auto& c : cases) ASSERT_EQ(tok->encode(c.text, true), c.ids);
}

TEST(GgufTokenizer, SentencePieceVocabularyMatchesSentencepiece) {
  const auto gguf = GgufFile::open(test::tokenizer_fixtures() / "spm" / "bpe_vocab.gguf");
  const auto tok = load_tokenizer_from_gguf(gguf);
  const auto cases = test::load_cases(test::tokenizer_fixtures() / "spm" / "bpe_cases.json");
  ASSERT_GE(cases.size(), 200u);
  EXPECT_EQ(test::check_cases(*tok, cases), 0);
  EXPECT_TRUE(tok->adds_bos());
  EXPECT_EQ(tok->bos_id(), 1);
}

// A tokenizer.json vocabulary written as GGUF "gpt2" metadata the way llama.cpp's converter
// writes it: tokens by id, CONTROL/USER_DEFINED types for added tokens, merges as "a b", the
// pre-tokenizer named by tokenizer.ggml.pre.
std::vector<std::byte> gguf_from_tokenizer_json(const std::filesystem::path& dir,
                                                const std::string& pre, bool add_bos) {
  const auto j = nlohmann::json::parse(test::read_file(dir / "tokenizer.json"));
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  auto put = [&](size_t id, const std::string& text, int32_t type) {
    if (tokens.size() <= id) {
      tokens.resize(id + 1);
      types.resize(id + 1, 1);
    }
    tokens[id] = text;
    types[id] = type;
  };
  for (const auto& [text, id] : j["model"]["vocab"].items()) put(id.get<size_t>(), text, 1);
  for (const auto& t : j["added_tokens"])
    put(t["id"].get<size_t>(), t["content"], t["special"].get<bool>() ? 3 : 4);
  std::vector<std::string> merges;
  for (const auto& m : j["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " + m[1].get<std::string>());
  GgufVocabBuilder b;
  b.string("tokenizer.ggml.model", "gpt2")
      .string("tokenizer.ggml.pre", pre)
      .strings("tokenizer.ggml.tokens", tokens)
      .array<int32_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI32, types)
      .strings("tokenizer.ggml.merges", merges)
      .boolean("tokenizer.ggml.add_bos_token", add_bos);
  if (add_bos) b.u32("tokenizer.ggml.bos_token_id", 0);
  return b.build();
}

struct GgufLayout {
  const char* dir;
  const char* pre;
  bool add_bos;
};

class GgufFromTokenizerJson : public ::testing::TestWithParam<GgufLayout> {};

TEST_P(GgufFromTokenizerJson, MatchesTokenizers) {
  const auto dir = test::tokenizer_fixtures() / "synthetic" / GetParam().dir;
  const auto bytes = gguf_from_tokenizer_json(dir, GetParam().pre, GetParam().add_bos);
  const auto tok = load_tokenizer_from_gguf(GgufFile::parse(bytes, "vocab.gguf"));
  const auto cases = test::load_cases(dir / "cases.json");
  EXPECT_EQ(test::check_cases(*tok, cases, {.check_with_special = GetParam().add_bos}), 0);
}

// llama3's id 0 is <|begin_of_text|>, its BOS.
INSTANTIATE_TEST_SUITE_P(Pre, GgufFromTokenizerJson,
                         ::testing::Values(GgufLayout{"gpt2_plain", "gpt2", false},
                                           GgufLayout{"gpt2_plain", "default", false},
                                           GgufLayout{"llama3", "llama-bpe", true},
                                           GgufLayout{"qwen2", "qwen2", false}));

// A minimal valid byte-level vocabulary: bytes of "ab", the merge "a b" and a control token.
GgufVocabBuilder gpt2_vocab(const std::string& pre = "smollm") {
  GgufVocabBuilder b;
  b.string("general.architecture", "llama")
      .string("tokenizer.ggml.model", "gpt2")
      .string("tokenizer.ggml.pre", pre)
      .strings("tokenizer.ggml.tokens", {"<|end|>", "a", "b", "ab", "Ġ"})
      .array<int32_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI32, {3, 1, 1, 1, 1})
      .strings("tokenizer.ggml.merges", {"a b"})
      .u32("tokenizer.ggml.eos_token_id", 0);
  return b;
}

GgufVocabBuilder llama_vocab() {
  GgufVocabBuilder b;
  b.string("tokenizer.ggml.model", "llama")
      .strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x41>", "▁", "a", "▁a"})
      .array<float>("tokenizer.ggml.scores", GgufVocabBuilder::kF32, {0, 0, 0, 0, -1, -2, -3})
      .array<int32_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI32, {2, 3, 3, 6, 1, 1, 1})
      .u32("tokenizer.ggml.bos_token_id", 1);
  return b;
}

std::unique_ptr<Tokenizer> load(const GgufVocabBuilder& builder) {
  const auto bytes = builder.build();
  const auto gguf = GgufFile::parse(bytes, "vocab.gguf");
  return load_tokenizer_from_gguf(gguf);
}

void expect_error(const GgufVocabBuilder& builder, ErrorCode code, const std::string& needle) {
  try {
    load(builder);
    ADD_FAILURE() << "accepted; expected an error mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vocab.gguf"), std::string::npos) << e.what();
  }
}

TEST(GgufTokenizer, SmallValidVocabularies) {
  const auto bpe = load(gpt2_vocab());
  EXPECT_EQ(bpe->encode("ab<|end|>ba"), (std::vector<int32_t>{3, 0, 2, 1}));
  EXPECT_EQ(bpe->decode(std::vector<int32_t>{3, 0, 2}), "ab<|end|>b");
  EXPECT_EQ(bpe->decode(std::vector<int32_t>{3, 0, 2}, true), "abb");
  const auto spm = load(llama_vocab());
  // "a A": "▁a" then "▁" and the byte fallback for "A".
  EXPECT_EQ(spm->encode("a A", true), (std::vector<int32_t>{1, 6, 4, 3}));
  EXPECT_EQ(spm->decode(std::vector<int32_t>{1, 6, 4, 3}, true), "a A");
}

TEST(GgufTokenizer, MalformedMetadata) {
  // Type mismatch: tokens as integers, token types as strings.
  auto tokens_as_ints = GgufVocabBuilder();
  tokens_as_ints.string("tokenizer.ggml.model", "gpt2")
      .array<int32_t>("tokenizer.ggml.tokens", GgufVocabBuilder::kI32, {1, 2, 3})
      .strings("tokenizer.ggml.merges", {});
  expect_error(tokens_as_ints, ErrorCode::kInvalidFile, "tokenizer.ggml.tokens");
  auto types_as_strings = GgufVocabBuilder();
  types_as_strings.string("tokenizer.ggml.model", "gpt2")
      .strings("tokenizer.ggml.tokens", {"a"})
      .strings("tokenizer.ggml.token_type", {"1"})
      .strings("tokenizer.ggml.merges", {});
  expect_error(types_as_strings, ErrorCode::kInvalidFile, "tokenizer.ggml.token_type");

  // Narrower element types are fine (#26690 was about reading them as wider ones).
  auto narrow = GgufVocabBuilder();
  narrow.string("tokenizer.ggml.model", "gpt2")
      .strings("tokenizer.ggml.tokens", {"a", "b"})
      .array<int8_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI8, {1, 1})
      .strings("tokenizer.ggml.merges", {});
  EXPECT_EQ(load(narrow)->encode("ab"), (std::vector<int32_t>{0, 1}));

  expect_error(gpt2_vocab().u32("tokenizer.ggml.bos_token_id", 5), ErrorCode::kInvalidFile,
               "bos_token_id");
  expect_error(gpt2_vocab().u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFF),
               ErrorCode::kInvalidFile, "padding_token_id");
  expect_error(llama_vocab().u32("tokenizer.ggml.unknown_token_id", 7), ErrorCode::kInvalidFile,
               "unknown_token_id");

  auto bad_merge = GgufVocabBuilder();
  bad_merge.string("tokenizer.ggml.model", "gpt2")
      .strings("tokenizer.ggml.tokens", {"a", "b"})
      .strings("tokenizer.ggml.merges", {"a c"});
  expect_error(bad_merge, ErrorCode::kInvalidFile, "\"c\"");
  auto no_space = GgufVocabBuilder();
  no_space.string("tokenizer.ggml.model", "gpt2")
      .strings("tokenizer.ggml.tokens", {"a", "b"})
      .strings("tokenizer.ggml.merges", {"ab"});
  expect_error(no_space, ErrorCode::kInvalidFile, "tokenizer.ggml.merges[0]");
  auto no_merges = GgufVocabBuilder();
  no_merges.string("tokenizer.ggml.model", "gpt2").strings("tokenizer.ggml.tokens", {"a"});
  expect_error(no_merges, ErrorCode::kInvalidFile, "tokenizer.ggml.merges");

  auto count_mismatch = GgufVocabBuilder();
  count_mismatch.string("tokenizer.ggml.model", "gpt2")
      .strings("tokenizer.ggml.tokens", {"a", "b"})
      .array<int32_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI32, {1})
      .strings("tokenizer.ggml.merges", {});
  expect_error(count_mismatch, ErrorCode::kInvalidFile, "token_type");
  auto bad_type = GgufVocabBuilder();
  bad_type.string("tokenizer.ggml.model", "gpt2")
      .strings("tokenizer.ggml.tokens", {"a"})
      .array<int32_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI32, {9})
      .strings("tokenizer.ggml.merges", {});
  expect_error(bad_type, ErrorCode::kInvalidFile, "token_type");

  for (const char* bad_byte : {"<0xZZ>", "<0x-1>", "<0x1>", "<0x100>"}) {
    auto b = GgufVocabBuilder();
    b.string("tokenizer.ggml.model", "llama")
        .strings("tokenizer.ggml.tokens", {"<unk>", bad_byte})
        .array<int32_t>("tokenizer.ggml.token_type", GgufVocabBuilder::kI32, {2, 6});
    expect_error(b, ErrorCode::kInvalidFile, bad_byte);
  }
  auto scores = GgufVocabBuilder();
  scores.string("tokenizer.ggml.model", "llama")
      .strings("tokenizer.ggml.tokens", {"<unk>", "a"})
      .array<float>("tokenizer.ggml.scores", GgufVocabBuilder::kF32, {0});
  expect_error(scores, ErrorCode::kInvalidFile, "scores");

  auto empty = GgufVocabBuilder();
  empty.string("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", {});
  expect_error(empty, ErrorCode::kInvalidFile, "empty");
  auto missing = GgufVocabBuilder();
  missing.string("tokenizer.ggml.model", "llama");
  expect_error(missing, ErrorCode::kInvalidFile, "tokenizer.ggml.tokens");
  expect_error(GgufVocabBuilder(), ErrorCode::kInvalidFile, "tokenizer.ggml.model");

  auto bert = GgufVocabBuilder();
  bert.string("tokenizer.ggml.model", "bert").strings("tokenizer.ggml.tokens", {"a"});
  expect_error(bert, ErrorCode::kUnsupported, "bert");
  expect_error(gpt2_vocab("no-such-pre"), ErrorCode::kUnsupported, "no-such-pre");
}

}  // namespace
}  // namespace hearth
