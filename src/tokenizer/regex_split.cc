// PCRE2 compile/match for tokenizer split patterns (see regex_split.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_split.h"

#include <pcre2.h>

#include "core/error.h"

namespace moex::tok {

namespace {

struct MatchData {
  pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
  ~MatchData() { pcre2_match_data_free(md); }
};

pcre2_match_data* thread_match_data() {
  thread_local MatchData data;
  return data.md;
}

}  // namespace

std::string onig_compatible_pattern(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 16);
  int class_depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') {
        out += class_depth > 0 ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (n == 'S' && class_depth == 0) {
        out += "[^\\s\\x{85}]";
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out += c;
  }
  return out;
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

Regex::Regex(const std::string& pattern, const std::string& where) {
  const std::string p = onig_compatible_pattern(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  auto* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    fail(where, ": regex does not compile at offset ", off, ": ", reinterpret_cast<char*>(msg),
         " (pattern \"", pattern, "\")");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT fails
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view s, size_t begin, size_t end, std::vector<Span>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = begin;
  while (pos < end) {
    int rc = pcre2_match(code, subject, end, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code, subject, end, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
    }
    if (rc < 0) break;  // no match (or a resource limit): the rest is one gap
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t mb = ov[0], me = ov[1];
    if (me > mb) {
      out.push_back({mb, me});
      pos = me;
    } else {  // empty match: step one character
      pos = mb + 1;
      while (pos < end && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
}

}  // namespace moex::tok
