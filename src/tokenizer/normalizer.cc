// Normalizer parsing and application (see normalizer.h).
#include "tokenizer/normalizer.h"

#include "tokenizer/unicode_nfc.h"
#include "tokenizer/utf8.h"

namespace moex::tok {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

}  // namespace

void strip_whitespace(std::string& s, bool left, bool right) {
  size_t b = 0, e = s.size();
  char32_t cp;
  if (left) {
    while (b < e) {
      const size_t n = utf8_sequence(s, b, &cp);
      if (n == 0 || !is_white_space(cp)) break;
      b += n;
    }
  }
  if (right) {
    while (e > b) {
      size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      const size_t n = utf8_sequence(s, start, &cp);
      if (n == 0 || !is_white_space(cp)) break;
      e = start;
    }
  }
  s = s.substr(b, e - b);
}

std::unique_ptr<Normalizer> Normalizer::from_json(const Json& j, const std::string& where) {
  return parse(j, where, 0);
}

std::unique_ptr<Normalizer> Normalizer::parse(const Json& j, const std::string& where,
                                              int depth) {
  auto n = std::make_unique<Normalizer>();
  const std::string type = type_field(j, where);
  if (type == "NFC") {
    n->kind_ = Kind::kNfc;
  } else if (type == "Prepend") {
    n->kind_ = Kind::kPrepend;
    n->text_ = string_field(j, "prepend", where);
  } else if (type == "Replace") {
    n->kind_ = Kind::kReplace;
    n->text_ = string_field(j, "content", where);
    const std::string pw = field_path(where, "pattern");
    const Json& pat = require_object(require_field(j, "pattern", where), pw);
    if (const Json* s = optional_field(pat, "String")) {
      n->literal_ = as_string(*s, field_path(pw, "String"));
    } else if (const Json* r = optional_field(pat, "Regex")) {
      n->regex_ = std::make_unique<Regex>(as_string(*r, field_path(pw, "Regex")),
                                          field_path(pw, "Regex"));
    } else {
      fail(pw, ": expected {\"String\": ...} or {\"Regex\": ...}");
    }
  } else if (type == "Strip") {
    n->kind_ = Kind::kStrip;
    n->strip_left_ = bool_field(j, "strip_left", where, true);
    n->strip_right_ = bool_field(j, "strip_right", where, true);
  } else if (type == "Sequence") {
    n->kind_ = Kind::kSequence;
    check_sequence_depth(depth, where);
    const Json& list = array_field(j, "normalizers", where);
    const std::string lw = field_path(where, "normalizers");
    for (size_t i = 0; i < list.size(); ++i) {
      n->children_.push_back(parse(list[i], index_path(lw, i), depth + 1));
    }
  } else {
    fail(field_path(where, "type"), ": unsupported normalizer type \"", type,
         "\" (supported: NFC, Prepend, Replace, Strip, Sequence)");
  }
  return n;
}

void Normalizer::normalize(std::string& s) const {
  switch (kind_) {
    case Kind::kNfc:
      if (!nfc_quick_check(s)) s = nfc_normalize(s);
      break;
    case Kind::kPrepend:
      if (!s.empty()) s.insert(0, text_);
      break;
    case Kind::kReplace:
      if (regex_) {
        std::vector<Span> hits;
        regex_->find_all(s, 0, s.size(), hits);
        if (hits.empty()) break;
        std::string out;
        size_t pos = 0;
        for (const Span& h : hits) {
          out.append(s, pos, h.begin - pos);
          out += text_;
          pos = h.end;
        }
        out.append(s, pos, std::string::npos);
        s.swap(out);
      } else {
        replace_all(s, literal_, text_);
      }
      break;
    case Kind::kStrip:
      strip_whitespace(s, strip_left_, strip_right_);
      break;
    case Kind::kSequence:
      for (const auto& c : children_) c->normalize(s);
      break;
  }
}

}  // namespace moex::tok
