// Pre-tokenizer stages (see pre_tokenizer.h).
#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/byte_level.h"

namespace moex::tok {

struct PreTokenizer::Stage {
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  Kind kind = Kind::kSplit;
  std::unique_ptr<Regex> regex;  // Split / Digits / ByteLevel(use_regex)
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;  // ByteLevel
  bool map_bytes = false;         // ByteLevel that is not the last stage
  std::string replacement;        // Metaspace
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool metaspace_split = true;
};

PreTokenizer::~PreTokenizer() = default;

namespace {

SplitBehavior parse_behavior(const std::string& s, const std::string& where) {
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  fail(where, ": unknown split behavior \"", s,
       "\" (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)");
}

// Rebuilds w.buf: each span's text is transformed by fn(text, span, out).
template <typename Fn>
void rewrite(Words& w, Fn fn) {
  std::string buf;
  buf.reserve(w.buf.size() + w.buf.size() / 2 + 8);
  for (WordSpan& s : w.spans) {
    const size_t b = buf.size();
    fn(std::string_view(w.buf).substr(s.begin, s.end - s.begin), s, buf);
    s.begin = b;
    s.end = buf.size();
  }
  w.buf.swap(buf);
}

}  // namespace

void split_words(Words& w, const Regex& re, SplitBehavior behavior, bool invert) {
  std::vector<WordSpan> out;
  out.reserve(w.spans.size() * 2);
  std::vector<Span> hits;
  struct Piece {
    size_t b, e;
    bool is_match;
  };
  std::vector<Piece> pieces;
  for (const WordSpan& s : w.spans) {
    hits.clear();
    re.find_all(w.buf, s.begin, s.end, hits);
    pieces.clear();
    size_t pos = s.begin;
    for (const Span& h : hits) {
      if (h.begin > pos) pieces.push_back({pos, h.begin, invert});
      pieces.push_back({h.begin, h.end, !invert});
      pos = h.end;
    }
    if (pos < s.end) pieces.push_back({pos, s.end, invert});
    const size_t first_out = out.size();
    switch (behavior) {
      case SplitBehavior::kRemoved:
        for (const Piece& p : pieces) {
          if (!p.is_match) out.push_back({p.b, p.e, false});
        }
        break;
      case SplitBehavior::kIsolated:
        for (const Piece& p : pieces) out.push_back({p.b, p.e, false});
        break;
      case SplitBehavior::kMergedWithPrevious: {
        bool prev_match = false;
        for (const Piece& p : pieces) {
          if (p.is_match && !prev_match && out.size() > first_out) {
            out.back().end = p.e;
          } else {
            out.push_back({p.b, p.e, false});
          }
          prev_match = p.is_match;
        }
        break;
      }
      case SplitBehavior::kMergedWithNext: {
        bool next_match = false;  // walk backwards, as the reference does
        std::vector<WordSpan> rev;
        for (size_t k = pieces.size(); k-- > 0;) {
          const Piece& p = pieces[k];
          if (p.is_match && !next_match && !rev.empty()) {
            rev.back().begin = p.b;
          } else {
            rev.push_back({p.b, p.e, false});
          }
          next_match = p.is_match;
        }
        out.insert(out.end(), rev.rbegin(), rev.rend());
        break;
      }
      case SplitBehavior::kContiguous: {
        bool prev_match = false;
        for (const Piece& p : pieces) {
          if (p.is_match == prev_match && out.size() > first_out) {
            out.back().end = p.e;
          } else {
            out.push_back({p.b, p.e, false});
          }
          prev_match = p.is_match;
        }
        break;
      }
    }
    if (s.at_start && out.size() > first_out && out[first_out].begin == s.begin) {
      out[first_out].at_start = true;
    }
  }
  w.spans.swap(out);
}

void PreTokenizer::parse_into(const Json& j, const std::string& where, int depth,
                              std::vector<std::unique_ptr<Stage>>& stages) {
  const std::string type = type_field(j, where);
  auto st = std::make_unique<Stage>();
  if (type == "Sequence") {
    check_sequence_depth(depth, where);
    const Json& list = array_field(j, "pretokenizers", where);
    const std::string lw = field_path(where, "pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_into(list[i], index_path(lw, i), depth + 1, stages);
    }
    return;
  }
  if (type == "Split") {
    st->kind = Stage::Kind::kSplit;
    const std::string pw = field_path(where, "pattern");
    const Json& pat = require_object(require_field(j, "pattern", where), pw);
    if (const Json* s = optional_field(pat, "String")) {
      st->regex = std::make_unique<Regex>(regex_escape(as_string(*s, field_path(pw, "String"))),
                                          field_path(pw, "String"));
    } else if (const Json* r = optional_field(pat, "Regex")) {
      st->regex = std::make_unique<Regex>(as_string(*r, field_path(pw, "Regex")),
                                          field_path(pw, "Regex"));
    } else {
      fail(pw, ": expected {\"String\": ...} or {\"Regex\": ...}");
    }
    st->behavior = parse_behavior(string_field(j, "behavior", where), field_path(where, "behavior"));
    st->invert = bool_field(j, "invert", where, false);
  } else if (type == "ByteLevel") {
    st->kind = Stage::Kind::kByteLevel;
    st->add_prefix_space = bool_field(j, "add_prefix_space", where, true);
    if (bool_field(j, "use_regex", where, true)) {
      st->regex = std::make_unique<Regex>(kGpt2SplitPattern, field_path(where, "use_regex"));
    }
  } else if (type == "Metaspace") {
    st->kind = Stage::Kind::kMetaspace;
    st->replacement = single_char_field(j, "replacement", where);
    st->metaspace_split = bool_field(j, "split", where, true);
    if (auto scheme = opt_string_field(j, "prepend_scheme", where)) {
      if (*scheme == "always") {
        st->prepend = Stage::Prepend::kAlways;
      } else if (*scheme == "first") {
        st->prepend = Stage::Prepend::kFirst;
      } else if (*scheme == "never") {
        st->prepend = Stage::Prepend::kNever;
      } else {
        fail(field_path(where, "prepend_scheme"), ": expected always, first or never, got \"",
             *scheme, "\"");
      }
    } else {
      st->prepend = bool_field(j, "add_prefix_space", where, true) ? Stage::Prepend::kAlways
                                                                    : Stage::Prepend::kNever;
    }
    st->regex = std::make_unique<Regex>(regex_escape(st->replacement), where);
  } else if (type == "Digits") {
    st->kind = Stage::Kind::kSplit;
    const bool individual = bool_field(j, "individual_digits", where, false);
    st->regex = std::make_unique<Regex>(individual ? "\\p{N}" : "\\p{N}+", where);
    st->behavior = SplitBehavior::kIsolated;
  } else {
    fail(field_path(where, "type"), ": unsupported pre_tokenizer type \"", type,
         "\" (supported: Split, ByteLevel, Metaspace, Digits, Sequence)");
  }
  stages.push_back(std::move(st));
}

std::unique_ptr<PreTokenizer> PreTokenizer::from_json(const Json& j, const std::string& where) {
  auto p = std::make_unique<PreTokenizer>();
  parse_into(j, where, 0, p->stages_);
  for (size_t i = 0; i < p->stages_.size(); ++i) {
    Stage& st = *p->stages_[i];
    if (st.kind != Stage::Kind::kByteLevel) continue;
    if (i + 1 == p->stages_.size()) {
      p->model_maps_bytes_ = true;
    } else {
      st.map_bytes = true;
    }
  }
  return p;
}

void PreTokenizer::apply(Words& w) const {
  for (const auto& stp : stages_) {
    const Stage& st = *stp;
    switch (st.kind) {
      case Stage::Kind::kSplit:
        split_words(w, *st.regex, st.behavior, st.invert);
        break;
      case Stage::Kind::kByteLevel: {
        if (st.add_prefix_space) {
          bool needed = false;
          for (const WordSpan& s : w.spans) needed |= w.buf[s.begin] != ' ';
          if (needed) {
            rewrite(w, [](std::string_view t, WordSpan&, std::string& out) {
              if (t.empty() || t[0] != ' ') out += ' ';
              out += t;
            });
          }
        }
        if (st.regex) split_words(w, *st.regex, SplitBehavior::kIsolated, false);
        if (st.map_bytes) {
          rewrite(w, [](std::string_view t, WordSpan&, std::string& out) {
            append_byte_level(out, t);
          });
        }
        break;
      }
      case Stage::Kind::kMetaspace: {
        const std::string& rep = st.replacement;
        rewrite(w, [&](std::string_view t, WordSpan& s, std::string& out) {
          const size_t b = out.size();
          for (char c : t) {
            if (c == ' ') {
              out += rep;
            } else {
              out += c;
            }
          }
          const bool want = st.prepend == Stage::Prepend::kAlways ||
                            (st.prepend == Stage::Prepend::kFirst && s.at_start);
          if (want && out.compare(b, rep.size(), rep) != 0) out.insert(b, rep);
        });
        if (st.metaspace_split) split_words(w, *st.regex, SplitBehavior::kMergedWithNext, false);
        break;
      }
    }
  }
}

}  // namespace moex::tok
