// Structured-output request fields into a bounded, compiled grammar (see structured_output.h).
#include "serve/structured_output.h"

#include "core/error.h"
#include "serve/api_error.h"

namespace moex::serve {
namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
  bad_request(field, str_cat("'", field, "' ", why));
}

std::string schema_text(const ojson& schema, const std::string& field) {
  if (!schema.is_object()) refuse(field, "must be a JSON schema (an object)");
  std::string text = schema.dump();
  if (text.size() > kMaxSchemaBytes)
    refuse(field, str_cat("is ", text.size(), " bytes of JSON; at most ", kMaxSchemaBytes,
                          " are taken"));
  check_schema(nlohmann::json::parse(text), field);
  return text;
}

// Keywords whose integer value sets a repetition count the grammar unrolls.
const char* const kRepeatKeys[] = {"minItems", "maxItems", "minLength", "maxLength",
                                   "minProperties", "maxProperties", "minContains",
                                   "maxContains"};

struct SchemaWalk {
  const nlohmann::json& root;
  const std::string& field;
  size_t nodes = 0, pattern_bytes = 0;
  std::vector<std::string> refs;  // the $refs being expanded, outermost first

  void visit(const nlohmann::json& v, int depth) {
    if (++nodes > kMaxSchemaNodes)
      refuse(field, str_cat("is too large: more than ", kMaxSchemaNodes,
                            " subschemas once its $refs are followed"));
    if (depth > kMaxSchemaDepth)
      refuse(field, str_cat("nests deeper than ", kMaxSchemaDepth, " levels"));
    if (v.is_array()) {
      for (const auto& x : v) visit(x, depth + 1);
      return;
    }
    if (!v.is_object()) return;
    for (const char* k : kRepeatKeys) {
      const auto it = v.find(k);
      if (it != v.end() && it->is_number() && it->get<double>() > double(kMaxSchemaRepeat))
        refuse(field, str_cat("has ", k, " ", it->dump(), "; at most ", kMaxSchemaRepeat,
                              " is taken"));
    }
    const auto pattern = v.find("pattern");
    if (pattern != v.end() && pattern->is_string()) {
      const size_t n = pattern->get_ref<const std::string&>().size();
      if (n > kMaxRegexBytes)
        refuse(field, str_cat("has a pattern of more than ", kMaxRegexBytes, " bytes"));
      if ((pattern_bytes += n) > kMaxPatternBytes)
        refuse(field, str_cat("has more than ", kMaxPatternBytes, " bytes of patterns in all"));
    }
    const auto ref = v.find("$ref");
    if (ref != v.end()) follow(*ref, depth);
    for (const auto& [key, x] : v.items())
      if (x.is_structured()) visit(x, depth + 1);
  }

  void follow(const nlohmann::json& ref, int depth) {
    if (!ref.is_string()) refuse(field, "has a $ref that is not a string");
    const std::string& r = ref.get_ref<const std::string&>();
    if (r.empty() || r[0] != '#')
      refuse(field, str_cat("has $ref \"", r, "\": only references inside the schema (\"#/...\")"
                                              " are taken"));
    for (const std::string& open : refs)
      if (open == r)
        refuse(field, str_cat("is recursive: $ref \"", r, "\" refers to itself",
                              refs.size() > 1 ? " through other $refs" : "",
                              " (recursive schemas are not taken)"));
    const nlohmann::json* target = nullptr;
    try {
      const nlohmann::json::json_pointer ptr(r.substr(1));
      if (root.contains(ptr)) target = &root.at(ptr);
    } catch (const nlohmann::json::exception&) {
    }
    if (target == nullptr) refuse(field, str_cat("has $ref \"", r, "\" that names nothing in it"));
    refs.push_back(r);
    visit(*target, depth + 1);
    refs.pop_back();
  }
};

}  // namespace

void check_schema(const nlohmann::json& schema, const std::string& field) {
  SchemaWalk w{schema, field, 0, 0, {}};
  w.visit(schema, 0);
}

std::optional<GrammarField> parse_response_format(const ojson& v) {
  const std::string k = "response_format";
  if (!v.is_object()) refuse(k, "must be an object");
  const auto t = v.find("type");
  if (t == v.end() || !t->is_string()) refuse(k + ".type", "must be a string");
  const std::string& type = t->get_ref<const std::string&>();
  for (const auto& [key, x] : v.items())
    if (key != "type" && !(key == "json_schema" && type == "json_schema"))
      refuse(k + "." + key, str_cat("is not taken with type \"", type, "\""));
  if (type == "text") return std::nullopt;
  if (type == "json_object")
    return GrammarField{k, {generate::GrammarKind::kJsonObject, "", {}, {}}};
  if (type != "json_schema")
    refuse(k + ".type", str_cat("must be \"text\", \"json_object\" or \"json_schema\", got \"",
                                type, "\""));
  const std::string js = k + ".json_schema";
  const auto j = v.find("json_schema");
  if (j == v.end() || !j->is_object()) refuse(js, "must be an object with a \"schema\"");
  for (const auto& [key, x] : j->items()) {
    const std::string f = js + "." + key;
    if (key == "name" || key == "description") {
      if (!x.is_string()) refuse(f, "must be a string");
    } else if (key == "strict") {
      // Outputs always validate against the schema (properties it does not list are not
      // generated), so strict true and false constrain alike.
      if (!x.is_boolean() && !x.is_null()) refuse(f, "must be a boolean");
    } else if (key != "schema") {
      refuse(f, "is not a field of json_schema (name, description, schema, strict)");
    }
  }
  const auto s = j->find("schema");
  if (s == j->end()) refuse(js + ".schema", "is required");
  return GrammarField{
      js + ".schema",
      {generate::GrammarKind::kJsonSchema, schema_text(*s, js + ".schema"), {}, {}}};
}

GrammarField parse_guided_json(const ojson& v) {
  const std::string k = "guided_json";
  if (v.is_string()) {  // vLLM takes the schema as JSON text too
    const std::string& text = v.get_ref<const std::string&>();
    if (text.size() > kMaxSchemaBytes)
      refuse(k, str_cat("is ", text.size(), " bytes; at most ", kMaxSchemaBytes, " are taken"));
    const ojson parsed = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) refuse(k, "is a string but not JSON");
    return {k, {generate::GrammarKind::kJsonSchema, schema_text(parsed, k), {}, {}}};
  }
  return {k, {generate::GrammarKind::kJsonSchema, schema_text(v, k), {}, {}}};
}

GrammarField parse_guided_regex(const ojson& v) {
  const std::string k = "guided_regex";
  if (!v.is_string()) refuse(k, "must be a string");
  const std::string& r = v.get_ref<const std::string&>();
  if (r.empty()) refuse(k, "must not be empty");
  if (r.size() > kMaxRegexBytes)
    refuse(k, str_cat("is ", r.size(), " bytes; at most ", kMaxRegexBytes, " are taken"));
  return {k, {generate::GrammarKind::kRegex, r, {}, {}}};
}

GrammarField parse_guided_choice(const ojson& v) {
  const std::string k = "guided_choice";
  if (!v.is_array() || v.empty()) refuse(k, "must be a non-empty array of strings");
  if (v.size() > kMaxChoices) refuse(k, str_cat("holds at most ", kMaxChoices, " strings"));
  GrammarField g{k, {generate::GrammarKind::kChoice, "", {}, {}}};
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = str_cat(k, "[", i, "]");
    if (!v[i].is_string()) refuse(f, "must be a string");
    const std::string& c = v[i].get_ref<const std::string&>();
    if (c.empty() || c.size() > kMaxChoiceBytes)
      refuse(f, str_cat("must hold 1 to ", kMaxChoiceBytes, " bytes"));
    g.spec.choices.push_back(c);
  }
  return g;
}

GrammarField parse_grammar(const std::string& k, const ojson& v) {
  if (!v.is_string()) refuse(k, "must be a string (an EBNF grammar with a rule 'root')");
  const std::string& g = v.get_ref<const std::string&>();
  if (g.empty()) refuse(k, "must not be empty");
  if (g.size() > kMaxGrammarBytes)
    refuse(k, str_cat("is ", g.size(), " bytes; at most ", kMaxGrammarBytes, " are taken"));
  return {k, {generate::GrammarKind::kEbnf, g, {}, {}}};
}

std::shared_ptr<const generate::Grammar> compile_grammar(const GrammarField& g,
                                                         const generate::GrammarEngine* engine) {
  if (engine == nullptr)
    refuse(g.field, "is not supported by this server: this build of moex has no grammar engine "
                    "(it was built without xgrammar: run scripts/fetch_xgrammar.sh and rebuild)");
  try {
    return engine->compile(g.spec);
  } catch (const Error& e) {
    refuse(g.field, str_cat("cannot be compiled into a grammar: ", e.what()));
  }
}

std::vector<std::string> grammar_vocabulary(const Tokenizer& tok, int64_t vocab,
                                            const std::vector<std::string>& markers) {
  std::vector<std::string> out(static_cast<size_t>(vocab));
  const int64_t n = std::min<int64_t>(vocab, tok.vocab_size());
  for (int64_t i = 0; i < n; ++i)
    if (!tok.is_special(int32_t(i))) out[size_t(i)] = tok.token_bytes(int32_t(i));
  for (const std::string& m : markers)
    if (const std::optional<int32_t> id = tok.token_to_id(m); id && *id < n && tok.is_special(*id))
      out[size_t(*id)] = m;
  return out;
}

}  // namespace moex::serve
