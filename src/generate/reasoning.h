// Reasoning in a model's output: <think>...</think> (Qwen3, DeepSeek-R1 and V3.1, GLM-4.5,
// MiniMax-M2) split from the answer as reasoning events, as llama-server's
// --reasoning-format deepseek and vLLM's reasoning parsers give `reasoning_content`.
#pragma once

#include <memory>
#include <string_view>

#include "generate/output_parser.h"

namespace moex::generate {

enum class ReasoningFormat {
  kNone,     // no split: thinking stays in the content
  kThink,    // <think>...</think>
  kHarmony,  // gpt-oss: the analysis channel (parsed with the tool calls, harmony.h)
};
const char* reasoning_format_name(ReasoningFormat f);
ReasoningFormat detect_reasoning_format(std::string_view template_source);

// True when the prompt leaves the model inside its thinking: the generation prompt ends with
// an open <think> (DeepSeek-R1, Qwen3 thinking-2507, GLM-4.5), so the output starts in reasoning.
bool prompt_opens_thinking(std::string_view prompt_text);

// <think>...</think> at the start of the output (after whitespace), or from the first byte when
// `open`: the text inside is reasoning, the text after it content (its leading newlines
// dropped). Thinking never closed stays reasoning.
std::unique_ptr<OutputParser> make_think_parser(bool open);

}  // namespace moex::generate
