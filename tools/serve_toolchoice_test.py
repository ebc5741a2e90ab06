#!/usr/bin/env python3
"""Constrained tool calls through `moex serve` with the official `openai` client, on a tiny
random-weight checkpoint with Qwen3's chat template from llama.cpp's corpus (Hermes calls).
A random model writes gibberish, never a call (checked), so the grammar does all the work:
every answer to tool_choice "required", a named function, and a strict tool (auto) ends with
finish_reason "tool_calls", names a tool it may name, and its arguments validate with
`jsonschema` against the tool's parameters; a stream's argument deltas (in pieces, index
stable, id and name in the first) join into the arguments of the same request answered whole.
Then the same model with Qwen3-Coder's template (qwen3_coder calls, <function=N><parameter=K>):
required, without parallel calls, and named answers are calls whose parameters read back valid
(text values from enum literals, JSON for integer and boolean parameters), and a text parameter
bounded by maxLength is a 400. With --engine OFF (a build without xgrammar) it checks the 400
that says so instead.

usage: serve_toolchoice_test.py --moex BIN --work DIR --templates CORPUS_DIR [--engine ON|OFF]
"""
import json
import sys
import time
from pathlib import Path

import jsonschema
import openai
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).parent))
import serve_openai_test as base  # noqa: E402
from serve_openai_test import Server, check  # noqa: E402

SEEDS = range(6)
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "enum": ["Paris", "Zürich", "Oslo"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7},
                          "unit": {"enum": ["c", "f"]}},
           "required": ["city"]}
TIME = {"type": "object",
        "properties": {"utc": {"type": "boolean"}, "zone": {"type": "string", "maxLength": 6}},
        "required": ["utc"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
USER = [{"role": "user", "content": "Weather in Paris, and the time?"}]
# Qwen3's template with thinking off: the prompt holds an empty think block, so the answer
# starts with the calls.
NO_THINK = {"chat_template_kwargs": {"enable_thinking": False}}


# Where the grammar allows the end of the turn (after a complete call), a random model would
# as likely write another call, and another: a bias on <|im_end|> ends most answers there
# (inside a call the grammar masks it anyway).
END_BIAS = {}


def chat(client, seed, **kw):
    extra = dict(NO_THINK, **kw.pop("extra_body", {}))
    kw.setdefault("logit_bias", END_BIAS)
    return client.chat.completions.create(model="m", messages=USER, max_tokens=300,
                                          temperature=1.0, seed=seed, extra_body=extra, **kw)


def stream(client, seed, **kw):
    """(calls by index, finish_reason, argument deltas per index, content) of a stream."""
    calls, pieces, finish, content = {}, {}, None, ""
    extra = dict(NO_THINK, **kw.pop("extra_body", {}))
    kw.setdefault("logit_bias", END_BIAS)
    for ch in client.chat.completions.create(model="m", messages=USER, max_tokens=300,
                                             temperature=1.0, seed=seed, stream=True,
                                             extra_body=extra, **kw):
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            first = tc.index not in calls
            slot = calls.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
            if first != bool(tc.id) or first != bool(tc.function and tc.function.name):
                delta_problems.append(str(tc))
            slot["name"] += (tc.function.name or "") if tc.function else ""
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
                pieces[tc.index] = pieces.get(tc.index, 0) + 1
        finish = ch.choices[0].finish_reason or finish
    return calls, finish, pieces, content


delta_problems = []


def problems(choice, names, one=False):
    """What is wrong with an answer that must be calls to `names` (empty when nothing)."""
    m = choice.message
    out = []
    if choice.finish_reason != "tool_calls":
        out.append(f"finish_reason {choice.finish_reason}")
    if m.content:
        out.append(f"content {m.content[:80]!r}")
    calls = m.tool_calls or []
    if not calls or (one and len(calls) != 1):
        out.append(f"{len(calls)} calls")
    for c in calls:
        if c.function.name not in names:
            out.append(f"name {c.function.name}")
            continue
        try:
            jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])
        except (ValueError, jsonschema.ValidationError) as e:
            out.append(f"arguments {c.function.arguments!r}: {str(e).splitlines()[0]}")
    return out


def suite(srv, tok):
    client = srv.client()
    plain = [chat(client, s, tools=TOOLS).choices[0] for s in SEEDS]
    check(all(not c.message.tool_calls and c.finish_reason != "tool_calls" for c in plain),
          "unconstrained (auto), the random model writes no call: the grammar is what makes "
          "the calls below")
    cases = [
        ("tool_choice required", {"tool_choice": "required"}, {"get_weather", "get_time"}, False),
        ("required, parallel_tool_calls false",
         {"tool_choice": "required", "parallel_tool_calls": False}, {"get_weather", "get_time"},
         True),
        ("a named function", {"tool_choice": {"type": "function",
                                              "function": {"name": "get_time"}}},
         {"get_time"}, True),
    ]
    for what, kw, names, one in cases:
        t0, bad, ncalls = time.time(), [], []
        for s in SEEDS:
            c = chat(client, s, tools=TOOLS, **kw).choices[0]
            ncalls.append(len(c.message.tool_calls or []))
            if problems(c, names, one):
                bad.append((s, problems(c, names, one)))
        check(not bad, f"{what}: {len(SEEDS)} answers are calls to {sorted(names)} whose arguments "
              f"validate, finish_reason tool_calls (calls per answer {ncalls}, "
              f"{time.time() - t0:.1f} s){' ' + repr(bad) if bad else ''}")

    # strict: true under auto: the text is free; a call, once opened, has valid arguments. A
    # random model opens one by chance only (its pieces get a bias here), and in these seeds
    # it never completed "<tool_call>" (the tokenizer spells it in several pieces): what is
    # checked end to end is that the request is taken and any call that appears validates;
    # the constraint itself is ToolCallGrammar.AutoLeavesTextFreeAndConstrainsAnOpenedCall.
    bias = {str(i): 6 for i in tok.encode("<tool_call>", add_special_tokens=False).ids}
    strict = [{"type": "function", "function": dict(t["function"], strict=True)} for t in TOOLS]
    t0, bad, opened = time.time(), [], 0
    for s in SEEDS:
        c = chat(client, s, tools=strict, parallel_tool_calls=False, logit_bias=bias).choices[0]
        if c.message.tool_calls:
            opened += 1
            p = [x for x in problems(c, set(SCHEMAS), one=True) if not x.startswith("content")]
            if p:
                bad.append((s, p))
    check(not bad, f"strict tools (auto): taken; {opened} of {len(SEEDS)} answers opened a call, "
          f"each valid ({time.time() - t0:.1f} s){' ' + repr(bad) if bad else ''}")

    # Streamed: the same request, the same seed: the same calls; arguments come in pieces.
    # How many pieces a stream gets depends on how many tokens the scheduler made before the
    # HTTP thread next wrote (a loaded machine writes a short call's arguments in one delta),
    # so the pieces are asked of the streams together; ToolCalls.Hermes* split every answer
    # at every byte for the parser itself.
    most_pieces = 0
    for what, kw in [("required", {"tool_choice": "required"}),
                     ("named", {"tool_choice": {"type": "function",
                                                "function": {"name": "get_weather"}}})]:
        for s in SEEDS[:3]:
            whole = chat(client, s, tools=TOOLS, **kw).choices[0]
            calls, finish, pieces, content = stream(client, s, tools=TOOLS, **kw)
            want = [(c.function.name, c.function.arguments) for c in whole.message.tool_calls]
            got = [(calls[i]["name"], calls[i]["arguments"]) for i in sorted(calls)]
            most_pieces = max([most_pieces] + [pieces.get(i, 0) for i in calls])
            check(got == want and finish == whole.finish_reason == "tool_calls"
                  and sorted(calls) == list(range(len(calls))) and not content
                  and all(pieces.get(i, 0) >= 1 for i in calls),
                  f"streamed {what} (seed {s}): indexes {sorted(calls)}, argument deltas "
                  f"{[pieces.get(i, 0) for i in sorted(calls)]} join into the whole answer's "
                  f"arguments{'' if got == want else f' ({got} != {want})'}")
    check(most_pieces > 1, f"streamed calls: arguments in pieces (at most {most_pieces} deltas "
          f"for one call over the 6 streams)")

    check(not delta_problems, f"streams: a call's id and name in its first delta only "
          f"{delta_problems[:3]}")

    # 400s naming the field.
    for kw, param in [
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
         "tool_choice.function.name"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}},
         "tool_choice"),
    ]:
        try:
            chat(client, 0, **kw)
            check(False, f"{param}: refused")
        except openai.BadRequestError as e:
            check(e.body.get("param") == param, f"400 naming {param} ({e.body.get('message')})")


# Qwen3-Coder's calls are XML: a text parameter is raw text, so every one here is an enum (a
# random model would not end free text) and a maxLength on text is refused.
CODER_TIME = {"type": "object",
              "properties": {"utc": {"type": "boolean"},
                             "zone": {"type": "string", "enum": ["UTC", "CET"]}},
              "required": ["utc"]}
CODER_TOOLS = [TOOLS[0], {"type": "function", "function": {"name": "get_time",
                                                           "parameters": CODER_TIME}}]


def coder_suite(srv):
    client = srv.client()
    check("tool-call parser qwen3_coder" in srv.log.read_text(),
          "Qwen3-Coder's template: moex serve reads its calls as qwen3_coder")
    SCHEMAS["get_time"] = CODER_TIME
    cases = [
        ("qwen3_coder: required", {"tool_choice": "required"}, {"get_weather", "get_time"},
         False),
        ("qwen3_coder: required, parallel_tool_calls false",
         {"tool_choice": "required", "parallel_tool_calls": False}, {"get_weather", "get_time"},
         True),
        ("qwen3_coder: a named function",
         {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
         {"get_weather"}, True),
    ]
    for what, kw, names, one in cases:
        t0, bad, ncalls, args = time.time(), [], [], []
        for s in SEEDS:
            c = chat(client, s, tools=CODER_TOOLS, **kw).choices[0]
            ncalls.append(len(c.message.tool_calls or []))
            args += [x.function.arguments for x in c.message.tool_calls or []][:1]
            if problems(c, names, one):
                bad.append((s, problems(c, names, one)))
        check(not bad, f"{what}: {len(SEEDS)} answers are calls to {sorted(names)} whose "
              f"arguments validate, finish_reason tool_calls (calls per answer {ncalls}, e.g. "
              f"{args[:2]}, {time.time() - t0:.1f} s){' ' + repr(bad) if bad else ''}")
    # Streamed: an XML call is held until it closes, its arguments in one delta.
    kw = {"tool_choice": "required"}
    whole = chat(client, 0, tools=CODER_TOOLS, **kw).choices[0]
    calls, finish, pieces, content = stream(client, 0, tools=CODER_TOOLS, **kw)
    want = [(c.function.name, c.function.arguments) for c in whole.message.tool_calls]
    got = [(calls[i]["name"], calls[i]["arguments"]) for i in sorted(calls)]
    check(got == want and finish == "tool_calls" and not content,
          f"qwen3_coder streamed: the calls of the whole answer ({len(got)})")
    bounded = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"s": {"type": "string", "maxLength": 4}}}}}]
    try:
        chat(client, 0, tools=bounded, tool_choice="required")
        check(False, "qwen3_coder: a maxLength text parameter is refused")
    except openai.BadRequestError as e:
        msg = (e.body or {}).get("message", "")
        check(e.body.get("param") == "tool_choice" and "maxLength" in msg,
              f"qwen3_coder: a maxLength text parameter is a 400 ({msg})")


def no_engine(srv):
    try:
        chat(srv.client(), 0, tools=TOOLS, tool_choice="required")
        check(False, "without a grammar engine tool_choice required is refused")
    except openai.BadRequestError as e:
        msg = (e.body or {}).get("message", "")
        check(e.body.get("param") == "tool_choice" and "no grammar engine" in msg,
              f"without a grammar engine: 400 naming tool_choice ({msg})")


def main():
    a, work, d = base.setup("Qwen-Qwen3-0.6B.jinja", [("--engine", "ON")])
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    eos = [tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")]
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    END_BIAS[str(eos[0])] = 5
    t0 = time.time()
    srv = Server(a.moex, d, work, "server", "--parallel", "2")
    try:
        if a.engine == "ON":
            suite(srv, tok)
        else:
            no_engine(srv)
    finally:
        rc = srv.stop()
    check(rc == 0, f"SIGTERM: exit code 0 (got {rc})")
    if a.engine == "ON":
        (d / "chat_template.jinja").write_text((Path(a.templates) / "Qwen3-Coder.jinja").read_text())
        srv = Server(a.moex, d, work, "coder", "--parallel", "2")
        try:
            coder_suite(srv)
        finally:
            rc = srv.stop()
        check(rc == 0, f"SIGTERM (Qwen3-Coder's template): exit code 0 (got {rc})")
    print(f"serve toolchoice test: {time.time() - t0:.1f} s")
    base.finish("serve toolchoice test")


if __name__ == "__main__":
    main()
