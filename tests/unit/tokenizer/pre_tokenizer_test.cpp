// Pre-tokenizer splits against Hugging Face tokenizers (Oniguruma regexes, Digits), piece by
// piece, on the hard strings (fixture: tests/reference/tokenizer_pretokenize.py).
#include "engine/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>

#include "engine/core/error.h"
#include "tests/unit/tokenizer/fixture_cases.h"

namespace hearth {
namespace {

std::vector<std::string> split_with(const PreTokenizer& pre, std::string_view text) {
  std::vector<std::string_view> pieces{text};
  if (text.empty()) pieces.clear();
  PieceArena arena;
  pre.split(pieces, arena);
  return {pieces.begin(), pieces.end()};
}

std::unique_ptr<PreTokenizer> make(const std::string& name) {
  if (name == "gpt2")
    return make_regex_split_pre_tokenizer(regex_patterns::kGpt2, SplitBehavior::kIsolated, false);
  if (name == "llama3")
    return make_regex_split_pre_tokenizer(regex_patterns::kLlama3, SplitBehavior::kIsolated, false);
  if (name == "qwen2")
    return make_regex_split_pre_tokenizer(regex_patterns::kQwen2, SplitBehavior::kIsolated, false);
  if (name == "digits_individual") return make_digits_pre_tokenizer(true);
  if (name == "digits_contiguous") return make_digits_pre_tokenizer(false);
  return nullptr;
}

TEST(PreTokenizer, MatchesTokenizersOnHardStrings) {
  const auto root =
      nlohmann::json::parse(test::read_file(test::tokenizer_fixtures() / "pretokenize_cases.json"));
  const auto strings = root.at("strings").get<std::vector<std::string>>();
  ASSERT_GE(strings.size(), 200u);
  for (const auto& [name, expected] : root.at("configs").items()) {
    SCOPED_TRACE(name);
    auto pre = make(name);
    ASSERT_NE(pre, nullptr);
    int failures = 0;
    for (size_t i = 0; i < strings.size() && failures < 10; ++i) {
      const auto want = expected[i].get<std::vector<std::string>>();
      const auto got = split_with(*pre, strings[i]);
      if (got != want) {
        ++failures;
        ADD_FAILURE() << name << " on \"" << test::shown(strings[i]) << "\": got "
                      << ::testing::PrintToString(got) << " want "
                      << ::testing::PrintToString(want);
      }
    }
  }
}

TEST(PreTokenizer, RefusesUnknownRegexes) {
  for (const char* pattern : {"(a+)+", "(a|a)*b", "\\w+", ""}) {
    try {
      make_regex_split_pre_tokenizer(pattern, SplitBehavior::kIsolated, false);
      ADD_FAILURE() << "accepted " << pattern;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find("regex"), std::string::npos);
    }
  }
}

TEST(PreTokenizer, ByteLevelAddsPrefixSpacePerPiece) {
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  steps.push_back(make_digits_pre_tokenizer(true));
  steps.push_back(make_byte_level_pre_tokenizer(true, true));
  auto pre = make_sequence_pre_tokenizer(std::move(steps));
  // As tokenizers: [('Ġab', ..), ('Ġ1', ..), ('Ġ2', ..), ('Ġcd', ..)] for "ab12 cd".
  EXPECT_EQ(split_with(*pre, "ab12 cd"), (std::vector<std::string>{" ab", " 1", " 2", " cd"}));
  EXPECT_TRUE(pre->byte_level());
}

TEST(PreTokenizer, LongInputRunsInLinearTime) {
  // 1 MB of one letter, of spaces, of digits, of punctuation: each matcher is linear (a
  // backtracking regex engine would be quadratic on the whitespace run).
  auto pre =
      make_regex_split_pre_tokenizer(regex_patterns::kLlama3, SplitBehavior::kIsolated, false);
  for (char c : {'a', ' ', '7', '!'}) {
    const std::string text(1 << 20, c);
    const auto start = std::chrono::steady_clock::now();
    const auto pieces = split_with(*pre, text);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(s, 5.0) << "char " << c;
    EXPECT_FALSE(pieces.empty());
  }
}

}  // namespace
}  // namespace hearth
