// StopStrings: stop strings split across pushes, overlapping prefixes, the earliest of
// several, multi-byte UTF-8, and that nothing at or after a match is ever released.
#include "generate/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace moex::generate {
namespace {

// Pushes each piece and returns everything released, flush included.
std::string run(StopStrings& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += m.push(p);
  return out + m.flush();
}

TEST(StopStrings, MatchInOnePieceReleasesOnlyTheTextBefore) {
  StopStrings m({"STOP"});
  EXPECT_EQ(m.push("abc STOP def"), "abc ");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, SplitAcrossPiecesIsHeldBackThenDropped) {
  StopStrings m({"STOP"});
  EXPECT_EQ(m.push("Hel"), "Hel");
  EXPECT_EQ(m.push("lo ST"), "lo ");  // "ST" could begin STOP
  EXPECT_EQ(m.held(), 2u);
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("O"), "");
  EXPECT_EQ(m.push("P and after"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopStrings, AHeldPrefixThatDoesNotContinueIsReleased) {
  StopStrings m({"STOP"});
  EXPECT_EQ(m.push("a ST"), "a ");
  EXPECT_EQ(m.push("AR"), "STAR");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("ST"), "");
  EXPECT_EQ(m.flush(), "ST");  // the end: no stop string can complete any more
}

TEST(StopStrings, OverlappingPrefixes) {
  StopStrings m({"aab"});
  EXPECT_EQ(m.push("a"), "");
  EXPECT_EQ(m.push("a"), "");
  EXPECT_EQ(m.push("a"), "a");  // "aaa": only the last "aa" can still begin "aab"
  EXPECT_EQ(m.push("b"), "");
  EXPECT_TRUE(m.stopped());
  StopStrings n({"abab"});
  EXPECT_EQ(run(n, {"ab", "a", "bab"}), "");  // "ababab": the match starts at 0
  EXPECT_TRUE(n.stopped());
  StopStrings o({"abab"});
  EXPECT_EQ(run(o, {"xab", "aba", "b"}), "x");  // "xababab": the first match is at 1
}

TEST(StopStrings, TheEarliestOfSeveralStopsWins) {
  StopStrings m({"world", "lo"});
  EXPECT_EQ(m.push("hello world"), "hel");
  StopStrings n({"lo w", "o"});
  EXPECT_EQ(run(n, {"hel", "l", "o w"}), "hel");  // "hello w": "lo w" at 3 before "o" at 4
  // The longest possible prefix is held: "ab" could begin "abc" though "b" begins nothing.
  StopStrings k({"abc", "bz"});
  EXPECT_EQ(k.push("xab"), "x");
  EXPECT_EQ(k.push("z"), "a");  // "xabz": "bz" matched at 2
  EXPECT_TRUE(k.stopped());
}

TEST(StopStrings, MultiByteCharacters) {
  // "é!" is C3 A9 21; the text arrives one character at a time.
  StopStrings m({"\xC3\xA9!"});
  EXPECT_EQ(m.push("caf"), "caf");
  EXPECT_EQ(m.push("\xC3\xA9"), "");
  EXPECT_EQ(m.push("!"), "");
  EXPECT_TRUE(m.stopped());
  // A character sharing only its lead byte with the stop string is not held.
  StopStrings n({"\xC3\xA9"});
  EXPECT_EQ(n.push("\xC3\xA8"), "\xC3\xA8");  // è
  EXPECT_EQ(n.held(), 0u);
  // CJK: 日本 split across pieces; the held text is whole characters.
  StopStrings j({"\xE6\x97\xA5\xE6\x9C\xAC"});
  EXPECT_EQ(j.push("x\xE6\x97\xA5"), "x");
  EXPECT_EQ(j.held(), 3u);
  EXPECT_EQ(j.push("\xE6\x9C\xAC"), "");
  EXPECT_TRUE(j.stopped());
  // An emoji stop string inside a longer text.
  StopStrings e({"\xF0\x9F\x98\x80"});
  EXPECT_EQ(run(e, {"a\xF0\x9F\x98\x81", "b\xF0\x9F\x98\x80", "c"}),
            "a\xF0\x9F\x98\x81"
            "b");
}

TEST(StopStrings, NoStopsPassesEverythingThrough) {
  StopStrings m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.held(), 0u);
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

}  // namespace
}  // namespace moex::generate
