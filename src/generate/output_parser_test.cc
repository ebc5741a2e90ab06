// OutputParserChain: text passes through the parsers in order, a flush drains each parser's
// held text through the ones after it, and one stopped parser stops the chain.
#include "generate/output_parser.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "generate/stop_strings.h"

namespace moex::generate {
namespace {

// Holds text until a newline, then releases whole lines (a parser that waits to decide, as a
// tool-call parser does).
class WholeLines final : public TextOutputParser {
 public:
  using TextOutputParser::flush;
  using TextOutputParser::push;

  std::string push(std::string_view text) override {
    held_ += text;
    const size_t nl = held_.rfind('\n');
    if (nl == std::string::npos) return "";
    std::string out = held_.substr(0, nl + 1);
    held_.erase(0, nl + 1);
    return out;
  }
  std::string flush() override { return std::exchange(held_, {}); }
  bool stopped() const override { return false; }
  const char* name() const override { return "whole_lines"; }

 private:
  std::string held_;
};

TEST(OutputParserChain, EachParserReadsTheOutputOfTheOneBefore) {
  OutputParserChain chain;
  chain.add(std::make_unique<WholeLines>());
  chain.add(std::make_unique<StopStrings>(std::vector<std::string>{"END"}));
  EXPECT_EQ(content_of(chain.push("ab")), "");          // held by WholeLines
  EXPECT_EQ(content_of(chain.push("c\nde")), "abc\n");  // a line, then StopStrings passes it
  EXPECT_FALSE(chain.stopped());
  EXPECT_EQ(content_of(chain.push("EN")), "");
  EXPECT_EQ(content_of(chain.flush()), "deEN");  // WholeLines' rest through StopStrings, then its own
}

TEST(OutputParserChain, AStoppedParserStopsTheChain) {
  OutputParserChain chain;
  chain.add(std::make_unique<StopStrings>(std::vector<std::string>{"x"}));
  chain.add(std::make_unique<WholeLines>());
  EXPECT_EQ(content_of(chain.push("a\nbxc\n")), "a\n");
  EXPECT_TRUE(chain.stopped());
  EXPECT_EQ(content_of(chain.push("more\n")), "");
  EXPECT_EQ(content_of(chain.flush()), "b");  // WholeLines held "b" (the text before the stop string)
}

TEST(OutputParserChain, AnEmptyChainPassesTextThrough) {
  OutputParserChain chain;
  EXPECT_TRUE(chain.empty());
  EXPECT_EQ(content_of(chain.push("abc")), "abc");
  EXPECT_EQ(content_of(chain.flush()), "");
  EXPECT_FALSE(chain.stopped());
}

}  // namespace
}  // namespace moex::generate
