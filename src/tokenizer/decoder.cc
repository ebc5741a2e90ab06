// Decoder steps (see decoder.h).
#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace moex::tok {

struct Decoder::Step {
  enum class Kind { kByteLevel, kMetaspace, kReplace, kByteFallback, kFuse, kStrip };
  Kind kind = Kind::kFuse;
  std::string pattern, content;  // Replace; Metaspace uses content for the replacement char
  bool metaspace_strip_first = true;
  std::string strip_char;        // Strip
  size_t strip_start = 0, strip_stop = 0;
};

Decoder::~Decoder() = default;

void Decoder::parse_into(const Json& j, const std::string& where, int depth,
                         std::vector<std::unique_ptr<Step>>& steps) {
  const std::string type = type_field(j, where);
  if (type == "Sequence") {
    check_sequence_depth(depth, where);
    const Json& list = array_field(j, "decoders", where);
    const std::string lw = field_path(where, "decoders");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_into(list[i], index_path(lw, i), depth + 1, steps);
    }
    return;
  }
  auto st = std::make_unique<Step>();
  if (type == "ByteLevel") {
    st->kind = Step::Kind::kByteLevel;
  } else if (type == "Metaspace") {
    st->kind = Step::Kind::kMetaspace;
    st->content = single_char_field(j, "replacement", where);
    if (auto scheme = opt_string_field(j, "prepend_scheme", where)) {
      if (*scheme != "always" && *scheme != "first" && *scheme != "never") {
        fail(field_path(where, "prepend_scheme"), ": expected always, first or never, got \"",
             *scheme, "\"");
      }
      st->metaspace_strip_first = *scheme != "never";
    } else {
      st->metaspace_strip_first = bool_field(j, "add_prefix_space", where, true);
    }
  } else if (type == "Replace") {
    st->kind = Step::Kind::kReplace;
    st->content = string_field(j, "content", where);
    const std::string pw = field_path(where, "pattern");
    const Json& pat = require_object(require_field(j, "pattern", where), pw);
    const Json* s = optional_field(pat, "String");
    if (s == nullptr) fail(pw, ": only {\"String\": ...} patterns are supported in decoders");
    st->pattern = as_string(*s, field_path(pw, "String"));
    if (st->pattern.empty()) fail(field_path(pw, "String"), ": empty pattern");
  } else if (type == "ByteFallback") {
    st->kind = Step::Kind::kByteFallback;
  } else if (type == "Fuse") {
    st->kind = Step::Kind::kFuse;
  } else if (type == "Strip") {
    st->kind = Step::Kind::kStrip;
    st->strip_char = single_char_field(j, "content", where);
    const int64_t a = int_field(j, "start", where, 0), b = int_field(j, "stop", where, 0);
    if (a < 0 || b < 0) fail(where, ": start/stop must be >= 0");
    st->strip_start = static_cast<size_t>(a);
    st->strip_stop = static_cast<size_t>(b);
  } else {
    fail(field_path(where, "type"), ": unsupported decoder type \"", type,
         "\" (supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence)");
  }
  steps.push_back(std::move(st));
}

std::unique_ptr<Decoder> Decoder::from_json(const Json& j, const std::string& where) {
  auto d = std::make_unique<Decoder>();
  parse_into(j, where, 0, d->steps_);
  return d;
}

bool Decoder::is_plain_byte_level() const {
  return steps_.size() == 1 && steps_[0]->kind == Step::Kind::kByteLevel;
}

namespace {

// "<0xNN>" -> NN, or -1.
int byte_token_value(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = t[k];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

void Decoder::run(const Step& st, std::vector<std::string>& tokens) const {
  switch (st.kind) {
    case Step::Kind::kByteLevel: {
      // All tokens become bytes (a token with a character outside the table keeps its UTF-8),
      // then one lossy UTF-8 conversion.
      std::string bytes;
      for (const std::string& t : tokens) {
        if (!byte_level_decode(t, bytes)) bytes += t;
      }
      tokens.assign(1, utf8_lossy(bytes));
      break;
    }
    case Step::Kind::kMetaspace:
      for (size_t i = 0; i < tokens.size(); ++i) {
        std::string out;
        const std::string& t = tokens[i];
        const std::string& rep = st.content;
        for (size_t p = 0; p < t.size();) {
          if (t.compare(p, rep.size(), rep) == 0) {
            if (!(i == 0 && st.metaspace_strip_first)) out += ' ';
            p += rep.size();
          } else {
            out += t[p++];
          }
        }
        tokens[i].swap(out);
      }
      break;
    case Step::Kind::kReplace:
      for (std::string& t : tokens) {
        std::string out;
        size_t pos = 0;
        for (size_t hit; (hit = t.find(st.pattern, pos)) != std::string::npos;
             pos = hit + st.pattern.size()) {
          out.append(t, pos, hit - pos);
          out += st.content;
        }
        out.append(t, pos, std::string::npos);
        t.swap(out);
      }
      break;
    case Step::Kind::kByteFallback: {
      std::vector<std::string> out;
      std::string pending;
      auto flush = [&]() {
        if (pending.empty()) return;
        if (is_valid_utf8(pending)) {
          out.push_back(pending);
        } else {
          for (size_t k = 0; k < pending.size(); ++k) out.push_back("\xEF\xBF\xBD");
        }
        pending.clear();
      };
      for (std::string& t : tokens) {
        const int v = byte_token_value(t);
        if (v >= 0) {
          pending.push_back(static_cast<char>(v));
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      tokens.swap(out);
      break;
    }
    case Step::Kind::kFuse: {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
      break;
    }
    case Step::Kind::kStrip:
      for (std::string& t : tokens) {
        const std::string& c = st.strip_char;
        size_t b = 0, e = t.size();
        for (size_t k = 0; k < st.strip_start && t.compare(b, c.size(), c) == 0 && b < e; ++k) {
          b += c.size();
        }
        for (size_t k = 0; k < st.strip_stop && e >= b + c.size() &&
                           t.compare(e - c.size(), c.size(), c) == 0; ++k) {
          e -= c.size();
        }
        t = t.substr(b, e - b);
      }
      break;
  }
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  for (const auto& st : steps_) run(*st, tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace moex::tok
