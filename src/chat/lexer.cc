// The template lexer (see lexer.h); mirrors jinja2's lexer rules and their order.
#include "chat/lexer.h"

#include "chat/utf8_text.h"
#include "core/error.h"

namespace moex::chat {

std::string located(const std::string& origin, int line, int col, const std::string& what) {
  return str_cat(origin, ":", line, ":", col, ": ", what);
}

namespace {

// \n, \r\n and \r become \n; one trailing newline is dropped (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's unicode-escape decoding of a string literal's body.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    auto hex = [&](size_t n) -> bool {
      uint32_t v = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= s.size()) return false;
        const char h = s[i + k];
        const int d = h >= '0' && h <= '9'   ? h - '0'
                      : h >= 'a' && h <= 'f' ? h - 'a' + 10
                      : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                             : -1;
        if (d < 0) return false;
        v = v * 16 + uint32_t(d);
      }
      utf8_append(&out, v);
      i += n;
      return true;
    };
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
        if (!hex(2)) throw Error("truncated \\xXX escape");
        break;
      case 'u':
        if (!hex(4)) throw Error("truncated \\uXXXX escape");
        break;
      case 'U':
        if (!hex(8)) throw Error("truncated \\UXXXXXXXX escape");
        break;
      default:
        if (c >= '0' && c <= '7') {
          uint32_t v = 0;
          size_t k = 0;
          for (; k < 3 && i + k < s.size() && s[i + k] >= '0' && s[i + k] <= '7'; ++k)
            v = v * 8 + uint32_t(s[i + k] - '0');
          utf8_append(&out, v);
          i += k - 1;
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
// Names are Python identifiers; any non-ASCII byte is taken as part of one (jinja2 allows
// Unicode identifiers), ASCII follows [a-zA-Z_][a-zA-Z0-9_]*.
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(std::string src, const std::string& origin) : src_(std::move(src)), origin_(origin) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t at = find_tag(pos_);
      if (at == std::string::npos) {
        emit(Tok::kData, src_.substr(pos_), pos_);
        advance(src_.size());
        break;
      }
      const char kind = src_[at + 1];
      const char sign = at + 2 < src_.size() && (src_[at + 2] == '-' || src_[at + 2] == '+')
                            ? src_[at + 2]
                            : '\0';
      std::string text = src_.substr(pos_, at - pos_);
      if (sign == '-') {
        text = str_strip(text, nullptr, false, true);
      } else if (sign != '+' && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() && all_space(text, l_pos))
          text.resize(l_pos);
      }
      if (!text.empty()) emit(Tok::kData, text, pos_);
      advance(at);
      size_t raw_end = 0;
      if (kind == '%' && raw_begin(at, &raw_end)) {
        line_starting = lex_raw(raw_end);
      } else if (kind == '#') {
        line_starting = lex_comment(at);
      } else {
        line_starting = lex_tag(at, kind, sign);
      }
    }
    tokens_.push_back(Token{Tok::kEof, "", line_, col_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    throw Error(located(origin_, line_, col_, what));
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return std::string::npos;
  }

  bool all_space(const std::string& s, size_t from) const {
    for (size_t i = from; i < s.size();)
      if (!py_isspace(utf8_decode(s, &i))) return false;
    return true;
  }

  size_t skip_space(size_t i) const {
    while (i < src_.size()) {
      size_t j = i;
      if (!py_isspace(utf8_decode(src_, &j))) break;
      i = j;
    }
    return i;
  }

  // Moves pos_ to `to`, counting lines and columns on the way.
  void advance(size_t to) {
    for (; pos_ < to; ++pos_) {
      const auto c = static_cast<unsigned char>(src_[pos_]);
      if (c == '\n') {
        ++line_;
        col_ = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++col_;
      }
    }
  }

  void emit(Tok t, std::string v, size_t at) {
    (void)at;
    tokens_.push_back(Token{t, std::move(v), line_, col_});
  }

  // {%(-|+|)\s*raw\s*(-%}\s*|%}) at `at`; *end is past it.
  bool raw_begin(size_t at, size_t* end) const {
    size_t i = at + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    i = skip_space(i);
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && is_name_char(src_[i + 3])))
      return false;
    i = skip_space(i + 3);
    if (src_.compare(i, 3, "-%}") == 0) {
      *end = skip_space(i + 3);
      return true;
    }
    if (src_.compare(i, 2, "%}") == 0) {
      *end = i + 2;
      return true;
    }
    return false;
  }

  bool lex_raw(size_t body) {
    for (size_t at = src_.find("{%", body); at != std::string::npos; at = src_.find("{%", at + 1)) {
      size_t i = at + 2;
      const char sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : '\0';
      if (sign) ++i;
      i = skip_space(i);
      if (src_.compare(i, 6, "endraw") != 0) continue;
      i = skip_space(i + 6);
      size_t end;
      if (src_.compare(i, 3, "+%}") == 0)
        end = i + 3;
      else if (src_.compare(i, 3, "-%}") == 0)
        end = skip_space(i + 3);
      else if (src_.compare(i, 2, "%}") == 0)
        end = i + 2 + (src_.compare(i + 2, 1, "\n") == 0);
      else
        continue;
      std::string text = src_.substr(body, at - body);
      if (sign == '-') text = str_strip(text, nullptr, false, true);
      advance(body);
      if (!text.empty()) emit(Tok::kData, text, body);
      advance(end);
      return src_[end - 1] == '\n';
    }
    error("missing end of raw directive ({% endraw %})");
  }

  bool lex_comment(size_t at) {
    const size_t close = src_.find("#}", at + 2);
    if (close == std::string::npos) error("missing end of comment tag ('#}')");
    size_t end = close + 2;
    const char before = close > at + 2 ? src_[close - 1] : '\0';
    if (before == '-')
      end = skip_space(end);
    else if (before != '+' && end < src_.size() && src_[end] == '\n')
      ++end;
    advance(end);
    return src_[end - 1] == '\n';
  }

  // One {{ ... }} or {% ... %}: its tokens and end marker; returns whether the end ate a '\n'.
  bool lex_tag(size_t at, char kind, char sign) {
    const bool block = kind == '%';
    emit(block ? Tok::kBlockBegin : Tok::kVarBegin, block ? "{%" : "{{", at);
    advance(at + 2 + (sign ? 1 : 0));
    std::vector<char> balance;
    for (;;) {
      advance(skip_space(pos_));
      if (pos_ >= src_.size())
        error(block ? "unexpected end of template; expected '%}'"
                    : "unexpected end of template; expected '}}'");
      const char close = block ? '%' : '}';
      if (balance.empty()) {
        size_t end = 0;
        if (block && src_.compare(pos_, 3, "+%}") == 0) {
          end = pos_ + 3;
        } else if (src_[pos_] == '-' && pos_ + 2 < src_.size() && src_[pos_ + 1] == close &&
                   src_[pos_ + 2] == '}') {
          end = skip_space(pos_ + 3);
        } else if (src_[pos_] == close && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}') {
          end = pos_ + 2;
          if (block && end < src_.size() && src_[end] == '\n') ++end;
        }
        if (end != 0) {
          emit(block ? Tok::kBlockEnd : Tok::kVarEnd, "", pos_);
          advance(end);
          return src_[end - 1] == '\n';
        }
      }
      lex_token(&balance);
    }
  }

  void lex_token(std::vector<char>* balance) {
    const size_t s = pos_;
    const char c = src_[s];
    if (is_digit(c)) {
      size_t i = s;
      auto digits = [&] {
        const size_t b = i;
        while (i < src_.size() &&
               (is_digit(src_[i]) ||
                (src_[i] == '_' && i > b && i + 1 < src_.size() && is_digit(src_[i + 1]))))
          ++i;
        return i > b;
      };
      digits();
      bool is_float = false;
      if (i + 1 < src_.size() && src_[i] == '.' && is_digit(src_[i + 1])) {
        ++i;
        digits();
        is_float = true;
      }
      if (i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
        size_t j = i + 1;
        if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
        if (j < src_.size() && is_digit(src_[j])) {
          i = j;
          digits();
          is_float = true;
        }
      }
      std::string text;
      for (size_t k = s; k < i; ++k)
        if (src_[k] != '_') text += src_[k];
      emit(is_float ? Tok::kFloat : Tok::kInt, text, s);
      advance(i);
      return;
    }
    if (is_name_start(c)) {
      size_t i = s;
      while (i < src_.size() && is_name_char(src_[i])) ++i;
      emit(Tok::kName, src_.substr(s, i - s), s);
      advance(i);
      return;
    }
    if (c == '\'' || c == '"') {
      size_t i = s + 1;
      while (i < src_.size() && src_[i] != c) i += src_[i] == '\\' ? 2 : 1;
      if (i >= src_.size()) error("unterminated string literal");
      try {
        emit(Tok::kString, unescape(std::string_view(src_).substr(s + 1, i - s - 1)), s);
      } catch (const Error& e) {
        error(e.what());
      }
      advance(i + 1);
      return;
    }
    static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                 "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                 ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
    for (const char* op : kOps) {
      const size_t n = std::char_traits<char>::length(op);
      if (src_.compare(s, n, op) != 0) continue;
      if (*op == '(' || *op == '[' || *op == '{') {
        balance->push_back(*op == '(' ? ')' : *op == '[' ? ']' : '}');
      } else if (*op == ')' || *op == ']' || *op == '}') {
        if (balance->empty()) error(str_cat("unexpected '", op, "'"));
        if (balance->back() != *op)
          error(str_cat("unexpected '", op, "', expected '", balance->back(), "'"));
        balance->pop_back();
      }
      emit(Tok::kOp, op, s);
      advance(s + n);
      return;
    }
    size_t j = s;
    std::string ch;
    utf8_append(&ch, utf8_decode(src_, &j));
    error(str_cat("unexpected character '", ch, "'"));
  }

  std::string src_;
  const std::string& origin_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& origin) {
  return Lexer(normalize_newlines(source), origin).run();
}

}  // namespace moex::chat
