// Whitespace control and statements: each case's expected output (or exception class) is what
// jinja2 renders with transformers' environment (trim_blocks, lstrip_blocks, loopcontrols).
#include "chat/chat_test_util.h"

namespace moex::chat::testing {
namespace {

const Case kWhitespace[] = {
    {"trim_blocks", R"~({% if true %}
yes
{% endif %}
after)~", R"~({})~", R"~(yes
after)~", true},
    {"lstrip_blocks", R"~(line
    {% if true %}
    x
    {% endif %}
end)~", R"~({})~", R"~(line
    x
end)~", true},
    {"lstrip_not_for_print", R"~(a
    {{ 'v' }}
b)~", R"~({})~", R"~(a
    v
b)~", true},
    {"lstrip_needs_only_spaces_before", R"~(a  {% if true %}x{% endif %})~", R"~({})~", R"~(a  x)~", true},
    {"lstrip_at_template_start", R"~(   {% if true %}x{% endif %})~", R"~({})~", R"~(x)~", true},
    {"minus_left", R"~(a  

  {%- if true %}x{% endif %})~", R"~({})~", R"~(ax)~", true},
    {"minus_right", R"~({% if true -%}  

  x{% endif %})~", R"~({})~", R"~(x)~", true},
    {"print_minus", R"~(a 
 {{- 'x' -}} 
 b)~", R"~({})~", R"~(axb)~", true},
    {"plus_keeps_lstrip", R"~(a
    {%+ if true %}x{% endif %})~", R"~({})~", R"~(a
    x)~", true},
    {"plus_keeps_trim", R"~({% if true +%}
x{% endif %})~", R"~({})~", R"~(
x)~", true},
    {"comment_trim_and_lstrip", R"~(a
  {# note #}
b)~", R"~({})~", R"~(a
b)~", true},
    {"comment_minus", R"~(a  {#- note -#}  b)~", R"~({})~", R"~(ab)~", true},
    {"trailing_newline_dropped", R"~(x
)~", R"~({})~", R"~(x)~", true},
    {"only_one_trailing_newline_dropped", R"~(x

)~", R"~({})~", R"~(x
)~", true},
    {"crlf_normalized", "a\r\nb\rc", R"~({})~", R"~(a
b
c)~", true},
    {"line_starting_after_block", R"~({% if true %}
   {% if true %}
in
   {% endif %}
{% endif %})~", R"~({})~", R"~(in
)~", true},
    {"no_lstrip_after_print_on_same_line", R"~({{ 'a' }}   {% if true %}b{% endif %})~", R"~({})~", R"~(a   b)~", true},
    {"raw_block", R"~({% raw %}{{ not evaluated }}{% endraw %})~", R"~({})~", R"~({{ not evaluated }})~", true},
    {"for_whitespace", R"~({% for x in [1,2] %}
  - {{ x }}
{% endfor %}
)~", R"~({})~", R"~(  - 1
  - 2
)~", true},
    {"set_block_whitespace", R"~({% set s %}
  body
{% endset %}[{{ s }}])~", R"~({})~", R"~([  body
])~", true},
    {"macro_whitespace", R"~({%- macro m(x) -%}
  <{{ x }}>
{%- endmacro -%}
{{ m(1) }}{{ m(2) }})~", R"~({})~", R"~(<1><2>)~", true},
};

const Case kStatements[] = {
    {"if_elif_else", R"~({% for x in [1,2,3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %},{% endfor %})~", R"~({})~", R"~(one,two,many,)~", true},
    {"loop_vars", R"~({% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %})~", R"~({})~", R"~(1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|)~", true},
    {"loop_prev_next", R"~({% for x in [1,2,3] %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %})~", R"~({})~", R"~([<1>2][1<2>3][2<3>])~", true},
    {"loop_prev_defined", R"~({% for x in [1,2] %}{{ loop.previtem is defined }}{{ loop.nextitem is defined }} {% endfor %})~", R"~({})~", R"~(FalseTrue TrueFalse )~", true},
    {"loop_cycle", R"~({% for x in range(5) %}{{ loop.cycle('a','b') }}{% endfor %})~", R"~({})~", R"~(ababa)~", true},
    {"for_else", R"~({% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1] %}x{% else %}empty{% endfor %})~", R"~({})~", R"~(emptyx)~", true},
    {"for_if_filter", R"~({% for x in range(10) if x is odd %}{{ x }}{{ loop.last }},{% endfor %})~", R"~({})~", R"~(1False,3False,5False,7False,9True,)~", true},
    {"for_filter_else", R"~({% for x in [2,4] if x is odd %}{{ x }}{% else %}none odd{% endfor %})~", R"~({})~", R"~(none odd)~", true},
    {"for_unpack", R"~({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %})~", R"~({"d": {"b": 1, "a": 2}})~", R"~(b=1;a=2;)~", true},
    {"for_unpack_items_filter", R"~({% for k, v in d|items %}{{ k }}={{ v }};{% endfor %})~", R"~({"d": {"b": 1, "a": 2}})~", R"~(b=1;a=2;)~", true},
    {"for_dict_keys", R"~({% for k in d %}{{ k }}{% endfor %})~", R"~({"d": {"z": 1, "y": 2}})~", R"~(zy)~", true},
    {"for_undefined_is_empty", R"~({% for x in nothing %}x{% else %}e{% endfor %})~", R"~({})~", R"~(e)~", true},
    {"for_none_errors", R"~({% for x in none %}x{% endfor %})~", R"~({})~", R"~(TypeError: 'NoneType' object is not iterable)~", false},
    {"break_continue", R"~({% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %})~", R"~({})~", R"~(0134)~", true},
    {"nested_loop_scope", R"~({% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %})~", R"~({})~", R"~(113 214 1|123 224 2|)~", true},
    {"set_in_loop_does_not_leak", R"~({% set x = 5 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }})~", R"~({})~", R"~(51525)~", true},
    {"set_in_loop_fresh_each_iteration", R"~({% for i in [1,2,3] %}{% if i == 1 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %})~", R"~({})~", R"~([a][][])~", true},
    {"set_in_if_leaks", R"~({% if true %}{% set x = 1 %}{% endif %}{{ x }})~", R"~({})~", R"~(1)~", true},
    {"set_tuple", R"~({% set a, b = [1, 2] %}{{ b }}{{ a }})~", R"~({})~", R"~(21)~", true},
    {"set_tuple_mismatch", R"~({% set a, b = [1, 2, 3] %})~", R"~({})~", R"~(ValueError: too many values to unpack (expected 2))~", false},
    {"namespace", R"~({% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }})~", R"~({})~", R"~(6 0123)~", true},
    {"namespace_item_access", R"~({% set ns = namespace(a=1) %}{{ ns['a'] }}{{ ns.b is defined }})~", R"~({})~", R"~(1False)~", true},
    {"namespace_assign_non_namespace", R"~({% set d = {} %}{% set d.x = 1 %})~", R"~({})~", R"~(TemplateRuntimeError: cannot assign attribute on non-namespace object)~", false},
    {"namespace_underscore", R"~({% set ns = namespace() %}{% set ns._x = 1 %})~", R"~({})~", R"~(SecurityError: Chat templates cannot store underscore-prefixed attributes on a namespace, but got '_x'. Please rename the attribute.)~", false},
    {"set_block", R"~({% set greeting %}Hello {{ name }}!{% endset %}{{ greeting|upper }})~", R"~({"name": "Ann"})~", R"~(HELLO ANN!)~", true},
    {"set_block_filter", R"~({% set s | trim | upper %}   padded   {% endset %}[{{ s }}])~", R"~({})~", R"~([PADDED])~", true},
    {"macro_defaults_kwargs", R"~({% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|{{ m(a='x', b='y') }})~", R"~({})~", R"~(1BNone|12None|1B3|xyNone)~", true},
    {"macro_missing_arg_undefined", R"~({% macro m(a, b) %}[{{ a }}][{{ b }}][{{ b is defined }}]{% endmacro %}{{ m(1) }})~", R"~({})~", R"~([1][][False])~", true},
    {"macro_sees_globals_at_call", R"~({% macro m() %}{{ z }}{% endmacro %}{% set z = 7 %}{{ m() }})~", R"~({})~", R"~(7)~", true},
    {"macro_in_loop_closure", R"~({% for i in [1, 2] %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %})~", R"~({})~", R"~(12)~", true},
    {"macro_recursive", R"~({% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }})~", R"~({})~", R"~(4321)~", true},
    {"macro_set_is_local", R"~({% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}{{ x }})~", R"~({})~", R"~(21)~", true},
    {"macro_returns_string", R"~({% macro m() %}ab{% endmacro %}{{ m() ~ m() }}{{ m()|length }})~", R"~({})~", R"~(abab2)~", true},
    {"call_block", R"~({% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %})~", R"~({})~", R"~(<b>inner 2</b>)~", true},
    {"call_block_args", R"~({% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1,2,3]) %}<{{ x }}>{% endcall %})~", R"~({})~", R"~(<1><2><3>)~", true},
    {"filter_block", R"~({% filter upper %}shout {{ 'this' }}{% endfilter %})~", R"~({})~", R"~(SHOUT THIS)~", true},
    {"filter_block_chain", R"~({%- filter trim | replace('a', 'o') -%}   banana   {%- endfilter -%})~", R"~({})~", R"~(bonono)~", true},
    {"generation_block", R"~(a{% generation %}gen{{ 1 }}{% endgeneration %}b)~", R"~({})~", R"~(agen1b)~", true},
    {"print_tuple", R"~({{ 1, 'a' }})~", R"~({})~", R"~((1, 'a'))~", true},
    {"dict_literal_in_print", R"~({{ {'a': {'b': [1, 2]}} }})~", R"~({})~", R"~({'a': {'b': [1, 2]}})~", true},
};

TEST(ChatRender, WhitespaceControlAsJinja2) {
  for (const Case& c : kWhitespace) run_case(c);
}

TEST(ChatRender, StatementsAsJinja2) {
  for (const Case& c : kStatements) run_case(c);
}

TEST(ChatRender, SecondRenderIsIndependent) {
  const Template t = Template::parse("{% set ns = namespace(n=0) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}", "t");
  EXPECT_EQ(t.render(nlohmann::ordered_json::object()), "1");
  EXPECT_EQ(t.render(nlohmann::ordered_json::object()), "1");
}

TEST(ChatRender, ContextKeyOrderIsKept) {
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}{{ d|tojson }}", R"({"d": {"z": 1, "a": 2}})"),
            R"(za{"z": 1, "a": 2})");
}

}  // namespace
}  // namespace moex::chat::testing
