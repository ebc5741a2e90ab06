#!/usr/bin/env python3
"""Structured output through `moex serve` with the official `openai` client, on a tiny
random-weight checkpoint (its unconstrained output is gibberish, so the grammar mask does all
the work): every output of a suite of JSON schemas (nested objects, arrays, enums, anyOf,
numbers with bounds, strings with patterns, required and optional properties) parses and
validates with `jsonschema`, sampled at temperature 1 over several seeds, whole and
streamed; json_object gives an object; guided_choice, guided_regex and an EBNF grammar
(grammar / guided_grammar) match; hostile schemas
(recursive, huge, deep, invalid) are a 400 naming the field within a time bound.
With --engine OFF (a build without xgrammar) it checks the 400 that says so instead.

usage: serve_structured_test.py --moex BIN --work DIR [--engine ON|OFF]
"""
import json
import re
import sys
import time

import jsonschema
import openai

import serve_openai_test as base
from serve_openai_test import Server, check

SEEDS = range(12)
MAX_TOKENS = 400

SCHEMAS = {
    "nested objects, required and optional": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "owner": {"type": "object",
                      "properties": {"name": {"type": "string", "maxLength": 12},
                                     "admin": {"type": "boolean"}},
                      "required": ["name"]},
            "note": {"type": "string", "maxLength": 8}},
        "required": ["id", "owner"]},
    "arrays with item bounds": {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 6},
                                "minItems": 1, "maxItems": 4},
                       "grid": {"type": "array", "maxItems": 3,
                                "items": {"type": "array", "items": {"type": "integer"},
                                          "maxItems": 3}}},
        "required": ["tags", "grid"]},
    "enums and const": {
        "type": "object",
        "properties": {"color": {"enum": ["red", "green", "blue"]},
                       "size": {"enum": [1, 2, 3, None]},
                       "kind": {"const": "fixed"}},
        "required": ["color", "size", "kind"]},
    "anyOf": {
        "type": "object",
        "properties": {"value": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 9},
                                           {"type": "string", "pattern": "^[a-z]{2,4}$"},
                                           {"type": "null"}]}},
        "required": ["value"]},
    "numbers with bounds": {
        "type": "object",
        "properties": {"age": {"type": "integer", "minimum": 18, "maximum": 99},
                       "score": {"type": "number", "minimum": -1.5, "maximum": 2.5},
                       "count": {"type": "integer", "exclusiveMinimum": 0}},
        "required": ["age", "score", "count"]},
    "strings with patterns": {
        "type": "object",
        "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                       "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2,3}$"},
                       "when": {"type": "string", "pattern": "^20[0-9]{2}-[01][0-9]$"}},
        "required": ["zip", "code", "when"]},
    "array at the top, $defs": {
        "type": "array", "minItems": 1, "maxItems": 3,
        "items": {"$ref": "#/$defs/point"},
        "$defs": {"point": {"type": "object",
                            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                            "required": ["x", "y"]}}},
}


def chat(client, seed, **kw):
    return client.chat.completions.create(
        model="model", messages=[{"role": "user", "content": "Answer in JSON."}],
        max_tokens=MAX_TOKENS, temperature=1.0, seed=seed, **kw)


def schema_format(name, schema):
    return {"type": "json_schema",
            "json_schema": {"name": re.sub(r"[^a-z]", "_", name), "schema": schema,
                            "strict": True}}


def validates(text, schema):
    try:
        jsonschema.validate(json.loads(text), schema)
        return True, ""
    except (ValueError, jsonschema.ValidationError) as e:
        return False, str(e).splitlines()[0]


def suite(srv, tok):
    client = srv.client()
    plain_bad = 0
    for seed in SEEDS:
        r = chat(client, seed)
        plain_bad += not validates(r.choices[0].message.content, {"type": "object"})[0]
    check(plain_bad == len(SEEDS), f"unconstrained output is not JSON ({plain_bad}/{len(SEEDS)}"
          " not objects): the mask is what makes the outputs below valid")
    for name, schema in SCHEMAS.items():
        fmt = schema_format(name, schema)
        bad, lengths = [], []
        t0 = time.time()
        for seed in SEEDS:
            c = chat(client, seed, response_format=fmt).choices[0]
            ok, why = validates(c.message.content, schema)
            lengths.append(len(c.message.content))
            if not ok or c.finish_reason != "stop":
                bad.append((seed, c.finish_reason, why, c.message.content[:200]))
        check(not bad, f"json_schema '{name}': {len(SEEDS)} outputs validate, finish_reason stop "
              f"(lengths {lengths}, {time.time() - t0:.1f} s){' ' + repr(bad) if bad else ''}")
    # Streamed: the pieces join into a valid document.
    name = "nested objects, required and optional"
    pieces = [ch.choices[0].delta.content or "" for ch in chat(
        client, 3, response_format=schema_format(name, SCHEMAS[name]), stream=True)
        if ch.choices]
    ok, why = validates("".join(pieces), SCHEMAS[name])
    check(ok and len(pieces) > 3, f"streamed json_schema: {len(pieces)} chunks join into valid "
          f"JSON {why}")
    # json_object: any object. Its strings have no bound, and a random model closes one by
    # chance (about 1 token in 250 here), so `"` and `}` get a bias to end within max_tokens.
    bias = {str(tok.token_to_id(t)): 4 for t in ['"', "}"]}
    outs = [chat(client, s, response_format={"type": "json_object"}, logit_bias=bias)
            .choices[0].message.content for s in SEEDS]
    bad = [(o[:120], validates(o, {"type": "object"})[1]) for o in outs
           if not validates(o, {"type": "object"})[0]]
    check(not bad, f"json_object: every output is a JSON object {bad if bad else ''}")
    # vLLM's guided_choice and guided_regex, also on /v1/completions.
    choices = ["yes", "no", "maybe later", "naïve"]
    outs = [chat(client, s, extra_body={"guided_choice": choices}).choices[0].message.content
            for s in SEEDS]
    check(all(o in choices for o in outs), f"guided_choice: each output one of them ({outs})")
    o = chat(client, 0, extra_body={"guided_choice": ["naïve ☃"]}).choices[0].message.content
    check(o == "naïve ☃", f"guided_choice of one non-ASCII string gives it ({o!r})")
    pattern = r"[A-Z][a-z]{1,5}-[0-9]{3}"
    outs = [client.completions.create(model="model", prompt="id:", max_tokens=40, seed=s,
                                      temperature=1.0, extra_body={"guided_regex": pattern})
            .choices[0].text for s in SEEDS]
    check(all(re.fullmatch(pattern, o) for o in outs), f"guided_regex on completions ({outs})")
    # An EBNF (GBNF-style) grammar: llama-server's `grammar` and vLLM's `guided_grammar`.
    gbnf = 'root ::= "{\\"ok\\": " ("true" | "false") ", \\"n\\": " [1-9] [0-9]? "}"'
    outs = [chat(client, s, extra_body={key: gbnf}).choices[0].message.content
            for s, key in zip(SEEDS, ["grammar", "guided_grammar"] * len(SEEDS))]
    check(all(re.fullmatch(r'\{"ok": (true|false), "n": [1-9][0-9]?\}', o) for o in outs),
          f"grammar / guided_grammar (EBNF) ({outs[:3]})")


def hostile(srv):
    client = srv.client()
    deep = {"type": "string"}
    for _ in range(40):
        deep = {"type": "array", "items": deep}
    cases = [
        ("recursive $ref", {"$ref": "#"}),
        ("mutually recursive $defs", {"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/b"}},
                                                "b": {"$ref": "#/$defs/a"}},
                                      "$ref": "#/$defs/a"}),
        ("a $ref to another document", {"$ref": "https://example.com/schema.json"}),
        ("40 levels deep", deep),
        ("huge (40 KB)", {"type": "string", "description": "x" * 40000}),
        ("maxLength 10^8", {"type": "string", "maxLength": 10 ** 8}),
        ("invalid type", {"type": 5}),
        ("unsatisfiable", {"type": "integer", "minimum": 5, "maximum": 1}),
    ]
    for what, schema in cases:
        t0 = time.time()
        try:
            chat(client, 0, response_format=schema_format("x", schema))
            check(False, f"hostile schema ({what}): refused")
        except openai.BadRequestError as e:
            param = (e.body or {}).get("param")
            check(param == "response_format.json_schema.schema" and time.time() - t0 < 5,
                  f"hostile schema ({what}): 400 naming {param} in {time.time() - t0:.2f} s: "
                  f"{(e.body or {}).get('message', '')[:90]}")


    # Regexes and grammars whose compile time grows fast with their size: refused by size.
    for field, text in (("guided_regex", "(a|b|c|d)*" * 60),
                        ("grammar", "root ::= " + " ".join(['("a" | "b")*'] * 100))):
        t0 = time.time()
        try:
            chat(client, 0, extra_body={field: text})
            check(False, f"a {len(text)}-byte {field} of stars: refused")
        except openai.BadRequestError as e:
            param = (e.body or {}).get("param")
            check(param == field and time.time() - t0 < 5, f"a {len(text)}-byte {field} of "
                  f"stars: 400 naming {param} in {time.time() - t0:.2f} s")


def no_engine(srv):
    try:
        chat(srv.client(), 0, response_format={"type": "json_object"})
        check(False, "without a grammar engine json_object is refused")
    except openai.BadRequestError as e:
        msg = (e.body or {}).get("message", "")
        check((e.body or {}).get("param") == "response_format" and "no grammar engine" in msg,
              f"without a grammar engine: 400 naming response_format ({msg})")


def main():
    engine = "ON"
    if "--engine" in sys.argv:
        i = sys.argv.index("--engine")
        engine = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    a, work, d = base.setup()
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    eos = [tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")]
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    srv = Server(a.moex, d, work, "server", "--parallel", "2")
    try:
        if engine == "ON":
            suite(srv, tok)
            hostile(srv)
        else:
            no_engine(srv)
    finally:
        rc = srv.stop()
    check(rc == 0, f"SIGTERM: exit code 0 (got {rc})")
    base.finish("serve structured test")


if __name__ == "__main__":
    main()
