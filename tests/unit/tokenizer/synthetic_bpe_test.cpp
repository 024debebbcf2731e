// tokenizer.json loading and the BPE pipeline against Hugging Face tokenizers, on small
// tokenizers in the layouts of GPT-2, Llama 3, Qwen2, Llama 2 and others (fixtures:
// tests/reference/tokenizer_synthetic_bpe.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/tokenizer/fixture_cases.h"

namespace hearth {
namespace {

class SyntheticBpe : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticBpe, MatchesTokenizers) {
  const auto dir = test::tokenizer_fixtures() / "synthetic" / GetParam();
  const auto tok = load_tokenizer(dir);
  const auto cases = test::load_cases(dir / "cases.json");
  ASSERT_GE(cases.size(), 200u);
  EXPECT_EQ(test::check_cases(*tok, cases), 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, SyntheticBpe,
                         ::testing::Values("gpt2_added", "gpt2_plain", "llama3", "qwen2",
                                           "digits_prefix", "behaviors", "llama2_style"));

TEST(SyntheticBpe, SpecialTokensAndPostProcessing) {
  const auto tok = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "llama3");
  ASSERT_TRUE(tok->bos_id());
  EXPECT_EQ(tok->piece(*tok->bos_id()), "<|begin_of_text|>");
  EXPECT_EQ(tok->piece(*tok->eos_id()), "<|eot_id|>");
  EXPECT_TRUE(tok->adds_bos());
  EXPECT_TRUE(tok->is_special(*tok->bos_id()));
  EXPECT_EQ(tok->piece_to_id("<|eot_id|>"), tok->eos_id());
  EXPECT_FALSE(tok->piece_to_id("no such piece"));
  EXPECT_EQ(tok->encode("", true), std::vector<int32_t>{*tok->bos_id()});

  const auto smol_like = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "qwen2");
  EXPECT_FALSE(smol_like->adds_bos());
  EXPECT_EQ(smol_like->encode("", true), std::vector<int32_t>{});
}

TEST(SyntheticBpe, DecodeRejectsIdsOutsideTheVocabulary) {
  const auto tok = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "gpt2_added");
  const std::vector<int32_t> bad{-1};
  EXPECT_THROW(tok->decode(bad), Error);
  const std::vector<int32_t> too_big{tok->vocab_size()};
  EXPECT_THROW(tok->decode(too_big), Error);
  EXPECT_THROW(tok->piece(tok->vocab_size()), Error);
}

TEST(SyntheticBpe, RoundTripsRandomText) {
  // Byte-level BPE is lossless on any valid UTF-8 (no added token strips whitespace here).
  const auto tok = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "llama3");
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {
      "a",          "Z",  " ",  "  ", "\n",       "\t",          "\r\n",   "7",
      "42",         "'s", "'",  "é",  "中",       "😀",           "\u200d", "\u0301",
      "<|eot_id|>", "<|", "|>", "!",  "\xC2\xA0", "\xEF\xBF\xBD"};
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 30);
    for (int k = 0; k < n; ++k) text += alphabet[rng() % alphabet.size()];
    const auto ids = tok->encode(text);
    ASSERT_EQ(tok->decode(ids), text);
    ASSERT_EQ(test::stream_decode(*tok, ids, false), text);
  }
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

// A copy of a synthetic fixture in a temporary folder, its tokenizer.json changed by `edit`;
// removed again when the variant goes out of scope.
class FixtureVariant {
 public:
  FixtureVariant(const std::string& fixture, const std::string& name,
                 const std::function<void(nlohmann::json&)>& edit)
      : src_(test::tokenizer_fixtures() / "synthetic" / fixture),
        dir_(std::filesystem::temp_directory_path() / name) {
    std::filesystem::create_directories(dir_);
    std::ifstream in(src_ / "tokenizer.json");
    nlohmann::json j = nlohmann::json::parse(in);
    edit(j);
    std::ofstream(dir_ / "tokenizer.json") << j.dump();
    std::filesystem::copy_file(src_ / "tokenizer_config.json", dir_ / "tokenizer_config.json",
                               std::filesystem::copy_options::overwrite_existing);
  }
  ~FixtureVariant() { std::filesystem::remove_all(dir_); }
  const std::filesystem::path& original() const { return src_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path src_, dir_;
};

// transformers' GGUF converter writes `"normalizer": {"type": "Sequence", "normalizers": []}`
// for Llama-3-style BPE: the same tokenizer as no normalizer at all.
TEST(SyntheticBpe, EmptyNormalizerSequenceIsNoNormalizer) {
  const FixtureVariant variant("llama3", "hearth_empty_normalizer", [](nlohmann::json& j) {
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", nlohmann::json::array()}};
  });
  const auto plain = load_tokenizer(variant.original());
  const auto with_empty = load_tokenizer(variant.dir());
  for (const char* text : {"Hello world!", "  spaces\tand\nlines 12345", "naïve café 東京"}) {
    EXPECT_EQ(with_empty->encode(text, true), plain->encode(text, true)) << text;
  }
}

// transformers 5 writes this decoder for byte-level GGUF vocabularies. tokenizers applies it to
// the fused text: ByteLevel maps everything back to bytes, or nothing when one character is
// outside its table (expected strings from tokenizers 0.23.3, same tokenizer.json).
TEST(SyntheticBpe, FusedByteLevelDecoderSequence) {
  const FixtureVariant variant("gpt2_plain", "hearth_fused_byte_level", [](nlohmann::json& j) {
    j["decoder"] = nlohmann::json::parse(R"({"type": "Sequence", "decoders": [
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}]})");
    j["added_tokens"].push_back({{"id", 700},
                                 {"content", "a\u2581b"},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", false}});
  });
  const auto plain = load_tokenizer(variant.original());
  const auto fused = load_tokenizer(variant.dir());
  for (const char* text : {"Hello world!", "naïve café 東京\n\tx", "  a  b  "}) {
    const auto ids = plain->encode(text, false);
    EXPECT_EQ(fused->decode(ids, false), plain->decode(ids, false)) << text;
  }
  const std::vector<int32_t> ids = {447, 221, 700, 289, 333, 76, 68};
  EXPECT_EQ(fused->encode("Hello a\u2581b world", false), ids);
  EXPECT_EQ(fused->decode(ids, false), "HelloĠa bĠworld");
}

// A decoder Sequence Hearth cannot reproduce is refused with its steps named.
TEST(SyntheticBpe, UnknownDecoderSequenceIsRefused) {
  const FixtureVariant variant("gpt2_plain", "hearth_unknown_decoder", [](nlohmann::json& j) {
    j["decoder"] = nlohmann::json::parse(
        R"({"type": "Sequence", "decoders": [{"type": "ByteLevel"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
  });
  try {
    load_tokenizer(variant.dir());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Sequence [ByteLevel, Strip]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hearth
