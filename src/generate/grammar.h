// Structured output: a grammar (any JSON object, a JSON schema, a regular expression, a choice
// of strings) compiled against the model's vocabulary and applied as a logits processor that
// masks every token the grammar cannot take next. The engine is xgrammar's C++ core, built
// when its sources are fetched (scripts/fetch_xgrammar.sh); without it available() is false.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "generate/logits_processors.h"

namespace moex::generate {

enum class GrammarKind { kJsonObject, kJsonSchema, kRegex, kChoice, kEbnf, kStructuralTag };

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string text;  // kJsonSchema: the schema's JSON text; kRegex: the pattern; kEbnf: the
                     // grammar (GBNF-style EBNF, its start rule `root`); kStructuralTag:
                     // xgrammar's structural tag JSON (tool_call_grammar.h builds it)
  std::vector<std::string> choices;  // kChoice: the output is exactly one of these
  // kStructuralTag: the stop ids that may end the output once the grammar is complete (each
  // one of the engine's); empty: all of the engine's. gpt-oss's calls end with <|call|>, not
  // its other stop ids (tool_call_grammar.h).
  std::vector<TokenId> end_ids;
};

// A grammar compiled for one vocabulary; shared by the requests that use it (immutable).
class Grammar {
 public:
  virtual ~Grammar() = default;
  // A fresh matcher at the grammar's start, as a processor: apply() sets the logit of every
  // token the grammar cannot take next to -inf (once the grammar is complete only the stop
  // ids remain); accept() advances it (moex::Error for a token the grammar refuses).
  virtual std::unique_ptr<LogitsProcessor> processor() const = 0;
};

// One per served model: the vocabulary given to the engine and a compiler (with a cache of
// compiled grammars). Thread-safe: compile() may run on several request threads at once.
class GrammarEngine {
 public:
  // False when this build has no grammar engine (moex built without xgrammar).
  static bool available();
  // The engine's name and version ("xgrammar 0.2.9"), or "" without one.
  static const char* engine_name();

  // token_bytes[i]: the raw bytes of token i; "" for a special token or an unused id (never
  // allowed by a grammar). stop_ids: the ids that end the output once the grammar is
  // complete. Throws moex::Error without an engine or for an empty vocabulary.
  GrammarEngine(const std::vector<std::string>& token_bytes, std::vector<TokenId> stop_ids);
  ~GrammarEngine();
  GrammarEngine(const GrammarEngine&) = delete;
  GrammarEngine& operator=(const GrammarEngine&) = delete;

  // Throws moex::Error saying what is wrong with the grammar (an invalid schema or pattern,
  // an unsatisfiable schema). Bound the input first (grammar_limits.h): compiling takes time
  // and memory in proportion to it.
  std::shared_ptr<const Grammar> compile(const GrammarSpec& spec) const;

  int64_t vocab() const;
  // Whether a grammar can ever allow token `id` (false for an id given as "": a special token
  // or an unused id).
  bool writes(TokenId id) const;
  // Whether `id` is one of the stop ids (never text to a grammar, even when given as text).
  bool stops(TokenId id) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace moex::generate
