// Structured output in requests: response_format (json_object, json_schema) and vLLM's
// guided_json / guided_regex / guided_choice parsed into a GrammarSpec, bounded before it is
// compiled (size, depth, $ref cycles, repetition counts), and compiled with the served
// model's grammar engine; every refusal an ApiError naming the field.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "generate/grammar.h"
#include "tokenizer/tokenizer.h"

namespace moex::serve {

// Bounds on what is compiled: the grammar engine's time and memory grow with them.
inline constexpr size_t kMaxSchemaBytes = 32 * 1024;  // the schema's JSON text
inline constexpr int kMaxSchemaDepth = 24;            // nested JSON objects/arrays in it
inline constexpr int64_t kMaxSchemaRepeat = 1024;     // minItems, maxLength, ... values
inline constexpr size_t kMaxSchemaNodes = 20000;      // subschemas visited, through $refs
// Regular expressions and EBNF compile in time that grows faster than their size: 50
// consecutive `(a|b|c|d)*` took 0.85 s as a 500-byte regex and 0.93 s as a 1.2 KiB grammar,
// 80 of them 2.8 s as a 2 KiB grammar, 200 20 s as a regex, on a 151,936-token vocabulary
// (bench/grammar_mask_bench, 2026-12-03; docs/serve.md). A 29.5 KB schema of 150 objects
// without patterns took 0.17 s.
inline constexpr size_t kMaxRegexBytes = 512;         // guided_regex and each pattern
inline constexpr size_t kMaxPatternBytes = 1024;      // all patterns of one schema together
inline constexpr size_t kMaxGrammarBytes = 1024;      // guided_grammar / grammar
inline constexpr size_t kMaxChoices = 256, kMaxChoiceBytes = 1024;

struct GrammarField {
  std::string field;  // the request field it came from ("response_format", "guided_regex")
  generate::GrammarSpec spec;
};

// Each returns the spec, or nullopt for response_format {"type": "text"}.
std::optional<GrammarField> parse_response_format(const nlohmann::ordered_json& v);
GrammarField parse_guided_json(const nlohmann::ordered_json& v);
GrammarField parse_guided_regex(const nlohmann::ordered_json& v);
GrammarField parse_guided_choice(const nlohmann::ordered_json& v);
// vLLM's guided_grammar and llama-server's grammar: EBNF text (GBNF syntax), start rule root.
GrammarField parse_grammar(const std::string& field, const nlohmann::ordered_json& v);

// Throws ApiError naming `field` when the schema passes a bound above, holds a $ref that is
// not local ("#...") or does not resolve, or refers to itself (directly or through others).
void check_schema(const nlohmann::json& schema, const std::string& field);

// Compiles with `engine` (null: this build has no grammar engine: a 400 saying so).
std::shared_ptr<const generate::Grammar> compile_grammar(const GrammarField& g,
                                                         const generate::GrammarEngine* engine);

// The vocabulary given to the grammar engine: each id's raw bytes, "" for special tokens and
// for ids past the tokenizer's (the model's vocabulary may be larger). A special token whose
// text is one of `markers` (request_tools.h: grammar_markers) is given that text, so that a
// grammar can write it where the marker's text goes (GLM-4.5's <arg_key>, for one).
std::vector<std::string> grammar_vocabulary(const Tokenizer& tok, int64_t vocab,
                                            const std::vector<std::string>& markers = {});

}  // namespace moex::serve
