// StreamingDetokenizer: pieces never end inside a UTF-8 character and add up to decode().
#include <gtest/gtest.h>

#include "engine/tokenizer/byte_level.h"
#include "tests/unit/tokenizer/fixture_cases.h"

namespace hearth {
namespace {

TEST(StreamingDetokenizer, HoldsBackSplitCharacters) {
  const auto tok = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "gpt2_added");
  // "😀" = F0 9F 98 80, fed as four single-byte tokens.
  std::vector<int32_t> ids;
  for (uint8_t b : {0xF0, 0x9F, 0x98, 0x80}) {
    auto id = tok->piece_to_id(byte_level::byte_to_utf8(b));
    ASSERT_TRUE(id);
    ids.push_back(*id);
  }
  StreamingDetokenizer detok(*tok);
  EXPECT_EQ(detok.feed(ids[0]), "");
  EXPECT_EQ(detok.feed(ids[1]), "");
  EXPECT_EQ(detok.feed(ids[2]), "");
  EXPECT_EQ(detok.feed(ids[3]), "\xF0\x9F\x98\x80");
  EXPECT_EQ(detok.flush(), "");

  // An incomplete character at the end comes out of flush() as U+FFFD, like decode().
  StreamingDetokenizer cut(*tok);
  EXPECT_EQ(cut.feed(*tok->piece_to_id("a")), "a");
  EXPECT_EQ(cut.feed(ids[0]), "");
  EXPECT_EQ(cut.feed(ids[1]), "");
  EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD");
  const std::vector<int32_t> all{*tok->piece_to_id("a"), ids[0], ids[1]};
  EXPECT_EQ(tok->decode(all), "a\xEF\xBF\xBD");
}

TEST(StreamingDetokenizer, InvalidBytesInTheMiddleAreNotHeldForever) {
  const auto tok = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "gpt2_added");
  const int32_t lone = *tok->piece_to_id(byte_level::byte_to_utf8(0x80));
  const int32_t a = *tok->piece_to_id("a");
  StreamingDetokenizer detok(*tok);
  EXPECT_EQ(detok.feed(lone), "");
  EXPECT_EQ(detok.feed(a),
            "\xEF\xBF\xBD"
            "a");
}

TEST(StreamingDetokenizer, SkipsSpecialTokensLikeDecode) {
  const auto tok = load_tokenizer(test::tokenizer_fixtures() / "synthetic" / "llama2_style");
  const auto ids = tok->encode("Hello world", true);
  ASSERT_EQ(ids.front(), *tok->bos_id());
  EXPECT_EQ(test::stream_decode(*tok, ids, true), tok->decode(ids, true));
  EXPECT_EQ(test::stream_decode(*tok, ids, false), tok->decode(ids, false));
  EXPECT_EQ(tok->decode(ids, true), "Hello world");
}

}  // namespace
}  // namespace hearth
