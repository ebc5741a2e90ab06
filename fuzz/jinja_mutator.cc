// Structure-aware Jinja mutations (jinja_mutator.h).
#include "jinja_mutator.h"

#include <algorithm>
#include <cctype>
#include <random>
#include <utility>

namespace moex::fuzz {

namespace {

using Rng = std::mt19937;

size_t pick(Rng& rng, size_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}
template <typename T, size_t N>
const T& pick_of(Rng& rng, const T (&items)[N]) {
  return items[pick(rng, N)];
}

// Repetition counts from harmless to past every limit in src/chat/limits.h (expression depth
// 256, value depth 1000, macro depth 2000, the render's work budget).
constexpr size_t kCounts[] = {2, 3, 10, 100, 257, 1001, 2001, 5000, 10000, 100000};

// Expressions chat templates use, and values at the edges of the interpreter's types.
constexpr const char* kAtoms[] = {
    "messages", "messages[0]", "messages[-1]['content']", "message.content", "ns", "ns.a",
    "loop.index", "loop", "1", "0", "-1", "'ab'", "''", "[1, 2]", "[]", "{'a': 1}", "{}", "none",
    "true", "tools", "bos_token", "add_generation_prompt", "range(3)", "namespace(a=1)", "x",
    "2**62", "1e308", "messages|length", "'%s'", "caller", "self", "raise_exception",
    "9223372036854775807", "-9223372036854775808"};
constexpr const char* kBinary[] = {" + ", " ~ ", " and ", " or ", " * ", " - ", " == ", " in ",
                                   " // ", " % ", " ** ", " is ", " not in ", " if 1 else "};
constexpr const char* kPostfix[] = {
    "|trim", "|string", "|tojson", "|list", "|first", "|last", "|length", ".a", "[0]", "[::-1]",
    "|upper", "|items", "()", "|join", "|unique", "|reverse", "|sort", "|indent(4)",
    "|replace('a','aa')", "|map(attribute='a')", "|select", "|selectattr('role')", "|int",
    "|float", "|abs", "|round", "|default(1)", "|safe", "|count", "|dictsort"};
// Shapes that once broke the interpreter, and near relatives (each alone is a valid template).
constexpr const char* kSnippets[] = {
    "{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns|string }}{{ ns|tojson }}",
    "{% set l = [] %}{% set _ = l.append(l) %}{{ l|string }}{{ l|tojson }}",
    "{% set d = {} %}{% set _ = d.update({'d': d}) %}{{ d }}{{ d|tojson }}",
    "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",
    "{% macro r(n) %}{% if n %}{{ r(n - 1) }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(40) }}",
    "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
    "{% endfor %}{{ ns.l|tojson }}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{{ 'x' * 100000000 }}",
    "{{ range(100000000)|list|length }}",
    "{{ ('%' ~ 999999999 ~ 'd') % 1 }}",
    "{{ '%.1000000000f' % 1.5 }}",
    "{{ 'a'|indent(1000000000) }}",
    "{{ messages|tojson(indent=1000000) }}",
    "{{ 99999999999999999999999|int }}",
    "{{ (-9223372036854775807 - 1)|abs }}",
    "{{ 1e19|int }}{{ (1e308 * 10)|int }}",
    "{% set s = 'ab' * 1000000 %}{{ s.count('b') }}{{ s|unique|list|length }}",
    "{% set d = {} %}{% for i in range(100000) %}{% set _ = d.update({i: i}) %}{% endfor %}"
    "{{ d|length }}",
    "{{ 'abc'.split('') }}{{ 'abc'[::0] }}{{ [1][5] }}{{ {}['k'] }}",
    "{{ x.__class__.__mro__ }}{{ ''.__class__ }}",
    "{% raw %}{{ unclosed",
    "{% for m in messages %}{{ loop.cycle() }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    "{% filter upper %}{% filter lower %}{{ messages }}{% endfilter %}{% endfilter %}",
    "{% set x %}{% set x %}{% endset %}{% endset %}{{ x }}",
    "{{ raise_exception('stop') }}",
    "{% generation %}{{ messages[0].content }}{% endgeneration %}",
    "{{ tools|tojson }}{% for t in tools %}{{ t.function.parameters|tojson }}{% endfor %}"};
struct Block {
  const char* open;
  const char* close;
};
constexpr Block kBlocks[] = {
    {"{% for x in messages %}", "{% endfor %}"},
    {"{% for i in range(1000) %}", "{% endfor %}"},
    {"{% for k, v in {'a': [1, 2]}.items() %}", "{% endfor %}"},
    {"{% if messages %}", "{% endif %}"},
    {"{% if x %}", "{% else %}{% endif %}"},
    {"{% macro m(a=1) %}", "{% endmacro %}{{ m() }}"},
    {"{% call m() %}", "{% endcall %}"},
    {"{% filter upper %}", "{% endfilter %}"},
    {"{% set s %}", "{% endset %}{{ s ~ s }}"},
    {"{% raw %}", "{% endraw %}"},
    {"{% generation %}", "{% endgeneration %}"},
    {"{{ (", ")|string }}"},
    {"{{ [", "] }}"}};
constexpr const char* kNumbers[] = {"0", "-1", "1", "255", "100000000", "4294967296",
                                    "9223372036854775807", "9223372036854775808", "1e309",
                                    "-0.0", "1000000000"};

// The expression inside a tag, without its delimiters and whitespace-control marks.
std::string inner(const JinjaSegment& s) {
  std::string_view t = s.text;
  if (t.size() < 4) return "";
  t.remove_prefix(2);
  t.remove_suffix(2);
  while (!t.empty() && (t.front() == '-' || t.front() == '+' || t.front() == ' ')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == '-' || t.back() == '+' || t.back() == ' ')) t.remove_suffix(1);
  return std::string(t);
}

bool closed_tag(const JinjaSegment& s) { return s.kind != JinjaSegment::kText; }

// An expression to build with: one of the template's own, or a stock one.
std::string some_expression(const std::vector<JinjaSegment>& segs, Rng& rng) {
  std::vector<size_t> exprs;
  for (size_t i = 0; i < segs.size(); ++i)
    if (segs[i].kind == JinjaSegment::kExpression) exprs.push_back(i);
  if (!exprs.empty() && pick(rng, 2) == 0) {
    std::string e = inner(segs[exprs[pick(rng, exprs.size())]]);
    if (!e.empty() && e.size() < 200) return e;
  }
  return pick_of(rng, kAtoms);
}

// `count` copies of `unit` if they fit in `room` bytes, else as many as fit (at least one).
size_t fitting(size_t count, size_t unit, size_t room) {
  if (unit == 0) return count;
  return std::max<size_t>(1, std::min(count, room / unit));
}

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// A long chain of one shape around an expression: binary operators, postfix operations,
// parentheses, list or dict nesting.
std::string chain(std::string_view e, Rng& rng, size_t room) {
  const size_t want = pick_of(rng, kCounts);
  switch (pick(rng, 5)) {
    case 0: {
      const std::string op = pick_of(rng, kBinary);
      const size_t n = fitting(want, op.size() + e.size(), room);
      std::string out(e);
      for (size_t i = 1; i < n; ++i) (out += op) += e;
      return "{{ " + out + " }}";
    }
    case 1: {
      const std::string op = pick_of(rng, kPostfix);
      const size_t n = fitting(want, op.size(), room);
      return "{{ " + std::string(e) + repeat(op, n) + " }}";
    }
    case 2: {
      const size_t n = fitting(want, 2, room);
      return "{{ " + repeat("(", n) + std::string(e) + repeat(")", n) + " }}";
    }
    case 3: {
      const size_t n = fitting(want, 2, room);
      return "{{ " + repeat("[", n) + std::string(e) + repeat("]", n) + "|tojson }}";
    }
    default: {
      const size_t n = fitting(want, 8, room);
      return "{{ " + repeat("{'a': ", n) + std::string(e) + repeat("}", n) + "|string }}";
    }
  }
}

std::string mutate_segments(std::vector<JinjaSegment> segs, Rng& rng, size_t max_size) {
  const std::string before = join_jinja(segs);
  const size_t room = max_size > before.size() + 16 ? max_size - before.size() - 16 : 0;
  const size_t at = pick(rng, segs.size() + 1);  // an insertion point
  auto insert = [&](std::string text, JinjaSegment::Kind kind) {
    segs.insert(segs.begin() + long(at), JinjaSegment{kind, std::move(text)});
  };
  switch (pick(rng, 9)) {
    case 0: {  // a long chain, replacing an expression or inserted
      std::string c = chain(some_expression(segs, rng), rng, room);
      if (c.size() > room + 16) break;
      std::vector<size_t> exprs;
      for (size_t i = 0; i < segs.size(); ++i)
        if (segs[i].kind == JinjaSegment::kExpression) exprs.push_back(i);
      if (!exprs.empty() && pick(rng, 2) == 0)
        segs[exprs[pick(rng, exprs.size())]].text = std::move(c);
      else
        insert(std::move(c), JinjaSegment::kExpression);
      break;
    }
    case 1: {  // wrap a span of segments in a block, nested `depth` times
      const Block& b = pick_of(rng, kBlocks);
      const size_t unit = std::string_view(b.open).size() + std::string_view(b.close).size();
      const size_t depth = fitting(pick_of(rng, kCounts), unit, room);
      const size_t first = pick(rng, segs.size() + 1);
      const size_t last = first + pick(rng, segs.size() - first + 1);
      std::string mid;
      for (size_t i = first; i < last; ++i) mid += segs[i].text;
      std::string text = repeat(b.open, depth) + mid + repeat(b.close, depth);
      segs.erase(segs.begin() + long(first), segs.begin() + long(last));
      segs.insert(segs.begin() + long(first), JinjaSegment{JinjaSegment::kStatement, text});
      break;
    }
    case 2: {  // one segment repeated
      if (segs.empty()) break;
      const size_t i = pick(rng, segs.size());
      const size_t n = fitting(pick_of(rng, kCounts), segs[i].text.size(), room);
      segs[i].text = repeat(segs[i].text, n);
      break;
    }
    case 3: {  // a known hostile shape
      const std::string s = pick_of(rng, kSnippets);
      if (s.size() <= room) insert(s, JinjaSegment::kStatement);
      break;
    }
    case 4: {  // two segments swapped
      if (segs.size() < 2) break;
      std::swap(segs[pick(rng, segs.size())], segs[pick(rng, segs.size())]);
      break;
    }
    case 5: {  // a segment removed (often unbalances a block: the parser must say so)
      if (segs.empty()) break;
      segs.erase(segs.begin() + long(pick(rng, segs.size())));
      break;
    }
    case 6: {  // a tag's expression replaced by a stock one with a postfix operation
      std::vector<size_t> tags;
      for (size_t i = 0; i < segs.size(); ++i)
        if (segs[i].kind == JinjaSegment::kExpression) tags.push_back(i);
      const std::string e = std::string(pick_of(rng, kAtoms)) + pick_of(rng, kPostfix);
      if (tags.empty())
        insert("{{ " + e + " }}", JinjaSegment::kExpression);
      else
        segs[tags[pick(rng, tags.size())]].text = "{{ " + e + " }}";
      break;
    }
    case 7: {  // a number in a tag replaced by one at a type's edge
      std::vector<size_t> tags;
      for (size_t i = 0; i < segs.size(); ++i)
        if (closed_tag(segs[i]) && segs[i].text.find_first_of("0123456789") != std::string::npos)
          tags.push_back(i);
      if (tags.empty()) break;
      std::string& t = segs[tags[pick(rng, tags.size())]].text;
      std::vector<size_t> starts;
      for (size_t i = 0; i < t.size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(t[i])) &&
            (i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1]))))
          starts.push_back(i);
      if (starts.empty()) break;
      const size_t b = starts[pick(rng, starts.size())];
      size_t e = b;
      while (e < t.size() && std::isdigit(static_cast<unsigned char>(t[e]))) ++e;
      t.replace(b, e - b, pick_of(rng, kNumbers));
      break;
    }
    default: {  // whitespace control and delimiters flipped on a tag
      std::vector<size_t> tags;
      for (size_t i = 0; i < segs.size(); ++i)
        if (closed_tag(segs[i]) && segs[i].text.size() >= 4) tags.push_back(i);
      if (tags.empty()) break;
      std::string& t = segs[tags[pick(rng, tags.size())]].text;
      constexpr const char* kMarks[] = {"-", "+", "", "- ", "%", "{", "}"};
      t.insert(pick(rng, 2) ? 2 : t.size() - 2, pick_of(rng, kMarks));
      break;
    }
  }
  std::string out = join_jinja(segs);
  if (out.size() > max_size) out.resize(max_size);
  return out;
}

}  // namespace

std::vector<JinjaSegment> split_jinja(std::string_view t) {
  std::vector<JinjaSegment> out;
  size_t i = 0, text_from = 0;
  auto flush_text = [&](size_t to) {
    if (to > text_from) out.push_back({JinjaSegment::kText, std::string(t.substr(text_from, to - text_from))});
  };
  while (i + 1 < t.size()) {
    if (t[i] != '{' || (t[i + 1] != '{' && t[i + 1] != '%' && t[i + 1] != '#')) {
      ++i;
      continue;
    }
    const char open = t[i + 1];
    const char close_first = open == '{' ? '}' : open;
    size_t end = t.find(std::string{close_first, '}'}, i + 2);
    if (end == std::string_view::npos) break;  // unclosed: the rest is text
    flush_text(i);
    const JinjaSegment::Kind kind = open == '{'   ? JinjaSegment::kExpression
                                    : open == '%' ? JinjaSegment::kStatement
                                                  : JinjaSegment::kComment;
    out.push_back({kind, std::string(t.substr(i, end + 2 - i))});
    i = text_from = end + 2;
  }
  flush_text(t.size());
  return out;
}

std::string join_jinja(const std::vector<JinjaSegment>& segments) {
  std::string out;
  for (const JinjaSegment& s : segments) out += s.text;
  return out;
}

std::string mutate_jinja(std::string_view tmpl, uint32_t seed, size_t max_size) {
  Rng rng(seed);
  return mutate_segments(split_jinja(tmpl), rng, max_size);
}

std::string cross_jinja(std::string_view a, std::string_view b, uint32_t seed, size_t max_size) {
  Rng rng(seed);
  const std::vector<JinjaSegment> sa = split_jinja(a), sb = split_jinja(b);
  std::vector<JinjaSegment> out(sa.begin(), sa.begin() + long(pick(rng, sa.size() + 1)));
  out.insert(out.end(), sb.begin() + long(pick(rng, sb.size() + 1)), sb.end());
  std::string text = join_jinja(out);
  if (text.size() > max_size) text.resize(max_size);
  return text;
}

namespace {

// The template part of an input (up to its first NUL) and the rest, NUL included.
std::pair<std::string_view, std::string_view> template_and_rest(std::string_view input) {
  const size_t nul = input.find('\0');
  if (nul == std::string_view::npos) return {input, std::string_view()};
  return {input.substr(0, nul), input.substr(nul)};
}

}  // namespace

std::string mutate_input(std::string_view input, uint32_t seed, size_t max_size) {
  const auto [tmpl, rest] = template_and_rest(input);
  if (rest.size() > max_size) return std::string();
  std::string out = mutate_jinja(tmpl, seed, max_size - rest.size());
  out.append(rest.begin(), rest.end());
  return out;
}

std::string cross_inputs(std::string_view a, std::string_view b, uint32_t seed, size_t max_size) {
  const auto [ta, rest] = template_and_rest(a);
  if (rest.size() > max_size) return std::string();
  std::string out = cross_jinja(ta, template_and_rest(b).first, seed, max_size - rest.size());
  out.append(rest.begin(), rest.end());
  return out;
}

}  // namespace moex::fuzz
