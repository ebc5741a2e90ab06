#!/usr/bin/env python3
"""End-to-end test of what operating `moex serve` needs, on the tiny checkpoint of
serve_openai_test.py: CORS (--cors-origin: preflights and real requests from allowed and other
origins, none without the flag); the default --parallel (printed with its reason, what /health
says); GET /metrics (behind the key, Prometheus' text format as prometheus_client parses it,
values that move by what requests did) and the -v line per request; the prompt cache
(--cache-ram: its default printed with its reason, a conversation's next turn loaded after
another request took the one slot, the counters and usage that say so, 0 and bad values).

usage: serve_ops_test.py --moex BIN --work DIR
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve_openai_test import Server, check, setup  # noqa: E402
import serve_openai_test  # noqa: E402

APP = "https://app.example"
KEY = {"Authorization": "Bearer k"}


def cors(a, d, work):
    """--cors-origin APP with --api-key k: preflights answered without the key for APP (403
    for others); APP's real requests (200, 401, streamed) carry Access-Control-Allow-Origin,
    other origins' do not."""
    srv = Server(a.moex, d, work, "cors", "--cors-origin", APP, "--cors-origin",
                 "http://localhost:3000", "--api-key", "k")
    try:
        pre = {"Origin": APP, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type, x-stainless-lang"}
        status, h, _ = srv.http("OPTIONS", "/v1/chat/completions", headers=pre)
        check(status == 204 and h.get("Access-Control-Allow-Origin") == APP
              and h.get("Vary") == "Origin"
              and h.get("Access-Control-Allow-Methods") == "GET, POST, OPTIONS"
              and h.get("Access-Control-Allow-Headers") ==
              "Authorization, Content-Type, x-stainless-lang"
              and h.get("Access-Control-Max-Age") == "600",
              f"preflight from an allowed origin, no key: 204 with the CORS fields ({status}, {h})")
        status, h, _ = srv.http("OPTIONS", "/v1/models",
                                headers={**pre, "Origin": "http://localhost:3000"})
        check(status == 204 and h.get("Access-Control-Allow-Origin") == "http://localhost:3000",
              f"--cors-origin is repeatable ({status}, {h.get('Access-Control-Allow-Origin')})")
        status, h, _ = srv.http("OPTIONS", "/v1/chat/completions",
                                headers={**pre, "Origin": "https://evil.example"})
        check(status == 403 and "Access-Control-Allow-Origin" not in h,
              f"preflight from another origin: 403 without CORS fields ({status}, {h})")

        body = {"prompt": [1, 2, 3], "max_tokens": 2}
        status, h, _ = srv.http("POST", "/v1/completions", body, headers={**KEY, "Origin": APP})
        check(status == 200 and h.get("Access-Control-Allow-Origin") == APP,
              f"a completion from the allowed origin: 200 with its origin ({status}, {h})")
        status, h, raw = srv.http("POST", "/v1/completions", {**body, "stream": True},
                                  headers={**KEY, "Origin": APP})
        check(status == 200 and h.get("Access-Control-Allow-Origin") == APP
              and raw.endswith(b"data: [DONE]\n\n"),
              f"a stream from the allowed origin carries it too ({status}, {h})")
        status, h, _ = srv.http("POST", "/v1/completions", body,
                                headers={**KEY, "Origin": "https://evil.example"})
        check(status == 200 and "Access-Control-Allow-Origin" not in h,
              f"another origin: answered, without CORS fields (the browser hides it) ({h})")
        status, h, _ = srv.http("POST", "/v1/completions", body, headers=KEY)
        check(status == 200 and "Access-Control-Allow-Origin" not in h,
              "no Origin (not a browser): no CORS fields")
        status, h, _ = srv.http("GET", "/v1/models", headers={"Origin": APP})
        check(status == 401 and h.get("Access-Control-Allow-Origin") == APP,
              f"401 for the allowed origin without the key carries its origin ({status}, {h})")
        status, h, _ = srv.http("GET", "/v1/nope", headers={**KEY, "Origin": APP})
        check(status == 404 and h.get("Access-Control-Allow-Origin") == APP,
              f"a 404 carries it too ({status})")
    finally:
        srv.stop()


def no_cors(srv):
    """Without --cors-origin: no CORS fields, OPTIONS routed as before (404)."""
    status, h, _ = srv.http("OPTIONS", "/v1/chat/completions",
                            headers={"Origin": APP, "Access-Control-Request-Method": "POST"})
    check(status == 404 and not any(k.startswith("Access-Control") for k in h),
          f"no --cors-origin: a preflight is a 404 without CORS fields ({status}, {h})")
    status, h, _ = srv.http("GET", "/v1/models", headers={"Origin": APP})
    check(status == 200 and not any(k.startswith("Access-Control") for k in h),
          f"no --cors-origin: a request with an Origin gets no CORS fields ({h})")


def default_parallel(srv):
    """Without --parallel: min(4, 2 x threads, memory), printed at start; /health agrees."""
    lines = [l for l in srv.log.read_text().splitlines() if l.startswith("moex serve: --parallel ")]
    m = re.fullmatch(r"moex serve: --parallel (\d+) \(default: min\(4, 2 x (\d+) threads, "
                     r"[\d.]+ [KMG]iB available / 2 / [\d.]+ [KMG]iB of KV cache per slot = "
                     r"(\d+)\)\)", lines[0]) if len(lines) == 1 else None
    check(m is not None, f"the default --parallel is printed with its reason ({lines})")
    if m:
        n, threads, fit = (int(g) for g in m.groups())
        slots = srv.health()["slots_total"]
        check(threads == len(os.sched_getaffinity(0)) and n == max(1, min(4, 2 * threads, fit))
              and slots == n, f"--parallel {n} = min(4, 2 x {threads}, {fit}); /health: {slots}")


def parse_metrics(text):
    """{(sample name, ((label, value), ...)): value} of a text exposition; with
    prometheus_client, its parser must take the text (the format check)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)', line)
        check(m is not None, f"/metrics: a well-formed sample line ({line!r})")
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        print("skip the prometheus_client parser: not installed (scripts/setup.sh installs it)")
        return out
    parsed = {}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                parsed[(s.name, tuple(sorted(s.labels.items())))] = s.value
    except Exception as e:  # the parser refuses the text
        check(False, f"/metrics: prometheus_client parses the text ({e})")
    check(parsed == out, "/metrics: prometheus_client reads the same samples")
    return out


def metrics(a, d, work):
    """/metrics needs the key; after two requests of 4 tokens each (ignore_eos) and one whose
    client leaves, the counters and histograms moved by what they did; -v logs each."""
    srv = Server(a.moex, d, work, "metrics", "--api-key", "k", "--parallel", "2", "-v")
    try:
        status, _, _ = srv.http("GET", "/metrics")
        check(status == 401, f"/metrics without the key: 401 ({status})")

        def scrape():
            status, h, raw = srv.http("GET", "/metrics", headers=KEY)
            check(status == 200 and h.get("Content-Type", "").startswith(
                "text/plain; version=0.0.4"), f"/metrics: 200 text/plain 0.0.4 ({status}, {h})")
            return parse_metrics(raw.decode())

        before = scrape()
        client = srv.client("k")
        fields = dict(max_tokens=4, temperature=0, extra_body={"ignore_eos": True})
        r1 = client.completions.create(model="m", prompt=[1, 2, 3], **fields)
        chunks = list(client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True}, **fields))
        usages = [r1.usage, chunks[-1].usage]
        sock = socket.create_connection(("127.0.0.1", srv.port))
        req = json.dumps({"prompt": [1, 2], "max_tokens": 3000, "stream": True}).encode()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
                     b"Content-Type: application/json\r\nContent-Length: " +
                     str(len(req)).encode() + b"\r\n\r\n" + req)
        got = b""
        sock.settimeout(30)
        while got.count(b"data: ") < 2:  # two events of text: the stream has begun
            more = sock.recv(4096)
            got += more
            if not more:
                break
        sock.close()
        deadline = time.time() + 15
        while time.time() < deadline:
            after = scrape()
            if (after[("moex_requests_total", (("finish_reason", "cancelled"),))] > 0
                    and after[("moex_slots_busy", ())] == 0):
                break
            time.sleep(0.1)

        def moved(name, labels=()):
            return after.get((name, labels), 0) - before.get((name, labels), 0)
        length = (("finish_reason", "length"),)
        check(moved("moex_requests_total", length) == 2
              and moved("moex_requests_total", (("finish_reason", "cancelled"),)) == 1
              and moved("moex_requests_total", (("finish_reason", "stop"),)) == 0,
              f"requests by finish reason: 2 length, 1 cancelled ({after})")
        prompt = sum(u.prompt_tokens for u in usages) + 2
        check(moved("moex_prompt_tokens_total") == prompt,
              f"prompt tokens: +{prompt} ({moved('moex_prompt_tokens_total')})")
        gen = moved("moex_generation_tokens_total")
        check(8 < gen and all(u.completion_tokens == 4 for u in usages),
              f"generated tokens: 8 and the cancelled one's ({gen})")
        ttft = moved("moex_time_to_first_token_seconds_count")
        itl = moved("moex_inter_token_latency_seconds_count")
        check(ttft == 3 and itl == gen - 3, f"3 first tokens, {gen - 3} gaps ({ttft}, {itl})")
        check(moved("moex_request_duration_seconds_count") == 3, "3 request durations")
        check(0 < moved("moex_time_to_first_token_seconds_sum") <
              moved("moex_request_duration_seconds_sum"), "times are positive seconds")
        check(after[("moex_slots_total", ())] == 2 and after[("moex_slots_busy", ())] == 0
              and after[("moex_requests_queued", ())] == 0,
              "gauges: 2 slots, none busy, none queued")
        inf = after[("moex_inter_token_latency_seconds_bucket", (("le", "+Inf"),))]
        small = after[("moex_inter_token_latency_seconds_bucket", (("le", "0.001"),))]
        check(inf == after[("moex_inter_token_latency_seconds_count", ())] and small <= inf,
              "histogram buckets are cumulative, +Inf = count")
    finally:
        srv.stop()
    log = srv.log.read_text()
    lines = re.findall(r"moex serve: (?:chat)?cmpl-\w+ (?:whole|streamed): prompt \d+ tokens "
                       r"\(\d+ cached\), (\d+) generated, TTFT (?:[\d.]+ s|-), ([\d.]+|-) tok/s, "
                       r"[\d.]+ s, (\w+)", log)
    check([(n, r) for n, _, r in lines if r != "cancelled"] == [("4", "length")] * 2
          and [r for _, _, r in lines].count("cancelled") == 1
          and all(rate != "-" for n, rate, _ in lines if int(n) > 1),
          f"-v: a line per request with tokens, TTFT, tok/s, finish ({lines})")


def default_cache_ram(srv):
    """Without --cache-ram: min(8192 MiB, a quarter of what the slots leave), printed."""
    lines = [l for l in srv.log.read_text().splitlines() if l.startswith("moex serve: --cache-ram ")]
    m = re.fullmatch(r"moex serve: --cache-ram (\d+) MiB \(default: min\(8192 MiB, \([\d.]+ [KMG]iB "
                     r"available - [\d.]+ [KMG]iB of the slots' KV caches\) / 4\)\)",
                     lines[0]) if len(lines) == 1 else None
    check(m is not None and 0 < int(m.group(1)) <= 8192,
          f"the default --cache-ram is printed with its reason ({lines})")


def prompt_cache(a, d, work):
    """--parallel 1 --cache-ram 64: A runs, D takes the slot, then A's next turn (A, its answer
    and more) loads A's prompt and answer from the cache: usage, /metrics and -v say so.
    --cache-ram 0: the same turn runs whole. A bad value is refused naming the flag."""
    r = subprocess.run([a.moex, "serve", "-m", d, "--cache-ram", "-1"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode != 0 and "--cache-ram" in r.stderr,
          f"--cache-ram -1 is refused naming it ({r.returncode}: {r.stderr.strip()})")
    for mib in (64, 0):
        srv = Server(a.moex, d, work, f"cache{mib}", "--parallel", "1", "--cache-ram", str(mib),
                     "-v")
        try:
            client = srv.client()
            fields = dict(max_tokens=4, temperature=0, logprobs=0,
                          extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True})
            first = list(range(100, 140))
            ra = client.completions.create(model="m", prompt=first, **fields)
            answer = [int(t.split(":")[1]) for t in ra.choices[0].logprobs.tokens]
            client.completions.create(model="m", prompt=list(range(300, 340)), **fields)
            nxt = first + answer + list(range(200, 210))
            rb = client.completions.create(model="m", prompt=nxt, **fields)
            cached = rb.usage.prompt_tokens_details.cached_tokens
            # The slot ran the prompt and 3 answer tokens (the 4th was sampled, not run).
            want = len(first) + 3 if mib else 0
            check(cached == want, f"--cache-ram {mib}: the next turn reused {want} tokens ({cached})")
            text = srv.http("GET", "/metrics")[2].decode()
            got = {k: float(v) for k, v in re.findall(r"^(moex_prompt_cache_\w+) (\S+)$", text, re.M)}
            check(got.get("moex_prompt_cache_hits_total") == (1 if mib else 0)
                  and got.get("moex_prompt_cache_hit_tokens_total") == want
                  and got.get("moex_prompt_cache_budget_bytes") == mib * 2**20
                  and (got.get("moex_prompt_cache_entries", 0) >= 2) == bool(mib)
                  and (0 < got.get("moex_prompt_cache_bytes", 0) <= mib * 2**20 or not mib),
                  f"--cache-ram {mib}: /metrics prompt cache series ({got})")
        finally:
            srv.stop()
        check(f"--cache-ram {mib} MiB" in srv.log.read_text(), f"--cache-ram {mib} printed")
        check(f"prompt 54 tokens ({want} cached)" in srv.log.read_text(),
              f"--cache-ram {mib}: -v says {want} cached")


def main():
    a, work, d = setup()
    r = subprocess.run([a.moex, "serve", "-m", d, "--cors-origin", "app.example/"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "--cors-origin" in r.stderr and "app.example/" in r.stderr,
          f"a malformed --cors-origin is refused naming it ({r.returncode}: {r.stderr.strip()})")
    srv = Server(a.moex, d, work, "plain")
    try:
        no_cors(srv)
        default_parallel(srv)
        default_cache_ram(srv)
    finally:
        rc = srv.stop()
    check(rc == 0, f"SIGTERM: exit code 0 (got {rc})")
    cors(a, d, work)
    metrics(a, d, work)
    prompt_cache(a, d, work)
    serve_openai_test.finish("serve ops test")


if __name__ == "__main__":
    main()
