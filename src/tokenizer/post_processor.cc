// Post-processor parsing (see post_processor.h).
#include "tokenizer/post_processor.h"

namespace moex::tok {

namespace {

// ["<s>", 1] -> 1
int32_t token_pair_id(const Json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 2) fail(where, ": expected [\"token\", id]");
  as_string(j[0], index_path(where, 0));
  return static_cast<int32_t>(as_int(j[1], index_path(where, 1)));
}

void parse_template(const Json& j, const std::string& where, SpecialAffixes& out) {
  const std::string sw = field_path(where, "single");
  const Json& single = array_field(j, "single", where);
  const std::string tw = field_path(where, "special_tokens");
  const Json* specials = optional_field(j, "special_tokens");
  bool seen_sequence = false;
  SpecialAffixes a;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string iw = index_path(sw, i);
    const Json& item = require_object(single[i], iw);
    if (const Json* seq = optional_field(item, "Sequence")) {
      const std::string id = string_field(*seq, "id", field_path(iw, "Sequence"));
      if (id != "A") fail(field_path(iw, "Sequence.id"), ": expected \"A\" in the single template");
      seen_sequence = true;
    } else if (const Json* sp = optional_field(item, "SpecialToken")) {
      const std::string name = string_field(*sp, "id", field_path(iw, "SpecialToken"));
      if (specials == nullptr || !specials->contains(name)) {
        fail(tw, ": no entry for \"", name, "\" used by ", iw);
      }
      const std::string ew = str_cat(tw, "[\"", name, "\"]");
      const Json& ids = array_field((*specials)[name], "ids", ew);
      auto& dst = seen_sequence ? a.suffix : a.prefix;
      for (size_t k = 0; k < ids.size(); ++k) {
        dst.push_back(static_cast<int32_t>(as_int(ids[k], index_path(field_path(ew, "ids"), k))));
      }
    } else {
      fail(iw, ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!seen_sequence) fail(sw, ": the template has no {\"Sequence\": {\"id\": \"A\"}} item");
  out.prefix.insert(out.prefix.end(), a.prefix.begin(), a.prefix.end());
  out.suffix.insert(out.suffix.begin(), a.suffix.begin(), a.suffix.end());
}

// `depth`: how many Sequences enclose j.
void parse_into(const Json& j, const std::string& where, int depth, SpecialAffixes& out) {
  const std::string type = type_field(j, where);
  if (type == "Sequence") {
    check_sequence_depth(depth, where);
    const Json& list = array_field(j, "processors", where);
    const std::string lw = field_path(where, "processors");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_into(list[i], index_path(lw, i), depth + 1, out);
    }
  } else if (type == "ByteLevel") {
    // Only adjusts offsets; ids are unchanged.
  } else if (type == "TemplateProcessing") {
    parse_template(j, where, out);
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    out.prefix.push_back(token_pair_id(require_field(j, "cls", where), field_path(where, "cls")));
    out.suffix.push_back(token_pair_id(require_field(j, "sep", where), field_path(where, "sep")));
  } else {
    fail(field_path(where, "type"), ": unsupported post_processor type \"", type,
         "\" (supported: TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, "
         "Sequence)");
  }
}

}  // namespace

SpecialAffixes parse_post_processor(const Json& j, const std::string& where) {
  SpecialAffixes out;
  if (!j.is_null()) parse_into(j, where, 0, out);
  return out;
}

}  // namespace moex::tok
