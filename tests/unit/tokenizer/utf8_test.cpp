#include "engine/tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

TEST(Utf8, LossyReplacesMaximalSubparts) {
  // Examples from the Unicode Standard, section 3.9 (U+FFFD substitution of maximal subparts).
  EXPECT_EQ(utf8::to_valid_lossy("a\x80z"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(utf8::to_valid_lossy("\xE4\xB8"), "\xEF\xBF\xBD");
  EXPECT_EQ(utf8::to_valid_lossy("\xE4\xB8z"), "\xEF\xBF\xBDz");
  EXPECT_EQ(utf8::to_valid_lossy("\xF0\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::to_valid_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::to_valid_lossy("\xE4\xB8\xAD"), "\xE4\xB8\xAD");
}

}  // namespace
}  // namespace hearth
