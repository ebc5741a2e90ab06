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
    try {
      (void)t.render(context);
    } catch (const moex::Error&) {
    }
    moex::chat::ChatTemplateArgs args;
    args.messages = default_messages();
    args.add_generation_prompt = true;
    args.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    (void)moex::chat::apply_chat_template(t, args);
  } catch (const moex::Error&) {
  }
  return 0;
}

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// The template part of an input (up to its first NUL) and the rest, NUL included.
std::pair<std::string_view, std::string_view> template_and_rest(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  if (nul == std::string_view::npos) return {all, {}};
  return {all.substr(0, nul), all.substr(nul)};
}

size_t write_input(uint8_t* out, const std::string& tmpl, std::string_view rest) {
  std::memcpy(out, tmpl.data(), tmpl.size());
  std::memmove(out + tmpl.size(), rest.data(), rest.size());
  return tmpl.size() + rest.size();
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  if (seed % 3 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const auto [tmpl, rest_view] = template_and_rest(data, size);
  const std::string rest(rest_view);  // data is rewritten below
  if (rest.size() >= max_size) return LLVMFuzzerMutate(data, size, max_size);
  const std::string m = moex::fuzz::mutate_jinja(tmpl, seed / 3, max_size - rest.size());
  return write_input(data, m, rest);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t max_out_size, unsigned int seed) {
  const auto [t1, rest1] = template_and_rest(data1, size1);
  const auto [t2, rest2] = template_and_rest(data2, size2);
  (void)rest2;
  if (rest1.size() >= max_out_size) return 0;
  const std::string m = moex::fuzz::cross_jinja(t1, t2, seed, max_out_size - rest1.size());
  std::memcpy(out, m.data(), m.size());
  std::memcpy(out + m.size(), rest1.data(), rest1.size());
  return m.size() + rest1.size();
}
