#!/usr/bin/env python3
"""`moex serve --spec ngram` against a server without it, with the official openai client, on a
tiny model with attention only (tiny-qwen3-moe) and one with recurrent states (tiny-qwen3-next):
several requests of different lengths at once (on 3 slots), each streamed and not, give the same
text, finish reason, token count and logprobs: completions and chat, greedy and seeded sampling,
logit bias, penalties, min_tokens, a stop string, logprobs, structured output where the build
has xgrammar; and, with --templates, tool calls on Qwen3's template (tool_choice required and
auto, their arguments parsed from the output). Random weights never repeat text on their own, so most requests bias the ids of
a phrase their prompt repeats: the output then loops among them and prompt lookup finds drafts.
/metrics must count accepted drafts (and rejected ones, and on the recurrent model rewinds),
so the comparison cannot pass without speculation running. Bad --spec values are refused.
--spec mtp runs on tiny-glm4-moe with a random MTP module and the prompt cache on: the same
outputs, drafts counted, prefixes loaded from the cache.

usage: serve_spec_test.py --moex BIN --work DIR [--templates CORPUS_DIR]
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import openai
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).parent))
import serve_openai_test  # noqa: E402
from serve_openai_test import ENV, TEMPLATE, Server, check, run  # noqa: E402

PRESETS = ["tiny-qwen3-moe", "tiny-qwen3-next"]
RECURRENT = {"tiny-qwen3-next"}
PHRASE = " alpha beta gamma delta"
SPEC_SETTINGS = [["--spec", "ngram"],
                 ["--spec", "ngram", "--spec-draft", "5", "--spec-ngram-min", "1",
                  "--spec-ngram-max", "2"]]


def requests(phrase_ids, im_end, stop_string):
    """(name, api, arguments) of the requests every server gets, each streamed and not."""
    bias = {str(i): 30 for i in phrase_ids}
    repeated = "Say it again:" + PHRASE * 3
    ids_out = {"return_tokens_as_token_ids": True}
    user = [{"role": "user", "content": repeated}]
    return [
        ("completion, logprobs", "completion",
         dict(prompt=repeated, max_tokens=20, logit_bias=bias, logprobs=2, extra_body=ids_out)),
        ("chat, stop string", "chat",
         dict(messages=user, max_tokens=33, logit_bias=bias,
              **({"stop": [stop_string]} if stop_string else {}))),
        ("completion, no bias", "completion",
         dict(prompt="The weather today is", max_tokens=12)),
        ("chat, penalties", "chat",
         dict(messages=user, max_tokens=25, logit_bias=bias, frequency_penalty=0.5,
              presence_penalty=0.3, extra_body={"repetition_penalty": 1.1})),
        ("completion, sampled with a seed", "completion",
         dict(prompt=repeated, max_tokens=30, logit_bias=bias, temperature=0.9, seed=11)),
        ("chat, min_tokens then the end of turn", "chat",
         dict(messages=user, max_tokens=40, logit_bias={str(im_end): 30},
              extra_body={"min_tokens": 6})),
        ("chat, logprobs", "chat",
         dict(messages=user, max_tokens=17, logit_bias=bias, logprobs=True, top_logprobs=2)),
        ("chat, json_object", "chat",
         dict(messages=user, max_tokens=24, response_format={"type": "json_object"})),
    ]


def outcome(client, api, kw, stream):
    """What a request gave: text, finish reason, tokens and logprobs (or the error status)."""
    kw = {"model": "m", "temperature": 0, **kw}
    try:
        if api == "completion":
            if stream:
                chunks = list(client.completions.create(stream=True, **kw))
                return {"text": "".join(c.choices[0].text for c in chunks if c.choices),
                        "finish": [c.choices[0].finish_reason for c in chunks
                                   if c.choices and c.choices[0].finish_reason]}
            r = client.completions.create(**kw)
            lp = r.choices[0].logprobs
            return {"text": r.choices[0].text, "finish": [r.choices[0].finish_reason],
                    "tokens": r.usage.completion_tokens,
                    "logprobs": lp and [lp.tokens, lp.token_logprobs, lp.top_logprobs]}
        if stream:
            chunks = list(client.chat.completions.create(stream=True, **kw))
            return {"text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
                    "finish": [c.choices[0].finish_reason for c in chunks
                               if c.choices and c.choices[0].finish_reason]}
        r = client.chat.completions.create(**kw)
        lp = r.choices[0].logprobs
        return {"text": r.choices[0].message.content, "finish": [r.choices[0].finish_reason],
                "tokens": r.usage.completion_tokens,
                "logprobs": lp and [[t.token, t.logprob, [(a.token, a.logprob)
                                                         for a in t.top_logprobs]]
                                    for t in lp.content]}
    except openai.APIStatusError as e:
        return {"status": e.status_code}


def serve_all(srv, reqs):
    """Every request streamed and not, all at once; {(name, stream): outcome}."""
    client = srv.client()
    out = {}

    def one(name, api, kw, stream):
        out[(name, stream)] = outcome(client, api, kw, stream)

    threads = [threading.Thread(target=one, args=(n, api, kw, s))
               for n, api, kw in reqs for s in (False, True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


TOOLS = [{"type": "function", "function": {
    "name": "get_weather",
    "parameters": {"type": "object", "required": ["city"],
                   "properties": {"city": {"enum": ["Paris", "Oslo"]},
                                  "days": {"type": "integer", "minimum": 1, "maximum": 7}}}}}]


def tool_outcome(client, choice, seed, stream):
    """A tool-call answer on Qwen3's template (thinking off): content, calls, finish reason."""
    kw = dict(model="m", messages=[{"role": "user", "content": "Weather in Paris and Oslo?"}],
              max_tokens=120, temperature=1.0, seed=seed, tools=TOOLS, tool_choice=choice,
              extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    try:
        if not stream:
            c = client.chat.completions.create(**kw).choices[0]
            return {"content": c.message.content, "finish": c.finish_reason,
                    "calls": [(t.function.name, t.function.arguments)
                              for t in c.message.tool_calls or []]}
        content, calls, finish = "", {}, None
        for ch in client.chat.completions.create(stream=True, **kw):
            if not ch.choices:
                continue
            d = ch.choices[0].delta
            content += d.content or ""
            for tc in d.tool_calls or []:
                slot = calls.setdefault(tc.index, ["", ""])
                slot[0] += (tc.function.name or "") if tc.function else ""
                slot[1] += (tc.function.arguments or "") if tc.function else ""
            finish = ch.choices[0].finish_reason or finish
        return {"content": content or None, "finish": finish,
                "calls": [tuple(calls[i]) for i in sorted(calls)]}
    except openai.APIStatusError as e:
        return {"status": e.status_code}


def tool_calls(a, work):
    """Tool calls through a --spec server equal those of a plain one (constrained: required;
    free: auto, where the parser finds whatever the output holds)."""
    d = work / "tools-model"
    run([a.moex, "make-model", "--preset", PRESETS[0], "--out", d, "-q"])
    (d / "chat_template.jinja").write_text((Path(a.templates) / "Qwen-Qwen3-0.6B.jinja").read_text())
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    (d / "generation_config.json").write_text(
        json.dumps({"eos_token_id": [tok.token_to_id("<|im_end|>")]}))
    cases = [(choice, seed, stream) for choice in ("required", "auto") for seed in range(3)
             for stream in (False, True)]
    results = []
    for name, flags in [("plain", []), ("spec", SPEC_SETTINGS[1])]:
        srv = Server(a.moex, d, work, f"tools-{name}", "--parallel", "3", *flags)
        try:
            out = {}
            threads = [threading.Thread(target=lambda c=c: out.__setitem__(
                c, tool_outcome(srv.client(), *c))) for c in cases]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            results.append(out)
            if flags:
                results.append(counters(srv))
        finally:
            srv.stop()
    plain, spec, c = results
    calls = sum(len(o.get("calls", [])) for o in plain.values())
    check(calls > 0 or all(o.get("status") == 400 for k, o in plain.items() if k[0] == "required"),
          f"tool calls: the plain server made {calls} calls (or, without xgrammar, refused "
          "tool_choice required)")
    for k in cases:
        check(spec[k] == plain[k], f"tool calls, tool_choice {k[0]}, seed {k[1]}"
              f"{', streamed' if k[2] else ''}: as without --spec"
              + ("" if spec[k] == plain[k] else f"\n    plain {plain[k]}\n    spec  {spec[k]}"))
    check(c.get("moex_spec_decode_draft_tokens_total", 0) > 0,
          f"tool calls: drafts ran ({c})")


def compare_spec_server(a, d, work, name, flags, reqs, plain, what):
    """Every request through a server with `flags` must give what the plain server gave;
    returns the server's speculation counters."""
    srv = Server(a.moex, d, work, name, "--parallel", "3", *flags)
    try:
        got = serve_all(srv, reqs)
        c = counters(srv)
    finally:
        srv.stop()
    for key, want in plain.items():
        check(got.get(key) == want,
              f"{what}: {key[0]}{', streamed' if key[1] else ''}: as without --spec"
              + ("" if got.get(key) == want else f"\n    plain {want}\n    spec  {got.get(key)}"))
    return c


def serve_mtp(a, work):
    """--spec mtp (each slot's MTP module drafting) on tiny-glm4-moe with a random module
    (src/generate/reference/mtp_module.py): every request as without it, drafts run. A random
    module's drafts are rejected; where they are accepted is checked by generate_unit_test's
    MtpFamilies and by hand on the trained fixture (docs/speculative.md)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "generate" / "reference"))
    import mtp_module
    d = work / "tiny-glm4-moe-mtp"
    run([a.moex, "make-model", "--preset", "tiny-glm4-moe", "--out", d, "-q"])
    mtp_module.add_random_mtp(str(d), seed=5)
    (d / "chat_template.jinja").write_text(TEMPLATE)
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    im_end = tok.token_to_id("<|im_end|>")
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": [im_end]}))
    reqs = requests(sorted(set(tok.encode(PHRASE).ids)), im_end, "")
    srv = Server(a.moex, d, work, "mtp-plain", "--parallel", "3")
    try:
        plain = serve_all(srv, reqs)
    finally:
        srv.stop()
    # With the prompt cache (its entries carry the module's rows): the requests sharing a
    # prompt load each other's prefixes.
    hits = 0
    for i, flags in enumerate([["--spec", "mtp", "--cache-ram", "64"],
                               ["--spec", "mtp", "--spec-draft", "3", "--cache-ram", "64"]]):
        what = f"tiny-glm4-moe {' '.join(flags)}"
        c = compare_spec_server(a, d, work, f"mtp-spec{i}", flags, reqs, plain, what)
        check(c.get("moex_spec_decode_draft_tokens_total", 0) > 0,
              f"{what}: /metrics counts the module's drafts ({c})")
        hits += c.get("moex_prompt_cache_hits_total", 0)
    check(hits > 0, f"tiny-glm4-moe --spec mtp: prefixes loaded from the prompt cache ({hits})")


def counters(srv):
    status, _, body = srv.http("GET", "/metrics")
    return {k: float(v) for k, v in
            re.findall(r"^(moex_(?:spec_decode|prompt_cache)_\w+) (\S+)$", body.decode(), re.M)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--templates", help="the chat-template corpus (tool calls on Qwen3's)")
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for preset in PRESETS:
        d = work / preset
        run([a.moex, "make-model", "--preset", preset, "--out", d, "-q"])
        (d / "chat_template.jinja").write_text(TEMPLATE)
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        im_end = tok.token_to_id("<|im_end|>")
        (d / "generation_config.json").write_text(json.dumps({"eos_token_id": [im_end]}))
        phrase_ids = sorted(set(tok.encode(PHRASE).ids))
        srv = Server(a.moex, d, work, f"{preset}-plain", "--parallel", "3")
        try:
            # A stop string the "stop string" request meets: a piece of its answer without one.
            free = outcome(srv.client(), "chat", requests(phrase_ids, im_end, "")[1][2], False)
            stop_string = free["text"][len(free["text"]) // 2:][:9]
            reqs = requests(phrase_ids, im_end, stop_string)
            plain = serve_all(srv, reqs)
            check(counters(srv).get("moex_spec_decode_draft_tokens_total") == 0,
                  f"{preset}: without --spec no drafts run")
        finally:
            srv.stop()
        finishes = {f for o in plain.values() for f in o.get("finish", [])}
        check("length" in finishes and
              sum(1 for o in plain.values() if "text" in o) >= 2 * (len(reqs) - 1),
              f"{preset}: the plain server answered, some requests ending by length")
        for name in ("chat, stop string", "chat, min_tokens then the end of turn"):
            check(plain[(name, False)]["finish"] == ["stop"] and plain[(name, True)]["finish"] ==
                  ["stop"], f"{preset}: {name}: the plain server's answer ends by stop "
                  f"({plain[(name, False)]})")
        rejected = rewound = 0
        for i, flags in enumerate(SPEC_SETTINGS):
            what = f"{preset} {' '.join(flags)}"
            c = compare_spec_server(a, d, work, f"{preset}-spec{i}", flags, reqs, plain, what)
            drafted = c.get("moex_spec_decode_draft_tokens_total", 0)
            accepted = c.get("moex_spec_decode_accepted_tokens_total", 0)
            check(accepted > 0, f"{what}: /metrics counts accepted drafts ({accepted:.0f} of "
                  f"{drafted:.0f})")
            rejected += drafted - accepted
            rewound += c.get("moex_spec_decode_reruns_total", 0)
        check(rejected > 0, f"{preset}: some drafts were rejected ({rejected:.0f})")
        if preset in RECURRENT:
            check(rewound > 0, f"{preset}: rejected passes rewound the recurrent states "
                  f"({rewound:.0f})")

    serve_mtp(a, work)
    if a.templates:
        tool_calls(a, work)
    d = work / PRESETS[0]
    for flags, name in [(["--spec", "ngram", "--spec-draft", "65"], "--spec-draft"),
                        (["--spec", "eagle"], "--spec"),
                        (["--spec-draft", "2"], "--spec-draft"),
                        (["--spec", "ngram", "--spec-ngram-max", "x"], "--spec-ngram-max")]:
        r = subprocess.run([a.moex, "serve", "-m", str(d), "--port", "0", *flags],
                           capture_output=True, text=True, env=ENV, timeout=60)
        check(r.returncode != 0 and name in r.stderr,
              f"serve {' '.join(flags)}: refused naming {name} ({r.stderr.strip()[:100]})")
    serve_openai_test.finish("serve spec test")


if __name__ == "__main__":
    main()
