// Reads the reference fixtures written by tests/reference/tokenizer_*.py and checks a
// tokenizer against them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/common/test_paths.h"

namespace hearth::test {

inline std::filesystem::path tokenizer_fixtures() {
  return fixtures_dir() / "tokenizer";
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct FixtureCase {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_with_special;  // empty when the fixture has none
  std::string decoded;
  std::string decoded_skip_special;
};

inline std::vector<FixtureCase> load_cases(const std::filesystem::path& path) {
  const auto root = nlohmann::json::parse(read_file(path));
  std::vector<FixtureCase> cases;
  for (const auto& c : root.at("cases")) {
    FixtureCase fc;
    fc.text = c.at("text").get<std::string>();
    fc.ids = c.at("ids").get<std::vector<int32_t>>();
    if (c.contains("ids_with_special"))
      fc.ids_with_special = c["ids_with_special"].get<std::vector<int32_t>>();
    fc.decoded = c.at("decoded").get<std::string>();
    fc.decoded_skip_special = c.at("decoded_skip_special").get<std::string>();
    cases.push_back(std::move(fc));
  }
  return cases;
}

// Printable form of a test string for failure messages.
inline std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20)
      out += "\\x" + std::to_string(c);
    else
      out += static_cast<char>(c);
  }
  return out.size() > 120 ? out.substr(0, 120) + "..." : out;
}

// Feeds ids one at a time; returns the concatenated pieces, checking each is whole UTF-8.
inline std::string stream_decode(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                 bool skip_special) {
  StreamingDetokenizer detok(tok, skip_special);
  std::string out;
  for (int32_t id : ids) {
    const std::string piece = detok.feed(id);
    EXPECT_TRUE(utf8::is_valid(piece)) << "partial UTF-8 in a streamed piece";
    out += piece;
  }
  const std::string rest = detok.flush();
  EXPECT_TRUE(utf8::is_valid(rest));
  return out + rest;
}

struct CheckOptions {
  bool check_with_special = true;
  bool check_decode = true;
};

// Compares encode/decode/streaming with the reference; returns the number of mismatches.
inline int check_cases(const Tokenizer& tok, const std::vector<FixtureCase>& cases,
                       CheckOptions options = {}) {
  int failures = 0;
  for (const auto& c : cases) {
    const auto ids = tok.encode(c.text);
    if (ids != c.ids) {
      ++failures;
      ADD_FAILURE() << "ids differ for \"" << shown(c.text) << "\": got "
                    << ::testing::PrintToString(ids) << " want " << ::testing::PrintToString(c.ids);
      continue;
    }
    if (options.check_with_special && !c.ids_with_special.empty()) {
      EXPECT_EQ(tok.encode(c.text, true), c.ids_with_special) << "\"" << shown(c.text) << "\"";
    }
    if (!options.check_decode) continue;
    EXPECT_EQ(tok.decode(c.ids, false), c.decoded) << "decode of \"" << shown(c.text) << "\"";
    EXPECT_EQ(tok.decode(c.ids, true), c.decoded_skip_special)
        << "decode(skip_special) of \"" << shown(c.text) << "\"";
    // Streaming, one id at a time, equals the full decode.
    EXPECT_EQ(stream_decode(tok, c.ids, true), c.decoded_skip_special)
        << "streamed \"" << shown(c.text) << "\"";
    EXPECT_EQ(stream_decode(tok, c.ids, false), c.decoded)
        << "streamed \"" << shown(c.text) << "\"";
    // Lossless where the reference is.
    if (c.decoded == c.text) {
      EXPECT_EQ(tok.decode(tok.encode(c.text)), c.text);
    }
  }
  return failures;
}

}  // namespace hearth::test
