// The calls of the XML tool-call formats (qwen3_coder, glm45, minimax_m2) as xgrammar
// structural-tag pieces whose parameter values are exactly what tool_call_formats.cc reads
// back: a text parameter's value is raw text that cannot close the call early (and, for
// minimax_m2, whose parser trims values, has no whitespace at either end); any other
// parameter's value is JSON following its schema. Parameters come in the schema's order,
// required ones always, optional ones at most once, unknown ones never.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/tool_call_grammar.h"

namespace moex::generate {

bool is_xml_tool_call_format(ToolCallFormat f);

// One call to `t` in format `f` (a "tag" of the structural tag). Throws moex::Error naming the
// tool and parameter for what the format cannot carry exactly (a name with '<' or '>', a
// text parameter with a length, pattern or format bound, a parameter whose schema neither
// is a string nor names a JSON type, ...).
nlohmann::ordered_json xml_call_tag(ToolCallFormat f, const GrammarTool& t);

// EBNF (start rule `root`) of any text containing none of `avoid` (non-empty printable ASCII
// strings without whitespace), with `trimmed` also neither starting nor ending with whitespace
// (as marker_text.h's trim() reads it), then `close` (the value's closing markup).
std::string ebnf_text_avoiding(const std::vector<std::string>& avoid, bool trimmed,
                               const std::string& close);

}  // namespace moex::generate
