// Sentencepiece models trained with spm_train, through libsentencepiece and through the native
// SentencePiece-BPE of GGUF "llama" vocabularies, against the Python sentencepiece package
// (fixtures: tests/reference/tokenizer_sentencepiece.py).
#include <gtest/gtest.h>

#include <random>

#include <sentencepiece_processor.h>

#include "engine/tokenizer/llama_spm_tokenizer.h"
#include "engine/tokenizer/tokenizer_loaders.h"
#include "tests/unit/tokenizer/fixture_cases.h"

namespace hearth {
namespace {

std::filesystem::path spm_dir() {
  return test::tokenizer_fixtures() / "spm";
}

std::unique_ptr<Tokenizer> load_model(const std::string& name) {
  const auto path = spm_dir() / (name + ".model");
  return parse_sentencepiece_model(test::read_file(path), std::nullopt, path.string());
}

class SentencePieceModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SentencePieceModel, MatchesPythonSentencepiece) {
  const auto tok = load_model(GetParam());
  const auto cases = test::load_cases(spm_dir() / (GetParam() + "_cases.json"));
  ASSERT_GE(cases.size(), 200u);
  EXPECT_EQ(test::check_cases(*tok, cases), 0);
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceModel, ::testing::Values("bpe", "unigram"));

TEST(SentencePiece, LoadsFromAModelFolderWithConfig) {
  const auto dir = std::filesystem::temp_directory_path() / "hearth_spm_folder_test";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(spm_dir() / "bpe.model", dir / "tokenizer.model",
                             std::filesystem::copy_options::overwrite_existing);
  {
    std::ofstream config(dir / "tokenizer_config.json");
    config << R"({"add_bos_token": false, "add_eos_token": true})";
  }
  const auto tok = load_tokenizer(dir);
  EXPECT_FALSE(tok->adds_bos());
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  const auto ids = tok->encode("hello", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), 2);
  EXPECT_NE(ids.front(), 1);
  std::filesystem::remove_all(dir);
}

// The native SentencePiece-BPE, given the model's vocabulary as a GGUF "llama" vocabulary
// would carry it (tokens, scores, types), must give sentencepiece's ids.
SpmVocabSpec vocab_of(const std::string& model_name) {
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.Load((spm_dir() / (model_name + ".model")).string());
  EXPECT_TRUE(status.ok()) << status.ToString();
  SpmVocabSpec spec;
  spec.source = model_name;
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    spec.tokens.push_back(sp.IdToPiece(id));
    spec.scores.push_back(sp.GetScore(id));
    SpmTokenType type = SpmTokenType::kNormal;
    if (sp.IsControl(id))
      type = SpmTokenType::kControl;
    else if (sp.IsUnknown(id))
      type = SpmTokenType::kUnknown;
    else if (sp.IsByte(id))
      type = SpmTokenType::kByte;
    else if (sp.IsUnused(id))
      type = SpmTokenType::kUnused;
    else if (sp.IdToPiece(id) == "<tool>")
      type = SpmTokenType::kUserDefined;  // spm_train flag
    spec.types.push_back(type);
  }
  spec.bos_id = sp.bos_id();
  spec.eos_id = sp.eos_id();
  spec.unk_id = sp.unk_id();
  return spec;
}

TEST(NativeSentencePieceBpe, MatchesPythonSentencepiece) {
  const auto tok = make_llama_spm_tokenizer(vocab_of("bpe"));
  const auto cases = test::load_cases(spm_dir() / "bpe_cases.json");
  EXPECT_EQ(test::check_cases(*tok, cases), 0);
}

TEST(NativeSentencePieceBpe, AgreesWithLibsentencepieceOnRandomText) {
  const auto native = make_llama_spm_tokenizer(vocab_of("bpe"));
  const auto lib = load_model("bpe");
  std::mt19937 rng(11);
  const std::vector<std::string> alphabet = {"a",   "e",      "th", " ",      "  ", "\n",
                                             "\t",  "1",      "23", "é",      "中", "😀",
                                             "<s>", "<tool>", "▁",  "\u0301", "x"};
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 25);
    for (int k = 0; k < n; ++k) text += alphabet[rng() % alphabet.size()];
    const auto ids = lib->encode(text);
    ASSERT_EQ(native->encode(text), ids) << test::shown(text);
    ASSERT_EQ(native->decode(ids), lib->decode(ids)) << test::shown(text);
    ASSERT_EQ(test::stream_decode(*native, ids, false), lib->decode(ids));
  }
}

TEST(NativeSentencePieceBpe, RejectsBadVocabularies) {
  auto expect_invalid = [](SpmVocabSpec spec, const char* needle) {
    try {
      make_llama_spm_tokenizer(std::move(spec));
      ADD_FAILURE() << "accepted a vocabulary with " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto spec = vocab_of("bpe");
  auto bad_byte = spec;
  for (size_t i = 0; i < bad_byte.types.size(); ++i)
    if (bad_byte.types[i] == SpmTokenType::kByte) {
      bad_byte.tokens[i] = "<0xZZ>";
      break;
    }
  expect_invalid(bad_byte, "<0xZZ>");
  auto bad_bos = spec;
  bad_bos.bos_id = static_cast<int32_t>(spec.tokens.size());
  expect_invalid(bad_bos, "outside the vocabulary");
  auto bad_scores = spec;
  bad_scores.scores.pop_back();
  expect_invalid(bad_scores, "scores");
  auto bad_type = spec;
  bad_type.types[5] = static_cast<SpmTokenType>(9);
  expect_invalid(bad_type, "type");
  expect_invalid(SpmVocabSpec{}, "empty");
}

}  // namespace
}  // namespace hearth

namespace hearth {
namespace {

// load_tokenizer prefers tokenizer.json, except when it is not byte-level and a tokenizer.model
// lies beside it (then libsentencepiece, the reference for those models, is used).
TEST(LoadTokenizer, ChoosesBetweenTokenizerJsonAndModel) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / "hearth_load_tokenizer_choice";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto synth = test::tokenizer_fixtures() / "synthetic";
  fs::copy_file(spm_dir() / "bpe.model", dir / "tokenizer.model");
  EXPECT_EQ(load_tokenizer(dir)->vocab_size(), 1000);  // the .model alone

  fs::copy_file(synth / "llama2_style" / "tokenizer.json", dir / "tokenizer.json");
  EXPECT_EQ(load_tokenizer(dir)->vocab_size(), 1000);  // not byte-level: the .model wins

  fs::copy_file(synth / "llama3" / "tokenizer.json", dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(load_tokenizer(dir)->vocab_size(), 700);  // byte-level: tokenizer.json wins

  fs::remove(dir / "tokenizer.model");
  fs::copy_file(synth / "llama2_style" / "tokenizer.json", dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(load_tokenizer(dir)->vocab_size(), 758);  // Llama 2 style BPE from tokenizer.json

  fs::remove(dir / "tokenizer.json");
  try {
    load_tokenizer(dir);
    ADD_FAILURE() << "loaded a folder without tokenizer files";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hearth
