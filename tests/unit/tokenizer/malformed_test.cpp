// Hostile and malformed tokenizer files: each is a clear Error, never a crash or a hang
// (label "parsers": CI runs these under ASan/UBSan).
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer_loaders.h"
#include "tests/unit/tokenizer/fixture_cases.h"

namespace hearth {
namespace {

using nlohmann::json;

json base_tokenizer_json() {
  return json::parse(
      test::read_file(test::tokenizer_fixtures() / "synthetic" / "gpt2_added" / "tokenizer.json"));
}

// Expects parse_tokenizer_json to throw `code` with `needle` in the message.
void expect_json_error(const std::string& text, ErrorCode code, const std::string& needle) {
  try {
    parse_tokenizer_json(text, std::nullopt, "tokenizer.json");
    ADD_FAILURE() << "accepted; expected an error mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
}

TEST(MalformedTokenizerJson, MergeReferencingUnknownToken) {
  auto j = base_tokenizer_json();
  j["model"]["merges"].push_back(json::array({"nosuchtoken", "e"}));
  expect_json_error(j.dump(), ErrorCode::kInvalidFile, "nosuchtoken");
  auto k = base_tokenizer_json();
  k["model"]["merges"].push_back("onlyonepart");
  expect_json_error(k.dump(), ErrorCode::kInvalidFile, "merges[");
}

TEST(MalformedTokenizerJson, IdsOutOfRange) {
  for (const json& id : {json(uint64_t{1} << 31), json(int64_t{-1}), json(uint64_t{1} << 40),
                         json(1e300), json("7"), json(nullptr)}) {
    auto j = base_tokenizer_json();
    j["model"]["vocab"]["zzz"] = id;
    if (id.is_null()) {
      // A null id reads as absent: still an error, the value is not an integer.
      j["model"]["vocab"]["zzz"] = json::array();
    }
    expect_json_error(j.dump(), ErrorCode::kInvalidFile, "vocab[\"zzz\"]");
  }
  auto j = base_tokenizer_json();
  j["added_tokens"][0]["id"] = uint64_t{1} << 31;
  expect_json_error(j.dump(), ErrorCode::kInvalidFile, "added_tokens[0]");
  auto dup = base_tokenizer_json();
  dup["model"]["vocab"]["zzz"] = 5;
  expect_json_error(dup.dump(), ErrorCode::kInvalidFile, "id 5");
}

TEST(MalformedTokenizerJson, DeepNestingIsRefusedQuickly) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto start = std::chrono::steady_clock::now();
  expect_json_error(deep, ErrorCode::kInvalidFile, "nested deeper");
  const std::string deep_objects = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "{\"a\":";
    return s + "1" + std::string(100000, '}');
  }();
  expect_json_error(deep_objects, ErrorCode::kInvalidFile, "nested deeper");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(MalformedTokenizerJson, PathologicalSplitRegexIsRefused) {
  auto j = base_tokenizer_json();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"},
                     {"pattern", {{"Regex", "(a+)+$"}}},
                     {"behavior", "Isolated"},
                     {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  expect_json_error(j.dump(), ErrorCode::kUnsupported, "(a+)+$");
}

TEST(MalformedTokenizerJson, StructuralDefects) {
  expect_json_error("", ErrorCode::kInvalidFile, "invalid JSON");
  expect_json_error("[1,2,3]", ErrorCode::kInvalidFile, "not an object");
  expect_json_error("{\"model\": 3}", ErrorCode::kInvalidFile, "model");
  expect_json_error("{}", ErrorCode::kInvalidFile, "missing \"model\"");
  const std::string text = base_tokenizer_json().dump();
  for (size_t cut : {size_t{1}, text.size() / 3, text.size() / 2, text.size() - 1})
    expect_json_error(text.substr(0, cut), ErrorCode::kInvalidFile, "invalid JSON");
  expect_json_error("{\"model\": {\"vocab\": {\"\xff\": 0}}}", ErrorCode::kInvalidFile,
                    "invalid JSON");

  auto wordpiece = base_tokenizer_json();
  wordpiece["model"]["type"] = "WordPiece";
  expect_json_error(wordpiece.dump(), ErrorCode::kUnsupported, "WordPiece");
  auto unknown_pre = base_tokenizer_json();
  unknown_pre["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_json_error(unknown_pre.dump(), ErrorCode::kUnsupported, "Whitespace");
  auto no_pattern = base_tokenizer_json();
  no_pattern["pre_tokenizer"] = {{"type", "Split"}, {"behavior", "Isolated"}};
  expect_json_error(no_pattern.dump(), ErrorCode::kInvalidFile, "pattern");
  auto bad_flag = base_tokenizer_json();
  bad_flag["added_tokens"][0]["lstrip"] = "yes";
  expect_json_error(bad_flag.dump(), ErrorCode::kInvalidFile, "lstrip");
  auto nfc = base_tokenizer_json();
  nfc["normalizer"] = {{"type", "NFC"}};
  expect_json_error(nfc.dump(), ErrorCode::kUnsupported, "NFC");
  auto bad_template = base_tokenizer_json();
  bad_template["post_processor"]["single"][0]["SpecialToken"]["id"] = "<|nope|>";
  expect_json_error(bad_template.dump(), ErrorCode::kInvalidFile, "<|nope|>");
  auto huge_id = base_tokenizer_json();
  huge_id["model"]["vocab"]["zzz"] = 100000000;
  expect_json_error(huge_id.dump(), ErrorCode::kInvalidFile, "vocab[\"zzz\"]");
  auto sparse_id = base_tokenizer_json();
  sparse_id["model"]["vocab"]["zzz"] = 4000000;  // allowed as a number, not by the vocab size
  expect_json_error(sparse_id.dump(), ErrorCode::kInvalidFile, "far beyond");
  auto sparse_added = base_tokenizer_json();
  sparse_added["added_tokens"][0]["id"] = 4000000;
  expect_json_error(sparse_added.dump(), ErrorCode::kInvalidFile, "far beyond");
}

TEST(MalformedTokenizerJson, MutatedFilesNeverCrash) {
  // Random byte edits of a real tokenizer.json: each either loads (and then encodes and decodes)
  // or is an Error.
  const std::string text = base_tokenizer_json().dump();
  std::mt19937 rng(3);
  int loaded = 0;
  for (int i = 0; i < 300; ++i) {
    std::string mutated = text;
    for (int k = 0; k < 3; ++k) mutated[rng() % mutated.size()] = static_cast<char>(rng() % 128);
    try {
      auto tok = parse_tokenizer_json(mutated, std::nullopt, "tokenizer.json");
      const auto ids = tok->encode("Hello <mask> world 123 😀");
      tok->decode(ids);
      ++loaded;
    } catch (const Error&) {
    }
  }
  SUCCEED() << loaded << " mutated files loaded";
}

// --- sentencepiece -------------------------------------------------------------------------

std::string spm_model_bytes(const char* name) {
  return test::read_file(test::tokenizer_fixtures() / "spm" / name);
}

void expect_spm_error(const std::string& bytes, const std::string& needle) {
  try {
    parse_sentencepiece_model(bytes, std::nullopt, "tokenizer.model");
    ADD_FAILURE() << "accepted; expected an error mentioning \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string length_delimited(uint32_t field, const std::string& payload) {
  return varint((uint64_t{field} << 3) | 2) + varint(payload.size()) + payload;
}
std::string piece_message(const std::string& piece) {
  return length_delimited(1, length_delimited(1, piece));
}

TEST(MalformedSentencePiece, TruncatedModels) {
  const std::string model = spm_model_bytes("bpe.model");
  expect_spm_error("", "empty");
  for (size_t cut :
       {size_t{1}, size_t{2}, size_t{7}, model.size() / 4, model.size() / 2, model.size() - 1}) {
    try {
      parse_sentencepiece_model(model.substr(0, cut), std::nullopt, "tokenizer.model");
      ADD_FAILURE() << "accepted a model cut at " << cut;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    }
  }
}

TEST(MalformedSentencePiece, HostilePieces) {
  expect_spm_error(piece_message(std::string(1 << 20, 'a')), "bytes long");
  expect_spm_error(piece_message(std::string("a\0b", 3)), "NUL");
  expect_spm_error(piece_message("\xff\xfe"), "UTF-8");
  // A declared length far beyond the end.
  expect_spm_error(varint((1 << 3) | 2) + varint(uint64_t{1} << 60), "runs past the end");
  // More pieces than any vocabulary has.
  std::string many;
  const std::string one = piece_message("a");
  many.reserve(one.size() * ((size_t{1} << 22) + 1));
  for (int64_t i = 0; i <= kMaxVocabSize; ++i) many += one;
  expect_spm_error(many, "pieces");
  expect_spm_error("\x0f", "wire type");
  expect_spm_error(varint((2 << 3) | 0) + varint(5), "must be a message");
}

TEST(MalformedSentencePiece, CorruptCharsmapIsRefused) {
  // unigram.model carries nmt_nfkc's precompiled_charsmap. Point a trie unit far away.
  const std::string model = spm_model_bytes("unigram.model");
  const auto at = model.find("nmt_nfkc");
  ASSERT_NE(at, std::string::npos);
  // The charsmap follows the name field: tag 0x12, length varint, then the 4-byte trie size.
  size_t pos = at + 8;
  ASSERT_EQ(static_cast<uint8_t>(model[pos]), 0x12);
  ++pos;
  while (static_cast<uint8_t>(model[pos]) & 0x80) ++pos;
  ++pos;
  const size_t trie = pos + 4;
  std::string corrupt = model;
  corrupt[trie + 3] = '\x7f';  // root unit offset bits: children land outside the array
  expect_spm_error(corrupt, "precompiled_charsmap");
  std::string bad_size = model;
  bad_size[pos + 3] = '\x40';  // trie size beyond the blob
  expect_spm_error(bad_size, "trie size");
}

TEST(MalformedSentencePiece, MutatedModelsNeverCrash) {
  for (const char* name : {"bpe.model", "unigram.model"}) {
    const std::string model = spm_model_bytes(name);
    std::mt19937 rng(5);
    for (int i = 0; i < 200; ++i) {
      std::string mutated = model;
      for (int k = 0; k < 4; ++k) mutated[rng() % mutated.size()] = static_cast<char>(rng());
      try {
        auto tok = parse_sentencepiece_model(mutated, std::nullopt, "tokenizer.model");
        tok->decode(tok->encode("Hello wörld 123 😀 <s>"));
      } catch (const Error&) {
      }
    }
  }
}

}  // namespace
}  // namespace hearth
