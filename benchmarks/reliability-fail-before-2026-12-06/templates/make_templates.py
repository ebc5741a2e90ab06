#!/usr/bin/env python3
"""Writes the reliability issue's hostile templates (one per shape) and a one-message
conversation into the directory given (default: this one's `out/`)."""
import os
import sys

CASES = {
    "chain_plus_10k": "{{ " + " + ".join(["1"] * 10000) + " }}",
    "chain_tilde_10k": "{{ " + " ~ ".join(["'a'"] * 10000) + " }}",
    "chain_and_10k": "{{ " + " and ".join(["true"] * 10000) + " }}",
    "chain_attr_10k": "{{ x" + ".a" * 10000 + " }}",
    "chain_index_10k": "{{ x" + "[0]" * 10000 + " }}",
    "chain_filter_10k": "{{ 'a'" + "|trim" * 10000 + " }}",
    "chain_plus_100k": "{{ " + " + ".join(["1"] * 100000) + " }}",
    "namespace_self": "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|string }}",
    "list_self": "{% set l = [] %}{% set _ = l.append(l) %}{{ l|string }}",
    "deep_list_tojson": "{% set ns = namespace(v=[]) %}{% for i in range(100000) %}"
                        "{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v|tojson }}",
    "unique_100k": "{{ range(100000)|list|unique|list|length }}",
    "macro_twice": "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}"
                   "{% endmacro %}{{ f(30) }}",
    "indent_1e9": "{{ 'a\nb'|indent(1000000000) }}",
    "format_precision": "{{ '%.1000000000f' % 1.5 }}",
    "abs_int64_min": "{{ (-9223372036854775807 - 1)|abs }}",
    "int_1e19": "{{ 1e19|int }}",
}

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
os.makedirs(out, exist_ok=True)
for name, text in CASES.items():
    with open(os.path.join(out, name + ".jinja"), "w") as f:
        f.write(text)
with open(os.path.join(out, "messages.json"), "w") as f:
    f.write('[{"role": "user", "content": "hi"}]')
