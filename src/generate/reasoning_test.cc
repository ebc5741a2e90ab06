// Reasoning parsers: <think> at the start or opened by the prompt, never closed, absent; and
// gpt-oss harmony channels with calls. Every output also pushed byte by byte and split at
// every byte.
#include "generate/reasoning.h"

#include <gtest/gtest.h>

#include "generate/harmony.h"
#include "generate/parser_test_util.h"

namespace moex::generate {
namespace {

using namespace moex::generate::testing;

MakeChain think(bool open) {
  return [=] {
    OutputParserChain c;
    c.add(make_think_parser(open));
    return c;
  };
}

MakeChain harmony(HarmonyOptions o = {}) {
  return [=] {
    OutputParserChain c;
    c.add(make_harmony_parser(o));
    return c;
  };
}

TEST(Think, SplitsReasoningFromTheAnswer) {
  EXPECT_EQ(parse_all_splits(think(false), "<think>\nLet me see.\n</think>\n\nThe answer."),
            (OutputEvents{reasoning("\nLet me see.\n"), content("The answer.")}));
  EXPECT_EQ(parse_all_splits(think(false), "\n<think>a</think>b"),
            (OutputEvents{reasoning("a"), content("b")}));
}

TEST(Think, OpenedByThePrompt) {
  EXPECT_TRUE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_EQ(parse_all_splits(think(true), "why</think>so"),
            (OutputEvents{reasoning("why"), content("so")}));
}

TEST(Think, NotAtTheStartOrNeverClosed) {
  EXPECT_EQ(parse_all_splits(think(false), "Hi <think>x</think>"),
            OutputEvents{content("Hi <think>x</think>")});
  EXPECT_EQ(parse_all_splits(think(false), "<think>still thinking </thi"),
            OutputEvents{reasoning("still thinking </thi")});
  EXPECT_EQ(parse_all_splits(think(false), "<thin"), OutputEvents{content("<thin")});
  EXPECT_EQ(parse_all_splits(think(false), ""), OutputEvents{});
}

TEST(Think, DetectedFromTheTemplate) {
  EXPECT_EQ(detect_reasoning_format("{{ '<think>' }}...</think>"), ReasoningFormat::kThink);
  EXPECT_EQ(detect_reasoning_format("<|channel|>analysis"), ReasoningFormat::kHarmony);
  EXPECT_EQ(detect_reasoning_format("{{ m }}"), ReasoningFormat::kNone);
}

TEST(Harmony, AnalysisThenFinal) {
  EXPECT_EQ(parse_all_splits(harmony(), "<|channel|>analysis<|message|>User asks.<|end|>"
                                        "<|start|>assistant<|channel|>final<|message|>Hello!"),
            (OutputEvents{reasoning("User asks."), content("Hello!")}));
  HarmonyOptions none;
  none.reasoning = false;
  EXPECT_EQ(parse_all_splits(harmony(none), "<|channel|>analysis<|message|>a<|end|>"
                                            "<|start|>assistant<|channel|>final<|message|>b"),
            OutputEvents{content("ab")});
}

TEST(Harmony, ToolCalls) {
  const std::string out =
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"SF\"}";
  EXPECT_EQ(parse_all_splits(harmony(), out),
            cat({{reasoning("Need weather.")}, call("get_weather", R"({"city":"SF"})")}));
  // The recipient in the header before the channel, and a second call after <|call|>'s place.
  const std::string two =
      "<|start|>assistant to=functions.a<|channel|>commentary json<|message|>{}<|end|>"
      "<|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>"
      "{\"x\": [1]}";
  EXPECT_EQ(parse_all_splits(harmony(), two), cat({call("a", "{}"), call("b", R"({"x":[1]})")}));
}

TEST(Harmony, MalformedOrUnwantedCallsAreContent) {
  EXPECT_EQ(parse_all_splits(harmony(), "<|channel|>commentary to=functions.f<|message|>{\"a\":"),
            OutputEvents{content("<|channel|>commentary to=functions.f<|message|>{\"a\":")});
  HarmonyOptions no_tools;
  no_tools.tool_calls = false;
  EXPECT_EQ(parse_all_splits(harmony(no_tools),
                             "<|channel|>commentary to=functions.f<|message|>{}"),
            OutputEvents{content("{}")});
  EXPECT_EQ(parse_all_splits(harmony(), "plain text"), OutputEvents{content("plain text")});
}

}  // namespace
}  // namespace moex::generate
