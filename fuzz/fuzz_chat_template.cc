// Fuzz target: a chat template through chat::Template::parse and render, as a checkpoint's
// tokenizer_config.json or chat_template.jinja would bring it. Input: template [NUL context],
// the context a JSON object of template variables (a default conversation when absent or not
// an object). Every failure must be a moex::Error naming the template; the interpreter's
// limits (src/chat/limits.h) must stop every loop, recursion and output growth.
// Mutation is structure-aware (jinja_mutator.h): two in three mutations rework the template's
// tags and expressions (long chains, deep nesting, self-referencing values, hostile sizes), the
// third is libFuzzer's own byte-level mutation with the Jinja dictionary.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/limits.h"
#include "chat/template.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "jinja_mutator.h"

namespace {

nlohmann::ordered_json default_messages() {
  return nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi \u00e9t\u00e9 <|im_end|>"},
    {"role": "assistant", "content": "Hello", "tool_calls": [
      {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
    {"role": "tool", "content": "42"},
    {"role": "user", "content": "Thanks"}])");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = moex::fuzz::split_at_nul(data, size, 2);
  nlohmann::ordered_json context = nlohmann::ordered_json::parse(
      parts.size() > 1 ? parts[1] : std::string_view("{}"), nullptr, false);
  if (!context.is_object()) context = nlohmann::ordered_json::object();
  if (!context.contains("messages")) context["messages"] = default_messages();
  try {
    const moex::chat::Template t = moex::chat::Template::parse(parts[0], "fuzz.jinja");
    // An eighth of the full budget: under ASan + UBSan a full one takes 5-8 s per render
    // (0.4-0.7 s in Release), and two renders of it pass libFuzzer's 10 s timeout, which is
    // there to catch work the budget does not count.
    moex::chat::RenderOptions options;
    options.max_work = moex::chat::kMaxRenderWork / 8;
    try {
      (void)t.render(context, options);
    } catch (const moex::Error&) {
    }
    moex::chat::ChatTemplateArgs args;
    args.messages = default_messages();
    args.add_generation_prompt = true;
    args.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    (void)moex::chat::apply_chat_template(t, args, options);
  } catch (const moex::Error&) {
  }
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// Copies a mutator's result into libFuzzer's buffer; an empty result leaves the buffer alone.
size_t emit(const std::string& input, uint8_t* out) {
  if (!input.empty()) std::memcpy(out, input.data(), input.size());
  return input.size();
}

std::string_view as_view(const uint8_t* data, size_t size) {
  return size == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (seed % 3 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const std::string m = moex::fuzz::mutate_input(as_view(data, size), seed / 3, max_size);
  if (m.empty()) return LLVMFuzzerMutate(data, size, max_size);
  return emit(m, data);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
  return emit(moex::fuzz::cross_inputs(as_view(data1, size1), as_view(data2, size2), seed,
                                       max_out_size),
              out);
}
