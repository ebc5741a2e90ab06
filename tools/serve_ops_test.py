#!/usr/bin/env python3
"""End-to-end test of what operating `moex serve` needs, on the tiny checkpoint of
serve_openai_test.py: CORS (--cors-origin: preflights and real requests from allowed and other
origins, none without the flag); the default --parallel (printed with its reason, what /health
says).

usage: serve_ops_test.py --moex BIN --work DIR
"""
import os
import re
import subprocess
import sys
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
    finally:
        rc = srv.stop()
    check(rc == 0, f"SIGTERM: exit code 0 (got {rc})")
    cors(a, d, work)
    if serve_openai_test.failures:
        print(f"serve ops test: {serve_openai_test.failures} check(s) FAILED")
        sys.exit(1)
    print("serve ops test: all checks passed")


if __name__ == "__main__":
    main()
