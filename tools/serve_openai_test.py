#!/usr/bin/env python3
"""End-to-end test of `moex serve` with the official `openai` client on a tiny checkpoint
(tiny-qwen3-moe with a ChatML template): chat and text completions, streamed and whole, equal
to each other and, token for token, to `moex generate` greedy output on the same prompt ids;
stop strings (never emitted, finish_reason stop), max_tokens (length), usage, logprobs in
both APIs' shapes; errors (400 naming the field, 401 with --api-key, 404, 405, 413); the
model list and /health; the raw SSE framing; a client that disconnects cancels its request;
two requests at once give what each gives alone; SIGTERM exits 0.

usage: serve_openai_test.py --moex BIN --work DIR
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
from tokenizers import Tokenizer

PRESET = "tiny-qwen3-moe"
TEMPLATE = """{%- for message in messages %}
{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""
ENV = dict(os.environ, MOEX_FUSED_MOE_MEASURE="0")  # reproducible, no calibration written

failures = 0


def check(ok, what):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
    failures += not ok
    return ok


def finish(name):
    """Ends a serve test: exit 1 naming the count when a check failed, else say all passed."""
    if failures:
        print(f"{name}: {failures} check(s) FAILED")
        sys.exit(1)
    print(f"{name}: all checks passed")


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=ENV, **kw)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(map(str, cmd))}\n{r.stderr}")
    return r


class Server:
    """`moex serve --port 0` in the background; the port read from its stderr."""

    def __init__(self, moex, model, work, name, *extra):
        self.log = work / f"{name}.log"
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen([str(moex), "serve", "-m", str(model), "--port", "0", *extra],
                                     stdout=subprocess.DEVNULL, stderr=self.logf, env=ENV)
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline and self.port is None:
            if self.proc.poll() is not None:
                raise SystemExit(f"moex serve exited with {self.proc.returncode}:\n"
                                 f"{self.log.read_text()}")
            for line in self.log.read_text().splitlines():
                if line.startswith("moex serve: listening on http://127.0.0.1:"):
                    self.port = int(line.rsplit(":", 1)[1])
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise SystemExit(f"moex serve did not say where it listens:\n{self.log.read_text()}")

    def client(self, key="unused", **kw):
        return openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key=key,
                             max_retries=0, timeout=120, **kw)

    def http(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        h = {"Content-Type": "application/json", **(headers or {})}
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = r.status, dict(r.getheaders()), r.read()
        c.close()
        return out

    def health(self, headers=None):
        return json.loads(self.http("GET", "/health", headers=headers)[2])

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        return self.proc.returncode


def generate_ids(moex, d, work, n, *prompt):
    """`moex generate` greedy: (prompt ids, generated ids without a final stop token)."""
    dump = work / "gen.bin"
    run([moex, "generate", "-m", d, "-n", n, "--temp", "0", "--dump-logits", dump, *prompt])
    j = json.loads(Path(str(dump) + ".json").read_text())
    return j["prompt_ids"], j["generated_ids"]


def ids_of(content):
    """Token ids from logprob tokens written 'token_id:N' (return_tokens_as_token_ids)."""
    return [int(t.token.split(":")[1]) for t in content]


def processors(a, d, work, client, ids, plain_ids, strip_stop):
    """Logit bias and penalties: `moex generate` greedy with them picks, at every step, the
    argmax of the float32 reference (src/generate/reference) applied to the logits it dumped;
    the server gives the same ids for the same fields; they change the plain output."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src/generate/reference"))
    import numpy as np
    from generator_reference_test import reference_step
    bias_id = 5
    spec = {"prompt": ids, "stop_ids": [], "min_tokens": 0, "ignore_eos": False,
            "logit_bias": [[bias_id, 1.5]], "repetition": 1.3, "frequency": 0.8,
            "presence": 0.4}
    flags = ["--logit-bias", f"{bias_id}=1.5", "--repetition-penalty", "1.3",
             "--frequency-penalty", "0.8", "--presence-penalty", "0.4"]
    _, pen_ids = generate_ids(a.moex, d, work, 24, "--prompt-ids", ",".join(map(str, ids)), *flags)
    raw = np.fromfile(work / "gen.bin", dtype="<f4").reshape(len(pen_ids), -1)
    want = [int(np.argmax(reference_step(raw[i], spec, pen_ids[:i]))) for i in range(len(pen_ids))]
    check(pen_ids == want, f"generate with logit bias and penalties = the reference's argmax on "
          f"its own logits ({pen_ids} vs {want})")
    check(strip_stop(pen_ids) != plain_ids, "the penalties change the greedy output")
    r = client.completions.create(
        model="model", prompt=ids, max_tokens=24, temperature=0, logprobs=0,
        logit_bias={str(bias_id): 1.5}, frequency_penalty=0.8, presence_penalty=0.4,
        extra_body={"repetition_penalty": 1.3, "return_tokens_as_token_ids": True})
    got = [int(t.split(":")[1]) for t in r.choices[0].logprobs.tokens]
    check(got == strip_stop(pen_ids), f"serve with the same fields = generate ({got} vs "
          f"{strip_stop(pen_ids)})")
    forced = client.completions.create(model="model", prompt=ids, max_tokens=4, temperature=0,
                                       logprobs=0, logit_bias={str(bias_id): 100},
                                       extra_body={"return_tokens_as_token_ids": True})
    check([t for t in forced.choices[0].logprobs.tokens] == [f"token_id:{bias_id}"] * 4,
          "logit_bias 100 forces the token")
    banned = client.completions.create(model="model", prompt=ids, max_tokens=1, temperature=0,
                                       logprobs=0, logit_bias={str(plain_ids[0]): -100},
                                       extra_body={"return_tokens_as_token_ids": True})
    check(banned.choices[0].logprobs.tokens != [f"token_id:{plain_ids[0]}"],
          "logit_bias -100 bans the greedy token")


def expect_status(what, fn, status, param=None, code=None):
    """`fn` fails with `status`, naming `param` when given, with error code `code` (None:
    the error object's code is null)."""
    try:
        fn()
    except openai.APIStatusError as e:
        got_code = getattr(e, "code", None)
        ok = (e.status_code == status and (param is None or e.param == param) and
              got_code == code)
        return check(ok, f"{what}: {status}" + (f" naming '{param}'" if param else "") +
                     (f" code {code}" if code else "") +
                     f" (got {e.status_code}, param {e.param!r}, code {got_code!r}: "
                     f"{e.message[:120]})")
    return check(False, f"{what}: {status} expected, the request succeeded")


def stream_chat(client, **kw):
    chunks = list(client.chat.completions.create(stream=True, **kw))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and
              c.choices[0].finish_reason]
    return chunks, text, finish


def stream_completion(client, **kw):
    chunks = list(client.completions.create(stream=True, **kw))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and
              c.choices[0].finish_reason]
    return chunks, text, finish


def setup(corpus_template=None, more_args=()):
    """--moex BIN --work DIR parsed, plus --templates DIR (the chat-template corpus) when
    corpus_template names one of its files, and `more_args` ((flag, default) pairs); DIR
    emptied; DIR/model: the tiny checkpoint with that template, or the ChatML one. Returns
    (args, work dir, model dir)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    if corpus_template:
        ap.add_argument("--templates", required=True)
    for flag, default in more_args:
        ap.add_argument(flag, default=default)
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    d = work / "model"
    run([a.moex, "make-model", "--preset", PRESET, "--out", d, "-q"])
    template = (Path(a.templates) / corpus_template).read_text() if corpus_template else TEMPLATE
    (d / "chat_template.jinja").write_text(template)
    return a, work, d


def main():
    a, work, d = setup()
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    im_end = tok.token_to_id("<|im_end|>")
    eos = tok.token_to_id("<|endoftext|>")
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": [im_end, eos]}))
    stops = {im_end, eos}

    def strip_stop(ids):
        return ids[:-1] if ids and ids[-1] in stops else ids

    srv = Server(a.moex, d, work, "server", "--parallel", "2", "-v")
    try:
        body(a, d, work, tok, srv, strip_stop)
    finally:
        rc = srv.stop()
    check(rc == 0, f"SIGTERM when idle: exit code 0 (got {rc})")
    secured(a, d, work)
    long_requests(a, d, work)
    finish("serve openai test")


def body(a, d, work, tok, srv, strip_stop):
    client = srv.client()
    n = 16
    user = "Tell me about mixtures of experts."
    messages = [{"role": "user", "content": user}]

    # /v1/models and /health.
    models = client.models.list().data
    check(len(models) == 1 and models[0].id == "model", f"/v1/models: one model named after "
          f"the directory ({[m.id for m in models]})")
    h = srv.health()
    check(h.get("status") == "ok" and h.get("slots_total") == 2 and h.get("slots_busy") == 0,
          f"/health: ok, 2 slots, none busy ({h})")

    # Chat, whole: greedy ids equal `moex generate --chat` on the same conversation.
    r = client.chat.completions.create(
        model="model", messages=messages, max_tokens=n, temperature=0, logprobs=True,
        top_logprobs=3, extra_body={"return_tokens_as_token_ids": True})
    prompt_ids, gen = generate_ids(a.moex, d, work, n, "--chat", "-p", user)
    gen = strip_stop(gen)
    choice = r.choices[0]
    got = ids_of(choice.logprobs.content)
    check(r.object == "chat.completion" and r.model == "model" and r.id.startswith("chatcmpl-"),
          "chat.completion object, model echoed, chatcmpl- id")
    check(got == gen, f"chat greedy ids = moex generate --chat's ({got} vs {gen})")
    check(choice.message.content == tok.decode(got, skip_special_tokens=True),
          "chat content = the decoded ids (special tokens skipped)")
    want_finish = "length" if len(gen) == n else "stop"
    check(choice.finish_reason == want_finish, f"chat finish_reason {want_finish} "
          f"({choice.finish_reason})")
    u = r.usage
    check(u.prompt_tokens == len(prompt_ids) and u.completion_tokens == len(got) and
          u.total_tokens == u.prompt_tokens + u.completion_tokens,
          f"chat usage: prompt {u.prompt_tokens} = {len(prompt_ids)}, completion "
          f"{u.completion_tokens} = {len(got)}, total the sum")
    check(u.prompt_tokens_details is not None and u.prompt_tokens_details.cached_tokens >= 0,
          "usage.prompt_tokens_details.cached_tokens present")
    lp_ok = True
    for t in choice.logprobs.content:
        tops = t.top_logprobs
        lp_ok &= len(tops) == 3 and t.logprob <= 0 and isinstance(t.bytes, list)
        lp_ok &= all(tops[i].logprob >= tops[i + 1].logprob for i in range(len(tops) - 1))
        lp_ok &= tops[0].token == t.token and abs(tops[0].logprob - t.logprob) < 1e-6
        lp_ok &= all(tops[0].logprob >= x.logprob for x in tops)
    check(lp_ok and len(choice.logprobs.content) == u.completion_tokens,
          "chat logprobs: one entry per token, 3 alternatives most likely first, the greedy "
          "token is the top one with its logprob, all <= 0")

    # Chat, streamed: the same text; role first, finish last, usage chunk with include_usage.
    chunks, text, finish = stream_chat(client, model="model", messages=messages, max_tokens=n,
                                       temperature=0,
                                       stream_options={"include_usage": True})
    check(text == choice.message.content, f"streamed chat text = whole ({text!r} vs "
          f"{choice.message.content!r})")
    check(chunks[0].choices[0].delta.role == "assistant", "first chunk carries the role")
    check(finish == [want_finish], f"one finish_reason, {want_finish} ({finish})")
    last = chunks[-1]
    check(last.choices == [] and last.usage is not None and
          last.usage.completion_tokens == u.completion_tokens and
          last.usage.prompt_tokens == u.prompt_tokens,
          "include_usage: a last chunk with no choices and the same usage")
    check(all(c.usage is None for c in chunks[:-1]), "earlier chunks have usage null")
    check(len({c.id for c in chunks}) == 1, "every chunk has the response's id")

    # Completions on prompt ids, whole and streamed, = moex generate --prompt-ids.
    ids = prompt_ids[:7]
    _, gen_ids = generate_ids(a.moex, d, work, 24, "--prompt-ids", ",".join(map(str, ids)))
    gen_ids = strip_stop(gen_ids)
    c = client.completions.create(model="model", prompt=ids, max_tokens=24, temperature=0,
                                  logprobs=2, extra_body={"return_tokens_as_token_ids": True})
    cc = c.choices[0]
    got = [int(t.split(":")[1]) for t in cc.logprobs.tokens]
    check(c.object == "text_completion" and c.id.startswith("cmpl-"), "text_completion object")
    check(got == gen_ids, f"completion greedy ids = moex generate --prompt-ids's ({got} vs "
          f"{gen_ids})")
    full = cc.text
    check(full == tok.decode(got, skip_special_tokens=True), "completion text = decoded ids")
    lp = cc.logprobs
    check(len(lp.token_logprobs) == len(got) and len(lp.top_logprobs) == len(got) and
          len(lp.text_offset) == len(got) and
          all(len(t) <= 2 and max(t.values()) >= v - 1e-6 for t, v in
              zip(lp.top_logprobs, lp.token_logprobs)) and
          lp.text_offset == sorted(lp.text_offset),
          "completion logprobs: tokens, token_logprobs, top_logprobs (<= 2 each, the best >= "
          "the chosen), text_offset non-decreasing")
    check(c.usage.prompt_tokens == 7 and c.usage.completion_tokens == len(got),
          f"completion usage: prompt 7, completion {len(got)} ({c.usage})")
    _, stext, sfinish = stream_completion(client, model="model", prompt=ids, max_tokens=24,
                                          temperature=0)
    check(stext == full and sfinish == [cc.finish_reason],
          f"streamed completion = whole ({stext!r} vs {full!r}, {sfinish})")

    processors(a, d, work, client, ids, gen_ids, strip_stop)

    # A text prompt is encoded as moex generate -p encodes it.
    ptext = "Hello world, hello"
    pids, pgen = generate_ids(a.moex, d, work, 8, "-p", ptext)
    t = client.completions.create(model="model", prompt=ptext, max_tokens=8, temperature=0,
                                  logprobs=0, extra_body={"return_tokens_as_token_ids": True})
    check(t.usage.prompt_tokens == len(pids) and
          [int(x.split(":")[1]) for x in t.choices[0].logprobs.tokens] == strip_stop(pgen),
          "text prompt: the ids and greedy tokens of moex generate -p")

    # max_tokens: finish_reason length and exactly that many tokens.
    m = client.completions.create(model="model", prompt=ids, max_tokens=3, temperature=0)
    if len(gen_ids) >= 3:
        check(m.choices[0].finish_reason == "length" and m.usage.completion_tokens == 3 and
              m.usage.total_tokens == 10, f"max_tokens 3: length, 3 tokens ({m.usage})")

    # Stop strings: spanning a token boundary, never emitted, finish_reason stop.
    pieces = [tok.decode([i], skip_special_tokens=True) for i in got]
    stop, cut = None, None
    pos = 0
    for k in range(2, len(pieces) - 2):
        pos = len("".join(pieces[:k]))
        cand = full[pos - 1:pos + 1]
        if len(cand) == 2 and "\ufffd" not in cand and full.find(cand) == pos - 1:
            stop, cut = cand, pos - 1
            break
    if check(stop is not None, f"a stop string across a token boundary found in {full!r}"):
        s = client.completions.create(model="model", prompt=ids, max_tokens=24, temperature=0,
                                      stop=[stop, "\u2603never"])
        check(s.choices[0].text == full[:cut] and s.choices[0].finish_reason == "stop",
              f"stop {stop!r}: text before it ({s.choices[0].text!r} vs {full[:cut]!r}), stop")
        check(s.usage.completion_tokens < len(got), "stop: fewer tokens than without it "
              f"({s.usage.completion_tokens} < {len(got)})")
        _, st, sf = stream_completion(client, model="model", prompt=ids, max_tokens=24,
                                      temperature=0, stop=stop)
        check(st == full[:cut] and sf == ["stop"],
              f"streamed stop: same text, never the stop string ({st!r}, {sf})")
        cs = client.chat.completions.create(model="model", messages=messages, max_tokens=n,
                                            temperature=0, stop=choice.message.content[3:5])
        want = choice.message.content[:choice.message.content.find(choice.message.content[3:5])]
        check(cs.choices[0].message.content == want and cs.choices[0].finish_reason == "stop",
              f"chat stop: {cs.choices[0].message.content!r} vs {want!r}")
    nomatch = client.completions.create(model="model", prompt=ids, max_tokens=24, temperature=0,
                                        stop="\u2603")
    check(nomatch.choices[0].text == full, "a stop string that never occurs changes nothing")

    # Seeded sampling repeats; two requests at once equal each alone.
    s1 = client.completions.create(model="model", prompt=ids, max_tokens=12, temperature=1.0,
                                   seed=7).choices[0].text
    s2 = client.completions.create(model="model", prompt=ids, max_tokens=12, temperature=1.0,
                                   seed=7).choices[0].text
    check(s1 == s2, "temperature 1 with seed 7 twice: the same text")
    results = [None, None]

    def worker(i):
        results[i] = srv.client().chat.completions.create(
            model="model", messages=messages, max_tokens=n, temperature=0).choices[0].message.content

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    check(results == [choice.message.content] * 2, "two concurrent requests: each = alone")

    # Errors: 400 naming the field.
    chat = client.chat.completions.create
    cases = [
        ("temperature -1", lambda: chat(model="m", messages=messages, temperature=-1),
         "temperature"),
        ("n 2", lambda: chat(model="m", messages=messages, n=2), "n"),
        ("top_p 2", lambda: chat(model="m", messages=messages, top_p=2), "top_p"),
        ("max_tokens 0", lambda: chat(model="m", messages=messages, max_tokens=0), "max_tokens"),
        ("empty messages", lambda: chat(model="m", messages=[]), "messages"),
        ("logit_bias out of range", lambda: chat(model="m", messages=messages,
                                                 logit_bias={"5": 101}), 'logit_bias["5"]'),
        ("logit_bias id outside the vocabulary",
         lambda: chat(model="m", messages=messages, logit_bias={"1000000": 1}), "logit_bias"),
        ("frequency_penalty 3", lambda: chat(model="m", messages=messages,
                                             frequency_penalty=3), "frequency_penalty"),
        ("response_format xml", lambda: chat(model="m", messages=messages,
                                             response_format={"type": "xml"}),
         "response_format.type"),
        ("tools", lambda: chat(model="m", messages=messages, tools=[
            {"type": "function", "function": {"name": "f", "parameters": {}}}]), "tools"),
        ("an unknown field", lambda: chat(model="m", messages=messages,
                                          extra_body={"frobnicate": 1}), "frobnicate"),
        ("five stop strings", lambda: chat(model="m", messages=messages,
                                           stop=["a", "b", "c", "d", "e"]), "stop"),
        ("top_logprobs without logprobs", lambda: chat(model="m", messages=messages,
                                                       top_logprobs=2), "top_logprobs"),
        ("completion prompt id outside the vocabulary",
         lambda: client.completions.create(model="m", prompt=[1, 10 ** 6]), "prompt[1]"),
        ("a prompt longer than the context",
         lambda: client.completions.create(model="m", prompt=[5] * 5000), "prompt",
         "context_length_exceeded"),
        ("prompt and max_tokens beyond the context",
         lambda: chat(model="m", messages=messages, max_tokens=5000), "messages",
         "context_length_exceeded"),
        ("prompt and max_tokens beyond the context, streamed",
         lambda: client.completions.create(model="m", prompt=ids, max_tokens=5000, stream=True),
         "prompt", "context_length_exceeded"),
        ("completion echo", lambda: client.completions.create(model="m", prompt=ids, echo=True),
         "echo"),
    ]
    for what, fn, param, *code in cases:
        expect_status(what, fn, 400, param, *code)
    ok_harmless = client.chat.completions.create(
        model="m", messages=messages, max_tokens=2, temperature=0, user="u", n=1,
        frequency_penalty=0, presence_penalty=0, logit_bias={})
    check(ok_harmless.choices[0].message.content is not None,
          "harmless fields (user, n 1, zero penalties, empty logit_bias) are accepted")

    status, headers, raw = srv.http("POST", "/v1/chat/completions", b"{not json")
    err = json.loads(raw).get("error", {})
    check(status == 400 and err.get("type") == "invalid_request_error" and
          err.get("param") is None and "code" in err, f"malformed JSON: 400 error object ({raw})")
    status, _, raw = srv.http("GET", "/v1/nope")
    check(status == 404 and "error" in json.loads(raw), f"unknown path: 404 error object")
    expect_status("unknown path through the client", lambda: client.get("/nope", cast_to=object),
                  404)
    status, _, raw = srv.http("GET", "/v1/chat/completions")
    check(status == 405 and "error" in json.loads(raw), "GET on a POST endpoint: 405")
    big = b'{"prompt": "' + b"a" * (9 << 20) + b'"}'
    try:
        status, _, raw = srv.http("POST", "/v1/completions", big)
        check(status == 413 and "error" in json.loads(raw), f"a 9 MiB body: 413 ({status})")
    except (ConnectionError, OSError) as e:
        check(False, f"a 9 MiB body: 413 expected, the connection failed ({e})")

    form = json.dumps({"prompt": "a" * 10000, "max_tokens": 1}).encode()
    status, _, raw = srv.http("POST", "/v1/completions", form,
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
    check(status == 413 and "application/json" in json.loads(raw)["error"]["message"],
          f"a 10 KB body sent as a form (curl -d): 413 saying to send application/json")

    # Raw SSE framing.
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    c.request("POST", "/v1/chat/completions", body=json.dumps(
        {"messages": messages, "max_tokens": 5, "stream": True}),
        headers={"Content-Type": "application/json"})
    resp = c.getresponse()
    raw = resp.read().decode()
    c.close()
    events = raw.split("\n\n")
    check(resp.status == 200 and resp.getheader("Content-Type", "").startswith(
        "text/event-stream"), "SSE: 200 text/event-stream")
    check(events[-1] == "" and events[-2] == "data: [DONE]" and
          all(e.startswith("data: ") and "\n" not in e for e in events[:-1]),
          "SSE: 'data: ' events separated by blank lines, ending in 'data: [DONE]'")
    parsed = [json.loads(e[6:]) for e in events[:-2]]
    check(parsed[0]["choices"][0]["delta"].get("role") == "assistant" and
          parsed[-1]["choices"][0]["finish_reason"] in ("stop", "length") and
          all(p["object"] == "chat.completion.chunk" for p in parsed),
          "SSE: chat.completion.chunk objects, role first, finish_reason last")

def wait_for(pred, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def secured(a, d, work):
    srv = Server(a.moex, d, work, "secured", "--api-key", "s3cret", "--alias", "tiny")
    try:
        expect_status("no API key", lambda: srv.client("wrong").models.list(), 401)
        status, headers, raw = srv.http("GET", "/health")
        check(status == 200 and json.loads(raw)["status"] == "ok",
              f"--api-key: /health answers without the key, for load balancers ({status})")
        status, headers, raw = srv.http("GET", "/v1/models")
        check(status == 401 and json.loads(raw)["error"]["type"] == "authentication_error",
              "--api-key: /v1/models without the key is 401 with an error object")
        status, _, _ = srv.http("POST", "/health", {})
        check(status == 401, f"--api-key: POST /health still needs the key ({status})")
        status, _, _ = srv.http("GET", "/v1/nope", headers={"Authorization": "Bearer s3cret"})
        check(status == 404, "--api-key: the right key reaches routing (404 for a bad path)")
        models = srv.client("s3cret").models.list().data
        check([m.id for m in models] == ["tiny"], "--api-key: the right key works; --alias names "
              "the model")
        r = srv.client("s3cret").chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
        check(r.model == "tiny" and r.usage.completion_tokens >= 1, "--api-key: a completion")
    finally:
        rc = srv.stop(signal.SIGINT)
    check(rc == 0, f"SIGINT: exit code 0 (got {rc})")
    srv = Server(a.moex, d, work, "health_key", "--api-key", "s3cret", "--health-needs-key")
    try:
        status, _, raw = srv.http("GET", "/health")
        check(status == 401 and json.loads(raw)["error"]["type"] == "authentication_error",
              f"--health-needs-key: /health without the key is 401 ({status})")
        status, _, raw = srv.http("GET", "/health", headers={"Authorization": "Bearer s3cret"})
        check(status == 200 and json.loads(raw)["status"] == "ok",
              f"--health-needs-key: /health with the key is 200 ({status})")
    finally:
        srv.stop()


def raw_request(port, body):
    """A POST /v1/completions on a socket of its own, left open (the caller closes it)."""
    sock = socket.create_connection(("127.0.0.1", port))
    req = json.dumps(body).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                 b"\r\nContent-Length: " + str(len(req)).encode() + b"\r\n\r\n" + req)
    return sock


# Requests that outlast every wait below (tens of seconds each): the timing-dependent checks
# run on a copy of the model with a long context, so no request can finish on its own first.
LONG_CONTEXT = 32768
LONG = {"prompt": [1, 2, 3], "max_tokens": LONG_CONTEXT - 8, "temperature": 0}


def long_model(d, work):
    dl = work / "model_long"
    shutil.copytree(d, dl)
    cfg = json.loads((dl / "config.json").read_text())
    cfg["max_position_embeddings"] = LONG_CONTEXT
    (dl / "config.json").write_text(json.dumps(cfg))
    return dl


def disconnects(srv):
    """A client that disconnects cancels its request, streamed and whole."""
    before = srv.health()["requests_cancelled"]
    sock = raw_request(srv.port, {**LONG, "stream": True})
    sock.recv(4096)  # the stream has begun
    sock.close()
    check(wait_for(lambda: (lambda h: h["requests_cancelled"] > before and h["slots_busy"] == 0)(
        srv.health()), 10), "a streaming client that disconnects: its request is cancelled")
    before = srv.health()["requests_cancelled"]
    sock = raw_request(srv.port, LONG)
    wait_for(lambda: srv.health()["slots_busy"] > 0, 10)
    time.sleep(0.3)
    sock.close()
    check(wait_for(lambda: (lambda h: h["requests_cancelled"] > before and h["slots_busy"] == 0)(
        srv.health()), 10), "a waiting non-streaming client that disconnects: cancelled")


def queue_full(srv):
    """One slot and 64 queued requests: the next one is refused with 503."""
    before = srv.health()["requests_cancelled"]
    socks = [raw_request(srv.port, {**LONG, "stream": True}) for _ in range(65)]
    try:
        filled = wait_for(lambda: (lambda h: h["slots_busy"] == 1 and h["queued"] == 64)(
            srv.health()), 30)
        check(filled, f"65 long requests on 1 slot: 1 running, 64 queued ({srv.health()})")
        if filled:
            expect_status("the 66th request (queue full)", lambda: srv.client().completions.create(
                model="m", prompt=[1], max_tokens=1), 503)
            status, headers, _ = srv.http("POST", "/v1/completions", {"prompt": [1], "max_tokens": 1})
            check(status == 503 and headers.get("Retry-After") == "1",
                  f"the 67th request: 503 with Retry-After: 1 ({status}, {headers.get('Retry-After')})")
    finally:
        for s in socks:
            s.close()
    check(wait_for(lambda: (lambda h: h["slots_busy"] == 0 and h["queued"] == 0 and
                            h["requests_cancelled"] - before == 65)(srv.health()), 15),
          f"their clients gone, all 65 are cancelled, queued ones too ({srv.health()})")


def long_requests(a, d, work):
    srv = Server(a.moex, long_model(d, work), work, "long", "--ctx-size", str(LONG_CONTEXT),
                 "--parallel", "1")
    disconnects(srv)
    queue_full(srv)
    got = []

    def reader():
        try:
            for ch in srv.client().completions.create(model="m", stream=True, **LONG):
                got.append(ch)
        except Exception as e:  # the stream ends with an error event or a closed connection
            got.append(e)

    th = threading.Thread(target=reader)
    th.start()
    wait_for(lambda: len(got) > 0, 30)
    t0 = time.time()
    rc = srv.stop(signal.SIGTERM)
    th.join(30)
    check(rc == 0 and time.time() - t0 < 15,
          f"SIGTERM during a stream: exit code 0 in {time.time() - t0:.1f} s (got {rc})")
    check(not th.is_alive() and got and isinstance(got[-1], Exception),
          f"SIGTERM during a stream: the stream ends with an error, not a normal finish "
          f"({type(got[-1]).__name__ if got else None})")


if __name__ == "__main__":
    main()
