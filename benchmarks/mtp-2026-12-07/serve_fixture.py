# serve --spec mtp on the trained glm4_moe fixture (with a chat template added) against a plain
# server: 6 completions of held-out text at once on 3 slots, greedy, 64 tokens; prints whether
# the texts are equal and the speculation counters of /metrics.
# Usage (from the repository root): serve_fixture.py MOEX FIXTURE_WITH_TEMPLATE_DIR
import sys, json, re, threading
sys.path.insert(0, 'tools')
from pathlib import Path
from serve_openai_test import Server
import tempfile
moex, d = sys.argv[1], Path(sys.argv[2])
work = Path(tempfile.mkdtemp(prefix='moex_serve_fixture'))
text = open(d / 'heldout.txt').read()
prompts = [text[i * 9000: i * 9000 + 800] for i in range(6)]
def run(flags, name):
    srv = Server(moex, d, work, name, "--parallel", "3", *flags)
    try:
        c = srv.client(); out = {}
        def one(i, p):
            r = c.completions.create(model="m", prompt=p, max_tokens=64, temperature=0)
            out[i] = r.choices[0].text
        ts = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(prompts)]
        [t.start() for t in ts]; [t.join() for t in ts]
        _, _, body = srv.http("GET", "/metrics")
        m = {k: float(v) for k, v in re.findall(r"^(moex_spec_decode_\w+) (\S+)$", body.decode(), re.M)}
        return out, m
    finally:
        srv.stop()
plain, _ = run([], "fx-plain")
spec, m = run(["--spec", "mtp"], "fx-mtp")
print("same outputs:", plain == spec, m)
