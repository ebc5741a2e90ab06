// The structure-aware template mutator of fuzz_chat_template: segments round-trip, outputs stay
// within the size libFuzzer gives and are a function of the seed, and mutation from a plain
// chat template reaches the interpreter's limits (the shapes that crashed it before they
// existed), which byte-level mutation reaches only by chance.
#include "jinja_mutator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <set>
#include <string>

#include "chat/template.h"
#include "core/error.h"

namespace moex::fuzz {
namespace {

// A ChatML template in the style of the corpus (Qwen2.5's loop, simplified).
constexpr const char* kChatMl =
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}"
    "{%- if message.content is string %}{{- message.content }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

TEST(JinjaMutator, SegmentsJoinBackToTheTemplate) {
  const char* const cases[] = {kChatMl, "", "plain text", "{{ x }}", "a{{ x }}b{% if y %}c{% endif %}",
                               "{# c #}{{", "{{ unclosed", "{% a %}{%", "}}{{}}%}{%%}", "{{ '}}' }}"};
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    const std::vector<JinjaSegment> segs = split_jinja(c);
    EXPECT_EQ(join_jinja(segs), c);
  }
  const std::vector<JinjaSegment> segs = split_jinja("a{{ x }}{% if y %}{# z #}");
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[0].kind, JinjaSegment::kText);
  EXPECT_EQ(segs[1].kind, JinjaSegment::kExpression);
  EXPECT_EQ(segs[2].kind, JinjaSegment::kStatement);
  EXPECT_EQ(segs[3].kind, JinjaSegment::kComment);
}

TEST(JinjaMutator, OutputsFitTheSizeAndDependOnlyOnTheSeed) {
  std::set<std::string> distinct;
  for (uint32_t seed = 0; seed < 3000; ++seed) {
    const size_t max_size = seed % 2 ? 4096 : 32768;
    const std::string m = mutate_jinja(kChatMl, seed, max_size);
    ASSERT_LE(m.size(), max_size) << seed;
    ASSERT_EQ(m, mutate_jinja(kChatMl, seed, max_size)) << seed;
    distinct.insert(m);
    const std::string x = cross_jinja(kChatMl, m, seed, max_size);
    ASSERT_LE(x.size(), max_size) << seed;
  }
  // Not a handful of outputs repeated: the seed reaches many shapes.
  EXPECT_GT(distinct.size(), 1000u);
}

// The fuzz target's input framing: empty inputs (libFuzzer hands these to the custom crossover;
// copying from their null data was the UBSan finding of CI on 2026-12-04), a context after the
// NUL kept byte for byte, and a context larger than the room gives an empty result.
TEST(JinjaMutator, InputsKeepTheirContextAndEmptyInputsAreValid) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    EXPECT_LE(cross_inputs(std::string_view(), std::string_view(), seed, 64).size(), 64u);
    EXPECT_LE(mutate_input(std::string_view(), seed, 64).size(), 64u);
    EXPECT_LE(cross_inputs(std::string_view(), kChatMl, seed, 4096).size(), 4096u);
  }
  const std::string context = std::string(1, '\0') + R"({"messages": []})";
  const std::string input = kChatMl + context;
  for (uint32_t seed = 0; seed < 500; ++seed) {
    const std::string m = mutate_input(input, seed, 8192);
    ASSERT_LE(m.size(), 8192u);
    ASSERT_GE(m.size(), context.size());
    EXPECT_EQ(m.substr(m.size() - context.size()), context) << seed;
    const std::string x = cross_inputs(input, m, seed, 8192);
    ASSERT_LE(x.size(), 8192u);
    EXPECT_EQ(x.substr(x.size() - context.size()), context) << seed;
  }
  EXPECT_EQ(mutate_input(input, 1, context.size() - 1), "");
  EXPECT_EQ(cross_inputs(input, input, 1, context.size() - 1), "");
}

// Mutations applied in a row (as a fuzzing campaign stacks them) from the ChatML template reach
// the limits that stop the shapes of issue #32: chains past the parser's expression depth,
// blocks past the nesting depth, values past the value depth, and runaway work or output.
TEST(JinjaMutator, StackedMutationsReachTheInterpretersLimits) {
  const std::regex limit_name("kMax[A-Za-z]+");
  std::set<std::string> reached;
  nlohmann::ordered_json context = {
      {"messages", {{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}, {"content", "ok"}}}},
      {"add_generation_prompt", true}};
  for (uint32_t run = 0; run < 1000; ++run) {
    std::string t = kChatMl;
    for (uint32_t step = 0; step < 3; ++step) t = mutate_jinja(t, run * 7919 + step, 32768);
    std::string error;
    try {
      const chat::Template tmpl = chat::Template::parse(t, "mutated.jinja");
      (void)tmpl.render(context);
    } catch (const Error& e) {
      error = e.what();
    }
    for (std::sregex_iterator it(error.begin(), error.end(), limit_name), end; it != end; ++it)
      reached.insert(it->str());
  }
  std::string names;
  for (const std::string& n : reached) names += n + " ";
  for (const char* want : {"kMaxExpressionDepth", "kMaxNestingDepth", "kMaxValueDepth"})
    EXPECT_TRUE(reached.count(want)) << "not reached: " << want << "; reached: " << names;
  EXPECT_GE(reached.size(), 4u) << names;
}

}  // namespace
}  // namespace moex::fuzz
