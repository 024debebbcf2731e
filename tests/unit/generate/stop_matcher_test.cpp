#include <gtest/gtest.h>

#include "engine/generate/stop_matcher.h"

namespace hearth {
namespace {

TEST(StopMatcher, HoldsBackPossiblePrefixes) {
  StopMatcher m({"</end>", "STOP"});
  EXPECT_EQ(m.push("hello <"), "hello ");
  EXPECT_EQ(m.push("/e"), "");
  EXPECT_EQ(m.push("x"), "</ex");  // no longer a prefix
  EXPECT_EQ(m.push(" ST"), " ");
  EXPECT_EQ(m.push("OP and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("later"), "");
}

TEST(StopMatcher, StopInsideOnePieceCutsThere) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(m.push("line one\n\nline two"), "line one");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, EarliestStopWins) {
  StopMatcher m({"b c", "a b"});
  EXPECT_EQ(m.push("x a b c"), "x ");
}

TEST(StopMatcher, FlushReturnsHeldText) {
  StopMatcher m({"###"});
  EXPECT_EQ(m.push("text ##"), "text ");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.flush(), "##");
}

TEST(StopMatcher, NoStopsPassesEverything) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  StopMatcher e({""});  // an empty stop string never matches
  EXPECT_EQ(e.push("abc"), "abc");
}

TEST(StopMatcher, Utf8StopString) {
  StopMatcher m({"終わり"});
  EXPECT_EQ(m.push("これで終"), "これで");
  EXPECT_EQ(m.push("わり!"), "");
  EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace hearth
