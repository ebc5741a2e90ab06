// The XML tool-call formats' calls as structural-tag pieces (see xml_tool_grammar.h). Each
// format's text is the one its template writes (llama.cpp's corpus: Qwen3-Coder, GLM-4.6,
// MiniMax-M2, rendered with trim_blocks as transformers renders them) and its parser in
// tool_call_formats.cc reads. Text values are an EBNF automaton of our own (xgrammar's
// qwen_xml / minimax_xml styles let whitespace around a string that the parsers keep).
#include "generate/xml_tool_grammar.h"

#include <cstdio>
#include <deque>
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "generate/ebnf_text.h"
#include "generate/marker_text.h"

namespace moex::generate {
namespace {

using ojson = nlohmann::ordered_json;

// How a format writes one call: begin = call_open + name + call_name_end; each parameter
// key_open + key + key_close, its value, value_close; then call_end. `avoid`: what a value
// must not contain (its parser would end the value, call or block there). `trimmed`: the
// parser trims values.
struct XmlSyntax {
  const char* format;
  std::string call_open, call_name_end, call_end;
  std::string key_open, key_close, value_close;
  std::vector<std::string> avoid;
  bool trimmed;
};

const XmlSyntax& syntax(ToolCallFormat f) {
  // <tool_call>\n<function=N>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call>
  static const XmlSyntax qwen{"qwen3_coder", "<tool_call>\n<function=", ">\n",
                              "</function>\n</tool_call>", "<parameter=", ">\n",
                              "\n</parameter>\n", {"</parameter>", "</function>", "</tool_call>"},
                              false};
  // <tool_call>N\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>
  static const XmlSyntax glm{"glm45", "<tool_call>", "\n", "</tool_call>", "<arg_key>",
                             "</arg_key>\n<arg_value>", "</arg_value>\n",
                             {"</arg_value>", "</tool_call>"}, false};
  // <invoke name="N">\n<parameter name="K">V</parameter>\n</invoke>\n (inside the block)
  static const XmlSyntax minimax{"minimax_m2", "<invoke name=\"", "\">\n", "</invoke>\n",
                                 "<parameter name=\"", "\">", "</parameter>\n",
                                 {"</parameter>", "</invoke>", "</minimax:tool_call>"}, true};
  switch (f) {
    case ToolCallFormat::kQwen3Coder: return qwen;
    case ToolCallFormat::kGlm45: return glm;
    case ToolCallFormat::kMiniMaxM2: return minimax;
    default: fail("tool-call format '", tool_call_format_name(f), "' is not an XML format");
  }
}

// A character class of `chars` (negated with `negate`), every member escaped. A negated class
// leaves out the UTF-16 surrogates too: xgrammar reads their 3-byte encodings as characters,
// but they are not UTF-8 (a tokenizer's decoding never gives them back).
std::string char_class(const std::set<char>& chars, bool negate) {
  std::string out = negate ? "[^\\ud800-\\udfff" : "[";
  for (char c : chars) out += ebnf_escape(static_cast<unsigned char>(c));
  return out + "]";
}

const std::set<char> kSpace = {' ', '\t', '\n', '\r'};  // marker_text.cc's is_space

// Rules `start` ::= the text of ebnf_text_avoiding, then `close`; other rules named start_*.
// The states of an Aho-Corasick automaton over `avoid`: a rule per trie node that is no whole
// avoided string, the root split in two with `trimmed` (after whitespace the text may not
// end). The close is part of the rules because xgrammar 0.2.9 lets such a grammar end in a
// state with no empty alternative (after whitespace) when its end is the grammar's end; a
// literal to read there instead is refused as it should be (tool_call_grammar_test).
std::string text_rules(const std::vector<std::string>& avoid, bool trimmed,
                       const std::string& start, const std::string& close) {
  std::vector<std::map<char, int>> child(1);
  std::vector<bool> whole(1, false);
  std::set<char> sigma;
  for (const std::string& s : avoid) {
    if (s.empty()) fail("an avoided string is empty");
    int q = 0;
    for (char c : s) {
      if (kSpace.count(c) || static_cast<unsigned char>(c) >= 0x80 || c < 0x20)
        fail("avoided strings are printable ASCII without whitespace");
      sigma.insert(c);
      if (!child[size_t(q)].count(c)) {
        child[size_t(q)][c] = int(child.size());
        child.emplace_back();
        whole.push_back(false);
      }
      q = child[size_t(q)][c];
    }
    whole[size_t(q)] = true;
  }
  // delta[q][c]: the longest suffix of (q's prefix + c) that is a trie node.
  std::vector<std::map<char, int>> delta(child.size());
  std::vector<int> link(child.size(), 0);
  std::deque<int> queue = {0};
  while (!queue.empty()) {
    const int q = queue.front();
    queue.pop_front();
    if (q != 0 && whole[size_t(link[size_t(q)])]) whole[size_t(q)] = true;
    for (char c : sigma) {
      const auto it = child[size_t(q)].find(c);
      if (it == child[size_t(q)].end()) {
        delta[size_t(q)][c] = q == 0 ? 0 : delta[size_t(link[size_t(q)])][c];
        continue;
      }
      link[size_t(it->second)] = q == 0 ? 0 : delta[size_t(link[size_t(q)])][c];
      delta[size_t(q)][c] = it->second;
      queue.push_back(it->second);
    }
  }
  const std::string after_text = start + "_a", after_space = start + "_b";
  auto name = [&](int q) { return q == 0 ? after_text : start + "_s" + std::to_string(q); };
  std::set<char> other = sigma;
  if (trimmed) other.insert(kSpace.begin(), kSpace.end());
  // The alternatives that read one more character from trie node `q`.
  auto steps = [&](int q, bool space_allowed) {
    std::string alts;
    for (char c : sigma) {
      const int v = delta[size_t(q)][c];
      if (!whole[size_t(v)]) alts += " | " + ebnf_literal(std::string(1, c)) + " " + name(v);
    }
    alts += " | " + char_class(other, true) + " " + after_text;
    if (trimmed && space_allowed) alts += " | " + char_class(kSpace, false) + " " + after_space;
    return alts;
  };
  const std::string end = ebnf_literal(close);
  std::string rules = start + " ::= " + end + steps(0, /*space_allowed=*/!trimmed) + "\n";
  rules += after_text + " ::= " + end + steps(0, true) + "\n";
  if (trimmed) rules += after_space + " ::= " + steps(0, true).substr(3) + "\n";
  for (size_t q = 1; q < child.size(); ++q)
    if (!whole[q]) rules += name(int(q)) + " ::= " + end + steps(int(q), true) + "\n";
  return rules;
}

ojson const_string(std::string s) { return {{"type", "const_string"}, {"value", std::move(s)}}; }

ojson grammar(std::string ebnf) { return {{"type", "grammar"}, {"grammar", std::move(ebnf)}}; }

ojson sequence(std::vector<ojson> elements) {
  if (elements.empty()) return const_string("");
  if (elements.size() == 1) return std::move(elements[0]);
  return {{"type", "sequence"}, {"elements", std::move(elements)}};
}

// A function or parameter name the parser reads back as written: no markup, no control
// characters, no whitespace at its ends.
void check_name(const XmlSyntax& s, const std::string& what, const std::string& n) {
  bool ok = !n.empty() && trim(n) == n;
  for (const unsigned char c : n) ok = ok && c >= 0x20 && c != '<' && c != '>' && c != '"';
  if (!ok)
    fail(what, " cannot be written in the ", s.format, " format (a name there has no '<', '>', "
         "'\"', control characters or whitespace at its ends)");
}

// Keywords that say nothing about a text value.
bool is_annotation(const std::string& k) {
  static const std::set<std::string> kNotes = {"description", "title",      "default",
                                               "examples",    "$comment",   "deprecated",
                                               "readOnly",    "writeOnly"};
  return kNotes.count(k) > 0;
}

// A value read as text (ToolSchemas::value: the property's `type` is "string" or not one
// name), with the close after it: the literals of enum / const, else any text the parser
// reads back unchanged.
ojson text_value(const XmlSyntax& s, const ojson& prop, const std::string& where) {
  const ojson any_text = grammar(text_rules(s.avoid, s.trimmed, "root", s.value_close));
  if (prop.is_boolean()) {
    if (!prop.get<bool>()) fail(where, " is false: no value is valid");
    return any_text;
  }
  if (!prop.is_object()) fail(where, " must be a schema object");
  std::optional<std::vector<std::string>> literals;  // enum and const together: both hold
  for (const auto& [k, v] : prop.items()) {
    if (is_annotation(k) || (k == "type" && v == "string")) continue;
    if (k == "enum" || k == "const") {
      const ojson list = k == "enum" ? v : ojson::array({v});
      if (!list.is_array() || list.empty()) fail(where, ".", k, " is empty or not an array");
      std::vector<std::string> these;
      for (const ojson& x : list) {
        if (!x.is_string())
          fail(where, ".", k, " has ", x.dump(), ", which the ", s.format,
               " parser would read as text, not as that value");
        if (!literals || std::count(literals->begin(), literals->end(), x.get<std::string>()))
          these.push_back(x.get<std::string>());
      }
      literals = std::move(these);
      continue;
    }
    fail(where, ": '", k, "' ", k == "type" ? "is not one JSON type name" : "bounds a text value",
         ", which moex cannot constrain in the ", s.format,
         " format (its parser reads such a value as raw text)");
  }
  if (!literals) return any_text;
  ojson choices = ojson::array();
  for (const std::string& t : *literals) {
    bool ok = !s.trimmed || trim(t) == t;
    for (const std::string& a : s.avoid) ok = ok && t.find(a) == std::string::npos;
    if (ok) choices.push_back(const_string(t + s.value_close));
  }
  if (choices.empty())
    fail(where, " allows no value that the ", s.format, " format can write as text");
  if (choices.size() == 1) return choices[0];
  return {{"type", "or"}, {"elements", std::move(choices)}};
}

// A value read as JSON (its `type` names a JSON type other than string). The root's $defs go
// with it, so that its "#/$defs/..." references resolve.
ojson json_value(const XmlSyntax& s, ojson prop, const ojson& root, const std::string& where) {
  for (const char* defs : {"$defs", "definitions"})
    if (root.contains(defs) && !prop.contains(defs)) prop[defs] = root[defs];
  check_schema_with_excludes(prop, where);
  return {{"type", "json_schema"}, {"json_schema", std::move(prop)}, {"style", "json"},
          {"max_whitespace_cnt", 1}, {"excludes", s.avoid}};
}

bool read_as_json(const ojson& prop) {
  return prop.is_object() && prop.contains("type") && prop["type"].is_string() &&
         prop["type"] != "string";
}

// Any parameters (a tool without strict under "auto"): keys without markup or whitespace,
// text values, as many as the model writes.
ojson any_arguments(const XmlSyntax& s) {
  return grammar("root ::= \"\" | param root\nparam ::= " + ebnf_literal(s.key_open) +
                 " key " + ebnf_literal(s.key_close) +
                 " value\nkey ::= [^\\u0000-\\u0020<>\"\\ud800-\\udfff]+\n" +
                 text_rules(s.avoid, s.trimmed, "value", s.value_close));
}

const std::set<std::string> kObjectKeys = {
    "type",        "properties", "required", "additionalProperties", "unevaluatedProperties",
    "description", "title",      "$defs",    "definitions",          "$schema",
    "$comment",    "strict"};

ojson arguments(const XmlSyntax& s, const GrammarTool& t) {
  if (t.parameters.empty()) return any_arguments(s);
  const std::string where = "the parameters of '" + t.name + "'";
  const ojson schema = ojson::parse(t.parameters);
  if (!schema.is_object()) fail(where, " are not a schema object");
  for (const auto& [k, v] : schema.items())
    if (!kObjectKeys.count(k))
      fail(where, ": '", k, "' is not constrained in the ", s.format,
           " format (its calls list parameters one by one)");
  if (schema.contains("type") && schema["type"] != "object")
    fail(where, " must be of type \"object\"");
  const ojson props = schema.value("properties", ojson::object());
  if (!props.is_object()) fail(where, ": 'properties' must be an object");
  std::set<std::string> required;
  for (const ojson& r : schema.value("required", ojson::array())) {
    if (!r.is_string() || !props.contains(r.get<std::string>()))
      fail(where, ": required ", r.dump(), " is not among its properties");
    required.insert(r.get<std::string>());
  }
  std::vector<ojson> elements;
  for (const auto& [key, prop] : props.items()) {
    const std::string pwhere = "parameter '" + key + "' of '" + t.name + "'";
    check_name(s, pwhere, key);
    ojson param = read_as_json(prop)
                      ? sequence({const_string(s.key_open + key + s.key_close),
                                  json_value(s, prop, schema, pwhere), const_string(s.value_close)})
                      : sequence({const_string(s.key_open + key + s.key_close),
                                  text_value(s, prop, pwhere)});
    elements.push_back(required.count(key) ? std::move(param)
                                           : ojson{{"type", "optional"}, {"content", param}});
  }
  return sequence(std::move(elements));
}

}  // namespace

bool is_xml_tool_call_format(ToolCallFormat f) {
  return f == ToolCallFormat::kQwen3Coder || f == ToolCallFormat::kGlm45 ||
         f == ToolCallFormat::kMiniMaxM2;
}

ojson xml_call_tag(ToolCallFormat f, const GrammarTool& t) {
  const XmlSyntax& s = syntax(f);
  check_name(s, "function '" + t.name + "'", t.name);
  return {{"type", "tag"}, {"begin", s.call_open + t.name + s.call_name_end},
          {"content", arguments(s, t)}, {"end", s.call_end}};
}

std::string ebnf_text_avoiding(const std::vector<std::string>& avoid, bool trimmed,
                               const std::string& close) {
  return text_rules(avoid, trimmed, "root", close);
}

}  // namespace moex::generate
