// Strict JSON text parsing shared by config.json / index readers (io) and tokenizer.json (tok):
// a NUL byte, nesting past a bound or (optionally) a repeated key is an error naming the file
// (and, for a repeated key, the key and the object that holds it).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moex {

struct JsonTextRules {
  int max_depth = 64;                 // containers open at once
  bool reject_duplicate_keys = true;  // nlohmann would silently keep the last one
  // With reject_duplicate_keys: only objects at this nesting depth or shallower are checked
  // (1: the top-level object; 2: the objects directly in it). Deeper ones may repeat a key,
  // the last one kept, as the file's own readers do (a tokenizer's vocab map).
  int duplicate_keys_max_depth = 1 << 30;
};

// Checks the structure in a first pass that builds nothing (nlohmann's callback parser does
// the same checks while building, but rescans the enclosing object at the end of every nested
// one: quadratic, minutes for a 200,000-tensor safetensors header), then parses. Throws
// moex::Error naming `file`.
nlohmann::json parse_json_text_strict(std::string_view text, const std::string& file,
                                      const JsonTextRules& rules);

}  // namespace moex
