// The template lexer: splits source into data and tag tokens with jinja2's whitespace rules
// as transformers configures them (trim_blocks, lstrip_blocks, -/+ modifiers, newline
// normalization, the single trailing newline dropped), dropping comments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moex::chat {

enum class Tok {
  kData,        // literal text (value: the text)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // value: the unescaped string
  kInt,     // value: the digits (underscores removed)
  kFloat,
  kOp,  // value: the operator text
  kEof,
};

struct Token {
  Tok type;
  std::string value;
  int line = 1;
  int col = 1;  // in characters (code points), from 1
};

// Tokens of `source`, ending with kEof. moex::Error "origin:line:col: ..." for an unclosed tag,
// comment, string or raw block, and for unbalanced brackets inside a tag.
std::vector<Token> tokenize(std::string_view source, const std::string& origin);

// "origin:line:col: what" as every template error reads.
std::string located(const std::string& origin, int line, int col, const std::string& what);

}  // namespace moex::chat
