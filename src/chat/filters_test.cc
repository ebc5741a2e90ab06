// Expressions (operators, tests, attribute and item access, methods, literals) and filters:
// each case's expected output (or exception class) is what jinja2 renders with transformers'
// environment, including its tojson.
#include "chat/chat_test_util.h"

namespace moex::chat::testing {
namespace {

const Case kExpressions[] = {
    {"arith", R"~({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }})~", R"~({})~", R"~(3 -4 1 2 3.5 1024 0.5 7 9)~", true},
    {"float_repr", R"~({{ 0.1 + 0.2 }} {{ 1.0 }} {{ 1e20 }} {{ 1e-5 }} {{ 123456789.125 }} {{ 1e16 }} {{ 1e15 }} {{ -0.0 }} {{ 2.5e-4 }})~", R"~({})~", R"~(0.30000000000000004 1.0 1e+20 1e-05 123456789.125 1e+16 1000000000000000.0 -0.0 0.00025)~", true},
    {"pow_left_assoc", R"~({{ 2 ** 3 ** 2 }})~", R"~({})~", R"~(64)~", true},
    {"unary_binds_tight", R"~({{ -2 ** 2 }} {{ -(2 ** 2) }} {{ not true == false }})~", R"~({})~", R"~(4 -4 True)~", true},
    {"string_ops", R"~({{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'a' ~ 1 ~ none ~ true }})~", R"~({})~", R"~(abcd ababab xxx a1NoneTrue)~", true},
    {"list_ops", R"~({{ [1] + [2, 3] }} {{ [0] * 3 }} {{ (1, 2) + (3,) }})~", R"~({})~", R"~([1, 2, 3] [0, 0, 0] (1, 2, 3))~", true},
    {"str_plus_int_errors", R"~({{ 'a' + 1 }})~", R"~({})~", R"~(TypeError: can only concatenate str (not "int") to str)~", false},
    {"compare_chain", R"~({{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }})~", R"~({})~", R"~(True False True True True True)~", true},
    {"compare_mixed_errors", R"~({{ 1 < 'a' }})~", R"~({})~", R"~(TypeError: '<' not supported between instances of 'int' and 'str')~", false},
    {"in_not_in", R"~({{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 1 in nothing }})~", R"~({})~", R"~(True True True True False)~", true},
    {"and_or_values", R"~({{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }}|{{ none or [] }})~", R"~({})~", R"~(x b |[])~", true},
    {"cond_expr", R"~({{ 'y' if true else 'n' }}{{ 'y' if false else 'n' }}[{{ 'y' if false }}])~", R"~({})~", R"~(yn[])~", true},
    {"is_tests", R"~({{ x is defined }}{{ y is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ true is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ true is boolean }}{{ false is false }}{{ true is true }})~", R"~({"x": 1})~", R"~(TrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrue)~", true},
    {"is_tests_args", R"~({{ 3 is divisibleby 3 }}{{ 4 is odd }}{{ 4 is even }}{{ 'a' is in ['a'] }}{{ 1 is eq 1 }}{{ 1 is equalto(2) }}{{ 2 is gt 1 }}{{ 'A' is upper }}{{ 'a' is lower }}{{ 1 is ne 2 }})~", R"~({})~", R"~(TrueFalseTrueTrueTrueFalseTrueTrueTrueTrue)~", true},
    {"is_not", R"~({{ x is not defined }}{{ x is not none }}{{ 'a' is not string }})~", R"~({"x": null})~", R"~(FalseFalseFalse)~", true},
    {"undefined_prints_empty", R"~([{{ missing }}][{{ d.nokey }}][{{ d['nokey'] }}][{{ l[5] }}][{{ none.attr }}])~", R"~({"d": {}, "l": [1]})~", R"~([][][][][])~", true},
    {"undefined_attr_of_undefined", R"~({{ missing.attr }})~", R"~({})~", R"~(UndefinedError: 'missing' is undefined)~", false},
    {"undefined_arith_errors", R"~({{ missing + 1 }})~", R"~({})~", R"~(UndefinedError: 'missing' is undefined)~", false},
    {"undefined_falsy", R"~({% if missing %}t{% else %}f{% endif %}{{ missing|length }}{{ missing|list }}{{ missing|default('dflt') }})~", R"~({})~", R"~(f0[]dflt)~", true},
    {"undefined_equality", R"~({{ missing == missing2 }}{{ missing == none }})~", R"~({})~", R"~(TrueFalse)~", true},
    {"attr_vs_item", R"~({{ d.items is callable }}|{{ d['items'] }}|{{ d.content }})~", R"~({"d": {"items": "field", "content": "c"}})~", R"~(True|field|c)~", true},
    {"dict_methods", R"~({{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }})~", R"~({"d": {"a": 1, "b": [2]}})~", R"~(1 None 5 ['a', 'b'] [1, [2]] [('a', 1), ('b', [2])])~", true},
    {"dict_items_len", R"~({{ d.items()|length }} {{ d.keys()|length }})~", R"~({"d": {"a": 1}})~", R"~(1 1)~", true},
    {"string_methods", R"~({{ ' ab '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}|{{ 'hello world'.title() }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'héllo'.find('l') }}{{ 'abc'.find('z') }}|{{ 'a-b'.split('-')|join('+') }})~", R"~({})~", R"~(ab|a|a|a|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a b', 'c']|HELLOhello|Hello World|TrueTrue|bba|2-1|a+b)~", true},
    {"string_format", R"~({{ '{}-{}'.format(1, 'x') }} {{ '{0}{0}'.format('a') }} {{ '{name}!'.format(name='N') }} {{ '{{}}'.format() }})~", R"~({})~", R"~(1-x aa N! {})~", true},
    {"percent_format", R"~({{ '%s and %d' % ('a', 3) }} {{ '%5.2f|' % 3.14159 }} {{ '%s' % 'one' }})~", R"~({})~", R"~(a and 3  3.14| one)~", true},
    {"slicing", R"~({{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ 'héllo'[1] }} {{ [1,2,3,4][1:] }} {{ [1,2,3,4][:-1] }} {{ [1,2,3,4][::2] }} {{ [1,2,3][-1] }} {{ 'abc'[-5:10] }})~", R"~({})~", R"~(el olleh é [2, 3, 4] [1, 2, 3] [1, 3] 3 abc)~", true},
    {"item_on_messages", R"~({{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages|length }})~", R"~({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]})~", R"~(user b 2)~", true},
    {"list_methods", R"~({{ [1, 2, 1].count(1) }} {{ [1, 2].index(2) }})~", R"~({})~", R"~(2 1)~", true},
    {"list_append_refused", R"~({% set l = [] %}{{ l.append(1) }})~", R"~({})~", R"~(SecurityError: access to attribute 'append' of 'list' object is unsafe.)~", false},
    {"dict_update_refused", R"~({% set d = {} %}{{ d.update({'a': 1}) }})~", R"~({})~", R"~(SecurityError: access to attribute 'update' of 'dict' object is unsafe.)~", false},
    {"dunder_refused", R"~({{ ''.__class__ }})~", R"~({})~", R"~()~", true},
    {"dunder_is_undefined", R"~({{ ''.__class__ is defined }})~", R"~({})~", R"~(False)~", true},
    {"range_global", R"~({{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(3, 0, -1)|list }})~", R"~({})~", R"~([0, 1, 2] [1, 4, 7] [3, 2, 1])~", true},
    {"dict_global", R"~({{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }})~", R"~({})~", R"~({'a': 1, 'b': 2} {'x': 1, 'y': 2})~", true},
    {"raise_exception", R"~({{ raise_exception('bad role: ' + 'x') }})~", R"~({})~", R"~(TemplateError: bad role: x)~", false},
    {"none_prints", R"~({{ none }} {{ true }} {{ false }} {{ [none, true, 'it''s'] }})~", R"~({})~", R"~(None True False [None, True, 'its'])~", true},
    {"str_repr_quotes", R"~({{ ["it's", 'say "hi"', 'both \' and "', 'tab\there', 'é'] }})~", R"~({})~", R"~(["it's", 'say "hi"', 'both \' and "', 'tab\there', 'é'])~", true},
    {"string_escapes", R"~({{ 'a\nb' }}|{{ "q\"q" }}|{{ '\u00e9\x41' }}|{{ 'back\\slash' }}|{{ 'unknown\d' }})~", R"~({})~", R"~(a
b|q"q|éA|back\slash|unknown\d)~", true},
    {"adjacent_strings", R"~({{ 'a' 'b' "c" }})~", R"~({})~", R"~(abc)~", true},
    {"call_non_callable", R"~({{ 'a'() }})~", R"~({})~", R"~(TypeError: 'str' object is not callable)~", false},
};

const Case kFilters[] = {
    {"f_trim_case", R"~([{{ '  a b  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ 'aBc'|upper }}][{{ 'aBc'|lower }}][{{ 'hello wORLD-x(y'|title }}][{{ 'hELLO'|capitalize }}])~", R"~({})~", R"~([a b][a][ABC][abc][Hello World-X(Y][Hello])~", true},
    {"f_length", R"~({{ 'héllo'|length }} {{ [1,2]|count }} {{ {'a': 1}|length }})~", R"~({})~", R"~(5 2 1)~", true},
    {"f_first_last", R"~({{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'abc'|first }} {{ []|first is defined }})~", R"~({})~", R"~(1 3 a False)~", true},
    {"f_join", R"~({{ [1, 'a', none]|join(', ') }} {{ users|join('/', attribute='name') }})~", R"~({"users": [{"name": "x"}, {"name": "y"}]})~", R"~(1, a, None x/y)~", true},
    {"f_default", R"~({{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }} {{ false|default('f', boolean=true) }})~", R"~({})~", R"~(d  d None f)~", true},
    {"f_tojson", R"~({{ {'b': 1, 'a': [1.5, true, none, 'é"\n']}|tojson }})~", R"~({})~", R"~({"b": 1, "a": [1.5, true, null, "é\"\n"]})~", true},
    {"f_tojson_indent", R"~({{ {'b': {'c': []}, 'a': {}}|tojson(indent=2) }})~", R"~({})~", R"~({
  "b": {
    "c": []
  },
  "a": {}
})~", true},
    {"f_tojson_options", "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ {'a': [1, 2]}|tojson(separators=(',', ':')) }} {{ 'é'|tojson(ensure_ascii=true) }} {{ {'a': 1}|tojson(indent='\t') }}", R"~({})~", "{\"a\": 2, \"b\": 1} {\"a\":[1,2]} \"\\u00e9\" {\n\t\"a\": 1\n}", true},
    {"f_tojson_undefined_errors", R"~({{ missing|tojson }})~", R"~({})~", R"~(TypeError: Object of type Undefined is not JSON serializable)~", false},
    {"f_tojson_generator_errors", R"~({{ [1]|map('string')|tojson }})~", R"~({})~", R"~(TypeError: Object of type generator is not JSON serializable)~", false},
    {"f_string_int_float", R"~({{ 1|string ~ 'x' }} {{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '2.5'|float * 2 }} {{ 3|float }} {{ 'ff'|int(base=16) }})~", R"~({})~", R"~(1x 43 4 0 7 5.0 3.0 255)~", true},
    {"f_list_items", R"~({{ 'ab'|list }} {{ {'a': 1}|items|list }} {{ (1, 2)|list }})~", R"~({})~", R"~(['a', 'b'] [('a', 1)] [1, 2])~", true},
    {"f_replace", R"~({{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 1) }} {{ 'abc'|replace('', '-') }})~", R"~({})~", R"~(bbb baa -a-b-c-)~", true},
    {"f_select_reject", R"~({{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ [1,2,3]|select('gt', 1)|list }})~", R"~({})~", R"~([1, 3] [2, 4] [1, 'a'] [2, 3])~", true},
    {"f_selectattr", R"~({{ ms|selectattr('role', 'equalto', 'user')|map(attribute='c')|list }} {{ ms|rejectattr('role', 'eq', 'user')|map(attribute='c')|list }} {{ ms|selectattr('x')|list|length }} {{ ms|selectattr('x', 'defined')|list|length }})~", R"~({"ms": [{"role": "user", "c": 1}, {"role": "bot", "c": 2, "x": true}, {"role": "user", "c": 3}]})~", R"~([1, 3] [2] 1 1)~", true},
    {"f_map", R"~({{ ['a','b']|map('upper')|join }} {{ ds|map(attribute='a.b')|list }} {{ ds|map(attribute='z', default='-')|list }} {{ [[1,2],[3]]|map('length')|list }})~", R"~({"ds": [{"a": {"b": 1}}, {"a": {"b": 2}}]})~", R"~(AB [1, 2] ['-', '-'] [2, 1])~", true},
    {"f_map_none_input", R"~({{ none|map('upper')|list }} {{ none|selectattr('a')|list }})~", R"~({})~", R"~([] [])~", true},
    {"f_generator_truthy", R"~({% if []|select('odd') %}truthy{% endif %})~", R"~({})~", R"~(truthy)~", true},
    {"f_generator_length_errors", R"~({{ [1]|map('string')|length }})~", R"~({})~", R"~(TypeError: object of type 'generator' has no len())~", false},
    {"f_unique", R"~({{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }} {{ ds|unique(attribute='k')|map(attribute='v')|list }})~", R"~({"ds": [{"k": 1, "v": "x"}, {"k": 1, "v": "y"}, {"k": 2, "v": "z"}]})~", R"~(['a', 'b'] ['a', 'A'] ['x', 'z'])~", true},
    {"f_sort", R"~({{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ ds|sort(attribute='k')|map(attribute='v')|join }})~", R"~({"ds": [{"k": 2, "v": "b"}, {"k": 1, "v": "a"}, {"k": 2, "v": "c"}]})~", R"~([1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] abc)~", true},
    {"f_dictsort", R"~({{ {'b': 1, 'A': 2, 'c': 0}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value') }} {{ {'b': 1, 'a': 2}|dictsort(reverse=true) }})~", R"~({})~", R"~([('A', 2), ('b', 1), ('c', 0)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)])~", true},
    {"f_reverse", R"~({{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ [1, 2]|reverse|join }})~", R"~({})~", R"~(cba [3, 2, 1] 21)~", true},
    {"f_indent", R"~([{{ 'a\nb\n\nc'|indent }}][{{ 'a\nb'|indent(2, true) }}][{{ 'a\n\nb'|indent(2, blank=true) }}][{{ 'x\ny'|indent('> ') }}])~", R"~({})~", R"~([a
    b

    c][  a
  b][a
  
  b][x
> y])~", true},
    {"f_safe_escape", R"~({{ '<a>'|safe }} {{ '<a & "b">'|escape }} {{ '<'|e }} {{ ('<'|safe) + '<' }} {{ '<' + ('<'|safe) }} {{ ('<'|safe) ~ '<' }})~", R"~({})~", R"~(<a> &lt;a &amp; &#34;b&#34;&gt; &lt; <&lt; &lt;< <<)~", true},
    {"f_round_abs", R"~({{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 1.234|round(1, 'ceil') }} {{ 1.26|round(1, 'floor') }} {{ 5|round }} {{ -3|abs }} {{ -2.5|abs }})~", R"~({})~", R"~(2.0 4.0 2.67 1.3 1.2 5 3 2.5)~", true},
    {"f_min_max_sum", R"~({{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ [1, 2, 3]|sum }} {{ ds|sum(attribute='n') }} {{ ['B', 'a']|min }} {{ ds|max(attribute='n') }})~", R"~({"ds": [{"n": 1}, {"n": 5}]})~", R"~(1 3 6 6 a {'n': 5})~", true},
    {"f_wordcount_center", R"~({{ 'one two  three'|wordcount }} [{{ 'ab'|center(6) }}])~", R"~({})~", R"~(3 [  ab  ])~", true},
    {"f_batch", R"~({{ [1,2,3,4,5]|batch(2)|list }} {{ [1,2,3]|batch(2, 'x')|list }})~", R"~({})~", R"~([[1, 2], [3, 4], [5]] [[1, 2], [3, 'x']])~", true},
    {"f_format_filter", R"~({{ '%s-%s'|format('a', 'b') }})~", R"~({})~", R"~(a-b)~", true},
    {"f_attr", R"~({{ d|attr('k') }})~", R"~({"d": {"k": 1}})~", R"~()~", true},
    {"f_unknown_in_if_is_runtime", R"~({% if false %}{{ x|nosuchfilter }}{% endif %}ok)~", R"~({})~", R"~(ok)~", true},
    {"f_unknown_in_if_runs", R"~({% if true %}{{ x|nosuchfilter }}{% endif %})~", R"~({})~", R"~(TemplateRuntimeError: No filter named 'nosuchfilter' found.)~", false},
};

TEST(ChatExpressions, AsJinja2) {
  for (const Case& c : kExpressions) run_case(c);
}

TEST(ChatFilters, AsJinja2) {
  for (const Case& c : kFilters) run_case(c);
}

}  // namespace
}  // namespace moex::chat::testing
